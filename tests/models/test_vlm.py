"""vlm adapter end to end with tiny randomly initialised LLaVA, Qwen2-VL and
Idefics3 (SmolVLM) models and an offline BPE tokenizer: letter tokens, left
padding, mixed K, option order, embeddings, predict."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import skimage.data
import torch
from PIL import Image

from tests.fixtures import vlm as vlm_fixtures
from vlmrobust.core.errors import VlmrobustError
from vlmrobust.evaluation.predict.spec import BackendOptions, RunSpec
from vlmrobust.models import load_adapter, parse_adapter_name
from vlmrobust.models.backends.base import Prompt
from vlmrobust.models.backends.hf import HfBackend
from vlmrobust.models.vlm import (
    LETTERS,
    VlmAdapter,
    answer_prefix,
    format_question,
    letter_token_ids,
)

KINDS = {
    # kind: (builder, expected letter token strings for A and B)
    "llava": (vlm_fixtures.make_llava, ("ĠA", "ĠB")),
    "qwen2vl": (vlm_fixtures.make_qwen2vl, ("A", "B")),
    "idefics3": (vlm_fixtures.make_idefics3, ("ĠA", "ĠB")),
}


@pytest.fixture(scope="module", params=list(KINDS))
def vlm(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> VlmAdapter:
    builder, _ = KINDS[request.param]
    folder = builder(tmp_path_factory.mktemp(request.param) / "model")
    adapter = load_adapter(f"vlm:{folder}", device="cpu")
    assert isinstance(adapter, VlmAdapter)
    adapter.kind = request.param  # type: ignore[attr-defined]
    return adapter


@pytest.fixture(scope="module")
def rows() -> list[dict[str, Any]]:
    cat = Image.fromarray(skimage.data.chelsea())
    coffee = Image.fromarray(skimage.data.coffee())
    return [
        {"id": "q0", "image": cat, "question": "What is in this image?",
         "options": ["tabby cat", "espresso", "rocket", "goldfish", "cup"]},
        {"id": "q1", "image": coffee, "question": "What?", "options": ["espresso", "cup"]},
        {"id": "q2", "image": cat, "question": "Which object is shown in this picture?",
         "options": ["goldfish", "tabby cat", "rocket"]},
    ]


def reference_letter_logits(vlm: VlmAdapter, row: dict[str, Any]) -> np.ndarray:
    """Straight from transformers: one unpadded forward pass, full-vocab
    log-softmax at the last position, read at the letter tokens looked up by
    their strings."""
    _, (tok_a, _) = KINDS[vlm.kind]  # type: ignore[attr-defined]
    space = tok_a.startswith("Ġ")
    tokens = [("Ġ" if space else "") + chr(ord("A") + i) for i in range(len(row["options"]))]
    ids = vlm.tokenizer.convert_tokens_to_ids(tokens)
    messages = [{"role": "user", "content": [
        {"type": "image"},
        {"type": "text", "text": format_question(row["question"], row["options"])}]}]
    text = vlm.processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    images: Any = [[row["image"]]] if vlm.kind == "idefics3" else [row["image"]]  # type: ignore[attr-defined]
    inputs = vlm.processor(text=[text], images=images, return_tensors="pt")
    with torch.no_grad():
        logits = torch.log_softmax(vlm.model(**inputs).logits[0, -1].float(), dim=-1)
    return logits[ids].numpy()


def test_letter_tokens(vlm: VlmAdapter) -> None:
    _, expected = KINDS[vlm.kind]  # type: ignore[attr-defined]
    ids = vlm.backend.first_token_ids(Prompt("q", image=object()), list(LETTERS))  # type: ignore[attr-defined]
    assert vlm.tokenizer.convert_ids_to_tokens(ids[:2]) == list(expected)
    assert vlm.max_options == 26 and len(set(ids)) == 26
    gen = vlm.backend.generation_prompt()  # type: ignore[attr-defined]
    assert letter_token_ids(vlm.tokenizer, gen) == ids


def test_logits_match_reference_mixed_k(vlm: VlmAdapter, rows: list[dict[str, Any]]) -> None:
    out = vlm.option_logits(rows)
    assert out.shape == (3, 5) and out.dtype == np.float32
    assert np.isnan(out[1, 2:]).all() and np.isnan(out[2, 3:]).all()
    assert np.isfinite(out[0]).all()
    for i, row in enumerate(rows):
        k = len(row["options"])
        np.testing.assert_allclose(out[i, :k], reference_letter_logits(vlm, row),
                                   rtol=1e-4, atol=1e-5)


def test_left_padding_batched_equals_single(vlm: VlmAdapter, rows: list[dict[str, Any]]) -> None:
    assert vlm.tokenizer.padding_side == "left"
    batched = vlm.option_logits(rows)
    for i, row in enumerate(rows):
        single = vlm.option_logits([row])[0]
        k = len(row["options"])
        np.testing.assert_allclose(batched[i, :k], single[:k], rtol=1e-4, atol=1e-5)


def test_option_order(vlm: VlmAdapter, rows: list[dict[str, Any]]) -> None:
    """Logits come back in the row's option order: option j is lettered chr(65+j)
    in the prompt and gets that letter's logit."""
    row = rows[0]
    perm = [4, 2, 0, 1, 3]
    permuted = dict(row, options=[row["options"][p] for p in perm])
    prompt = vlm.prompt_for(permuted)
    assert "A. cup\nB. rocket\nC. tabby cat" in prompt
    np.testing.assert_allclose(vlm.option_logits([permuted])[0],
                               reference_letter_logits(vlm, permuted), rtol=1e-4, atol=1e-5)


