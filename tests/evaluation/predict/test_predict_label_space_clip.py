"""CLIP over a whole label space (issue 23 item 3): logits = logit_scale·cos to
each class's text embedding, computed by hand from a tiny random open_clip."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.fixtures.clip import make_open_clip
from tests.fixtures.label_space import photos, write_classification
from vlmrobust.core.label_space import ClassEntry, LabelSpace
from vlmrobust.evaluation.predict.dataset import predict_dataset
from vlmrobust.evaluation.predict.spec import BackendOptions, ReaderOptions, RunSpec
from vlmrobust.evaluation.predictions.meta import read_prediction_meta
from vlmrobust.evaluation.predictions.read import read_predictions
from vlmrobust.models.prompt_tables import OPENAI_IMAGENET_TEMPLATES

SPACE = LabelSpace("toy", (ClassEntry("tabby cat"), ClassEntry("espresso"),
                           ClassEntry("astronaut"), ClassEntry("rocket")))


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_open_clip(tmp_path_factory.mktemp("tiny_clip_ls"), seed=1, logit_scale=37.0)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ims = photos()
    rows = {"full": [{"id": f"f{i}", "image": im, "label": i} for i, im in enumerate(ims)],
            "k2": [{"id": f"k{i}", "image": im, "label": i, "candidates": [(i + 1) % 4, i]}
                   for i, im in enumerate(ims)]}
    return write_classification(tmp_path_factory.mktemp("ds") / "ds",
                                {"full": SPACE, "k2": SPACE}, rows)


def _by_hand(folder: Path, templates: list[str]) -> np.ndarray:
    """s·cos(image, mean-of-templates class embedding), straight from open_clip."""
    import open_clip

    model, _, preprocess = open_clip.create_model_and_transforms(
        f"local-dir:{folder}", device="cpu")
    model.eval()
    tok = open_clip.get_tokenizer(f"local-dir:{folder}")
    with torch.no_grad():
        img = model.encode_image(torch.stack([preprocess(im.convert("RGB")) for im in photos()]))
        img = img / img.norm(dim=-1, keepdim=True)
        cls = []
        for name in SPACE.names:
            t = model.encode_text(tok([tpl.format(option=name) for tpl in templates]))
            t = (t / t.norm(dim=-1, keepdim=True)).mean(dim=0)
            cls.append(t / t.norm())
        text = torch.stack(cls)
        return (model.logit_scale.exp() * img @ text.T).numpy()


@pytest.mark.parametrize("prompt", [None, "openai-80"])
def test_clip_logits_over_the_label_space_equal_a_hand_computation(
        tiny_dir: Path, dataset: Path, tmp_path: Path, prompt: str | None) -> None:
    out = predict_dataset(RunSpec(
        f"clip:local-dir:{tiny_dir}", dataset, tmp_path / "p.parquet", progress=False,
        reader=ReaderOptions(prompt=prompt), backend=BackendOptions(device="cpu", threads=1)))
    pf = read_predictions(out)
    assert pf.logits_len is not None and pf.logits_flat is not None
    assert pf.logits_len.tolist() == [4] * 4 + [2] * 4
    templates = ["a photo of a {option}."] if prompt is None else list(OPENAI_IMAGENET_TEMPLATES)
    want = _by_hand(tiny_dir, templates)
    full = pf.logits_flat[:16].reshape(4, 4)
    np.testing.assert_allclose(full, want, rtol=1e-4, atol=1e-4)
    k2 = pf.logits_flat[16:].reshape(4, 2)
    np.testing.assert_allclose(k2, [[want[i, (i + 1) % 4], want[i, i]] for i in range(4)],
                               rtol=1e-4, atol=1e-4)
    meta = read_prediction_meta(out)
    assert meta["logit_scale"] == pytest.approx(37.0, rel=1e-6)
    assert meta["prompt_id"] == ("photo-period" if prompt is None else "openai-80")
    assert meta["kind"] == "classification" and meta["mode"] == "embedding"


def test_openai_80_is_the_published_table() -> None:
    """The copy equals clip-benchmark's imagenet1k templates, order kept."""
    import importlib.resources

    src = importlib.resources.files("clip_benchmark") / "datasets" / \
        "en_zeroshot_classification_templates.json"
    table = json.loads(src.read_text(encoding="utf-8"))["imagenet1k"]
    assert len(OPENAI_IMAGENET_TEMPLATES) == 80 == len(set(OPENAI_IMAGENET_TEMPLATES))
    assert [t.replace("{option}", "{c}") for t in OPENAI_IMAGENET_TEMPLATES] == table


@pytest.fixture(scope="module")
def hf_clip_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random transformers CLIPModel with an offline BPE tokenizer that
    ends every text with its EOS token (CLIP pools the text at EOS)."""
    from tokenizers.processors import TemplateProcessing
    from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel

    from tests.fixtures.vlm import make_tokenizer

    tok = make_tokenizer()
    eos = tok.convert_tokens_to_ids("</s>")
    tok._tokenizer.post_processor = TemplateProcessing(single="$A </s>",
                                                       special_tokens=[("</s>", eos)])
    cfg = CLIPConfig(
        text_config={"vocab_size": len(tok), "hidden_size": 32, "intermediate_size": 64,
                     "num_hidden_layers": 1, "num_attention_heads": 2,
                     "max_position_embeddings": 64, "eos_token_id": eos,
                     "pad_token_id": tok.pad_token_id, "bos_token_id": tok.bos_token_id},
        vision_config={"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1,
                       "num_attention_heads": 2, "image_size": 32, "patch_size": 16},
        projection_dim=16, logit_scale_init_value=float(np.log(23.0)))
    with torch.random.fork_rng():
        torch.manual_seed(2)
        model = CLIPModel(cfg).eval()
    folder = tmp_path_factory.mktemp("hf_clip") / "m"
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    CLIPImageProcessor(size={"shortest_edge": 32},
                       crop_size={"height": 32, "width": 32}).save_pretrained(folder)
    return folder


def test_transformers_clip_equals_its_own_forward(hf_clip_dir: Path, dataset: Path,
                                                  tmp_path: Path) -> None:
    """clip:hf: over the label space gives CLIPModel's own logits_per_image for
    "a photo of a <class>." (its forward normalises and scales itself)."""
    from transformers import AutoImageProcessor, AutoTokenizer, CLIPModel

    out = predict_dataset(RunSpec(
        f"clip:hf:{hf_clip_dir}", dataset, tmp_path / "p.parquet", progress=False, configs="full",
        backend=BackendOptions(device="cpu", threads=1)))
    pf = read_predictions(out)
    assert pf.logits_flat is not None
    model = CLIPModel.from_pretrained(hf_clip_dir).eval()
    tok = AutoTokenizer.from_pretrained(hf_clip_dir)
    proc = AutoImageProcessor.from_pretrained(hf_clip_dir)
    text = tok([f"a photo of a {n}." for n in SPACE.names], padding=True, return_tensors="pt")
    pixels = proc(images=[im.convert("RGB") for im in photos()], return_tensors="pt")
    with torch.no_grad():
        want = model(input_ids=text["input_ids"], attention_mask=text["attention_mask"],
                     pixel_values=pixels["pixel_values"]).logits_per_image.numpy()
    np.testing.assert_allclose(pf.logits_flat.reshape(4, 4), want, rtol=1e-4, atol=1e-4)
    assert read_prediction_meta(out)["logit_scale"] == pytest.approx(23.0, rel=1e-5)
