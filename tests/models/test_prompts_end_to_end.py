"""Done-when: each of the seed's five prompts runs through the classifier, clip and
vlm adapters (tiny models; the classifier is the shipped EfficientNet-Lite0), is
recorded in the predictions' metadata, ends in scores and on the leaderboard."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.fixtures import vlm as vlm_fixtures
from tests.fixtures.clip import make_open_clip
from tests.fixtures.predict import (
    CUP,
    ESPRESSO,
    GOLDFISH,
    ROCKET,
    TABBY,
    TIGER_CAT,
    mcq_features,
    png,
)
from vlmrobust.evaluation.predict.spec import BackendOptions, ReaderOptions, RunSpec
from vlmrobust.leaderboard.site.downloads import as_records
from vlmrobust.models.prompts import SEED_PROMPT_IDS, SEED_PROMPTS, resolve_prompt

pytest.importorskip("open_clip")
pytest.importorskip("transformers")

TINY_CLIP = {
    "embed_dim": 32,
    "vision_cfg": {"image_size": 32, "layers": 1, "width": 32, "patch_size": 16,
                   "head_width": 16},
    "text_cfg": {"context_length": 32, "vocab_size": 49408, "width": 32, "heads": 2,
                 "layers": 1},
}
NAMES = {TABBY: "tabby", TIGER_CAT: "tiger cat", ESPRESSO: "espresso", CUP: "cup",
         GOLDFISH: "goldfish", ROCKET: "space shuttle"}


def _rows(variant: str, n: int) -> list[dict[str, Any]]:
    import datasets  # noqa: F401  (features below)
    import skimage.data

    cat, coffee = png(skimage.data.chelsea()), png(skimage.data.coffee())
    if variant == "shift":  # a colour-inverted rendition
        cat, coffee = png(255 - skimage.data.chelsea()), png(255 - skimage.data.coffee())
    classes = [TABBY, ESPRESSO, GOLDFISH, ROCKET, CUP]
    rows = []
    for i in range(n):
        img, label = (cat, TABBY) if i % 2 == 0 else (coffee, ESPRESSO)
        others = [c for c in classes if c != label][:4]
        answer = i % 5
        ids = [*others[:answer], label, *others[answer:]]
        rows.append({"id": f"{variant}-wordnet-{i}", "image": {"bytes": img, "path": None},
                     "question": "What is in this image?",
                     "options": [NAMES[c] for c in ids], "answer": answer,
                     "option_class_ids": ids, "variant": variant, "distractors": "wordnet"})
    return rows


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import datasets

    from vlmrobust.core.writer import BuildInfo, write_dataset

    feats = dict(mcq_features(with_class_ids=True))
    feats["variant"] = datasets.Value("string")
    feats["distractors"] = datasets.Value("string")
    out = tmp_path_factory.mktemp("p5") / "imagenet-mcq"
    write_dataset(out, configs={"ref-wordnet": _rows("ref", 4), "shift-wordnet": _rows("shift", 4)},
                  features=datasets.Features(feats), card="tiny", rows_per_shard=8,
                  info=BuildInfo("imagenet-mcq", "0.0.1", seed=0, sample=True,
                                 extra={"reference_variant": "ref"}))
    return out


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("p5models")
    clip_dir = make_open_clip(root / "clip", seed=0, cfg=TINY_CLIP)
    vlm_dir = vlm_fixtures.make_llava(root / "llava")
    return {"classifier": "classifier:efficientnet-lite0", "clip": f"clip:local-dir:{clip_dir}",
            "vlm": f"vlm:{vlm_dir}"}


def test_registry_has_the_seed_wording() -> None:
    assert SEED_PROMPT_IDS == ("photo-of", "class-name", "what-type", "select-label",
                               "identify")
    assert [SEED_PROMPTS[p].text for p in SEED_PROMPT_IDS] == [
        "A photo of a {class}", "{class}", "What type of object is in this photo?",
        "Select the most appropriate label for the object shown in the image.",
        "Identify the object in this image."]
    from vlmrobust.builders.imagenet_mcq.prompts import PROMPTS as BUILDER_PROMPTS

    assert dict(BUILDER_PROMPTS) == {p: SEED_PROMPTS[p].text for p in SEED_PROMPT_IDS}
    assert resolve_prompt("class-name") == ("class-name", ("{option}",))


def test_five_prompts_three_families_to_scores_and_leaderboard(
        tmp_path: Path, dataset: Path, models: dict[str, str]) -> None:
    from vlmrobust.evaluation.predict.dataset import predict_dataset
    from vlmrobust.evaluation.predictions.meta import read_prediction_meta
    from vlmrobust.evaluation.submissions import add_submission
    from vlmrobust.leaderboard.aggregate import aggregate
    from vlmrobust.leaderboard.load import load_submissions
    from vlmrobust.leaderboard.site.render import render_site
    from vlmrobust.leaderboard.trust.baselines import BaselineSpec
    from vlmrobust.models import load_adapter

    subs = tmp_path / "submissions"
    logits: dict[tuple[str, str], Any] = {}
    for family, name in models.items():
        for prompt in SEED_PROMPT_IDS:
            adapter = load_adapter(name, device="cpu", prompt=prompt)
            assert adapter.prompt_id == prompt  # type: ignore[attr-defined]
            out = tmp_path / "pred" / family / prompt / "predictions.parquet"
            # one thread: the default follows the machine's load, and logits round
            # differently between thread counts (the classifier check below is exact)
            predict_dataset(RunSpec(
                adapter, dataset, out, progress=False, reader=ReaderOptions(prompt=prompt),
                backend=BackendOptions(batch_size=8, threads=1)))
            meta = read_prediction_meta(out)  # travels inside the parquet file
            assert meta["prompt_id"] == prompt and meta["family"] == family
            import pyarrow.parquet as pq

            logits[(family, prompt)] = np.array(pq.read_table(out).column("logits").to_pylist())
            scores = add_submission(subs, f"{family}-{prompt}", dataset, out)
            cfgs = scores["datasets"]["imagenet-mcq"]["configs"]
            assert set(cfgs) == {"ref-wordnet", "shift-wordnet"}
            assert all(0.0 <= c["accuracy"] <= 1.0 and c["n"] == 4 for c in cfgs.values())
    # The text reaches clip and vlm: each prompt gives different logits; the
    # classifier reads no text, so its logits are the same under every prompt.
    for family in ("clip", "vlm"):
        distinct = {logits[(family, p)].round(5).tobytes() for p in SEED_PROMPT_IDS}
        assert len(distinct) == 5, family
    assert all(np.array_equal(logits[("classifier", p)], logits[("classifier", "photo-of")])
               for p in SEED_PROMPT_IDS)
    lb = aggregate(load_submissions(subs), BaselineSpec(version="t", n_bootstrap=50,
                                                        reference_family="classifier"))
    assert {(r.family, r.prompt_id) for r in lb.rows} == {
        (f, p) for f in models for p in SEED_PROMPT_IDS}
    prompt_lines = {f.label for f in lb.fits if f.kind == "prompt"}
    assert prompt_lines == {f"{f} · {p}" for f in models for p in SEED_PROMPT_IDS}
    files = render_site(lb)
    table = json.loads(files["leaderboard.json"])
    assert sorted((r["family"], r["prompt_id"]) for r in as_records(table)) == sorted(
        (f, p) for f in models for p in SEED_PROMPT_IDS)
    assert all(r["headline_er"]["strategy"] == "wordnet" for r in as_records(table))
    assert "vlm prompts" in files["robustness.html"].decode()


def test_vlm_turn_under_each_prompt(models: dict[str, str]) -> None:
    from vlmrobust.models import load_adapter

    row = {"question": "What is in this image?", "options": ["tabby", "cup"]}
    texts = {p: load_adapter(models["vlm"], device="cpu", prompt=p).prompt_for(row)  # type: ignore[attr-defined]
             for p in SEED_PROMPT_IDS}
    assert "A. A photo of a tabby" in texts["photo-of"]
    assert "A. tabby" in texts["class-name"] and "B. cup" in texts["class-name"]
    assert "Identify the object in this image.\nA. tabby" in texts["identify"]
    assert "Select the most appropriate label" in texts["select-label"]
    assert "What type of object is in this photo?\nA. tabby" in texts["what-type"]
    assert len(set(texts.values())) == 5