def test_embed_images(vlm: VlmAdapter, rows: list[dict[str, Any]]) -> None:
    emb = vlm.embed_images([rows[0]["image"], rows[1]["image"]])
    assert emb.ndim == 2 and emb.shape[0] == 2 and emb.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(emb, axis=1), 1.0, rtol=1e-5)
    assert not np.allclose(emb[0], emb[1])


def test_answer_prefix_rule() -> None:
    assert answer_prefix("<|im_start|>assistant\n") == ""
    assert answer_prefix(" ASSISTANT:") == " "
    assert answer_prefix("[/INST]") == " "


def test_letter_tokens_missing_is_an_error() -> None:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(["x"], trainers.BpeTrainer(
        vocab_size=10, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False))
    fast = PreTrainedTokenizerFast(tokenizer_object=tok)
    # no 'ĠA' merge: ' A' is two tokens
    with pytest.raises(VlmrobustError, match="no distinct single tokens"):
        letter_token_ids(fast, "ASSISTANT:")
    assert fast.convert_ids_to_tokens(letter_token_ids(fast, "assistant\n", 3)) == ["A", "B", "C"]


def test_format_question_limits() -> None:
    with pytest.raises(VlmrobustError, match="at most 26"):
        format_question("q", [str(i) for i in range(27)])


def test_bad_names(tmp_path: Path) -> None:
    with pytest.raises(VlmrobustError, match=r"config\.json not found"):
        parse_adapter_name(f"vlm:{tmp_path}")
    with pytest.raises(VlmrobustError, match="neither a model folder nor a hub id"):
        parse_adapter_name("vlm:./no/such/model")
    assert parse_adapter_name("vlm:llava-hf/llava-1.5-7b-hf").max_options == 26


def test_predict_with_vlm(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    from tests.fixtures.predict import write_mcq
    from vlmrobust.evaluation.predict.dataset import predict_dataset

    folder = vlm_fixtures.make_qwen2vl(tmp_path / "model")
    ds = write_mcq(tmp_path / "ds", {"default": 5}, with_class_ids=False)
    out = predict_dataset(RunSpec(
        f"vlm:{folder}", ds, tmp_path / "p" / "predictions.parquet", progress=False,
        backend=BackendOptions(batch_size=3, device="cpu")))
    table = pq.read_table(out).to_pylist()
    assert [len(r["logits"]) for r in table] == [2, 3, 4, 5, 2]
    assert all(np.isfinite(r["logits"]).all() for r in table)
    from vlmrobust.evaluation.predictions.meta import read_prediction_meta

    meta = read_prediction_meta(out)
    assert meta["family"] == "vlm" and meta["prompt_id"] == "mcq-letter"
    assert meta["vision_encoder"] == "qwen2_vl_vision"


def test_remote_code_model_loads_only_when_trusted(tmp_path: Path) -> None:
    folder = vlm_fixtures.make_remote_code_vlm(tmp_path / "remote" / "model")
    with pytest.raises(VlmrobustError, match="--trust-remote-code"):
        load_adapter(f"vlm:{folder}", device="cpu")
    adapter = load_adapter(f"vlm:{folder}", device="cpu", trust_remote_code=True)
    assert isinstance(adapter, VlmAdapter)
    # the class came from the model folder's own code, and that code ran
    cls = type(adapter.model)
    assert cls.__name__ == "TinyRemoteVlmForConditionalGeneration"
    assert cls.__module__.startswith("transformers_modules")
    rows = [{"id": "a", "image": Image.fromarray(skimage.data.astronaut()),
             "question": "What is shown?", "options": ["cat", "person", "rocket"]}]
    logits = adapter.option_logits(rows)
    assert logits.shape == (1, 3) and np.isfinite(logits).all()
    # the same weights through plain LLaVA code give 1/3 of the remote code's logits
    from transformers import LlavaForConditionalGeneration

    plain = LlavaForConditionalGeneration.from_pretrained(folder).eval()
    ref = VlmAdapter("plain", HfBackend("plain", plain, adapter.processor, torch.device("cpu")))
    # log-probs: the scale shows in the differences between options
    centred = logits - logits.mean(axis=1, keepdims=True)
    ref_logits = ref.option_logits(rows)
    np.testing.assert_allclose(centred, 3.0 * (ref_logits - ref_logits.mean(axis=1, keepdims=True)),
                               rtol=1e-4, atol=1e-4)
