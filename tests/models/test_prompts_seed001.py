"""Seed 001's prompts (issue 33 item 12, second and third bullets):

- §X-B's CLIP prompt sets by name: a single prompt ("a photo of a {label}"),
  the five of [15] (MCM), a set of 30 (not published: a stated stand-in) and the
  default 80 of [1] (OpenAI), checked against open_clip's own template list;
- §IX's LLaVA ImageNet-D prompt as a registered label-space prompt, the
  default when a vlm letters ImageNet-D's K-option configs."""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.fixtures import vlm as vlm_fixtures
from tests.fixtures.label_space import photos, write_classification
from vlmrobust.core.errors import VlmrobustError
from vlmrobust.core.label_space import ClassEntry, LabelSpace
from vlmrobust.evaluation.predict.spec import BackendOptions, ReaderOptions, RunSpec
from vlmrobust.models.label_space_prompts import (
    LABEL_SPACE_PROMPTS,
    default_label_space_prompt,
    resolve_label_space_prompt,
    resolve_vlm_prompt,
)
from vlmrobust.models.prompt_tables import SEED001_DEFAULT_PROMPT_SET, SEED001_PROMPT_SETS
from vlmrobust.models.prompts import PROMPTS, all_prompts, resolve_prompt
from vlmrobust.models.readers.base import format_question

# seed 001 §IX, as printed (its options "A.[Ground truth class]" are lettered "A. <class>" here)
LLAVA_LINES = ["What is the main object in this image? Choose from the following list:",
               "A. banana", "B. chair", "C. mug", "D. backpack",
               "Please answer the question using the choice from the list."]


def _openai_80() -> list[str]:
    meta = pytest.importorskip("open_clip.zero_shot_metadata")
    return [t("{option}") for t in meta.OPENAI_IMAGENET_TEMPLATES]


def test_the_four_prompt_sets_are_selectable_by_name_with_their_sizes() -> None:
    openai = _openai_80()
    assert {k: len(resolve_prompt(k)[1]) for k in SEED001_PROMPT_SETS} == SEED001_PROMPT_SETS
    assert resolve_prompt("single") == ("single", ("a photo of a {option}",))
    assert list(PROMPTS["openai-80"]) == openai and SEED001_DEFAULT_PROMPT_SET == "openai-80"
    assert list(PROMPTS["openai-30"]) == openai[:30]
    assert PROMPTS["mcm-5"] == ("a photo of a {option}.", "a blurry photo of a {option}.",
                                "a photo of many {option}.", "a photo of the large {option}.",
                                "a photo of the small {option}.")
    assert set(PROMPTS["mcm-5"]) < set(openai)
    described = all_prompts()
    assert "stand-in" in described["openai-30"] and "(MCM)" in described["mcm-5"]
    assert "seed 001's default" in described["openai-80"]


def test_vlmrobust_prompts_names_the_sets(capsys: pytest.CaptureFixture[str]) -> None:
    from vlmrobust.cli.main import main

    assert main(["prompts"]) == 0
    out = capsys.readouterr().out
    assert "[seed 001's default (§X-B: the default prompt set of [1])]" in out
    assert "stand-in: the first 30 of OpenAI's 80]" in out
    assert re.search(r"llava-imagenet-d +What is the main object in this image\?", out)


def test_the_clip_adapter_ensembles_a_named_set(tmp_path: Path) -> None:
    from tests.fixtures.clip import make_open_clip
    from vlmrobust.models import load_adapter

    folder = make_open_clip(tmp_path / "clip", seed=3)
    adapter = load_adapter(f"clip:local-dir:{folder}", device="cpu", prompt="mcm-5")
    assert adapter.prompt_id == "mcm-5" and adapter.templates == PROMPTS["mcm-5"]


def test_the_llava_imagenet_d_prompt_renders_the_seeds_wording() -> None:
    entry = LABEL_SPACE_PROMPTS["llava-imagenet-d"]
    names = ["banana", "chair", "mug", "backpack"]
    # the label-space letter reader: the entry's question, its classes, its instruction
    assert format_question(entry.question, entry.answers(names), entry.letter_instruction) \
        .split("\n") == LLAVA_LINES
    # the same wording asked of an MCQ row's options (--prompt llava-imagenet-d)
    assert resolve_vlm_prompt("llava-imagenet-d") == "llava-imagenet-d"
    assert format_question("Which?", names, "llava-imagenet-d").split("\n") == LLAVA_LINES


def test_it_is_the_default_where_the_seed_uses_it_and_letter_only() -> None:
    d_configs = ["imagenet-d-background-4opt", "imagenet-d-texture-4opt"]
    assert default_label_space_prompt("letter", d_configs) == "llava-imagenet-d"
    assert resolve_label_space_prompt(None, "letter", d_configs) == "llava-imagenet-d"
    assert resolve_label_space_prompt(None, "letter", ["flowers102-k5"]) == "what-type"
    assert resolve_label_space_prompt(None, "letter", [*d_configs, "imagenet-d-texture"]) == \
        "what-type"
    assert resolve_label_space_prompt(None, "generate", d_configs) == "what-type"
    with pytest.raises(VlmrobustError, match="only --mode letter"):
        resolve_label_space_prompt("llava-imagenet-d", "generate")


def test_predict_asks_a_vlm_on_imagenet_d_options_by_the_llava_prompt(tmp_path: Path) -> None:
    from vlmrobust.evaluation.predict.dataset import predict_dataset
    from vlmrobust.evaluation.predictions.meta import read_prediction_meta

    space = LabelSpace("imagenet-d", tuple(ClassEntry(n) for n in
                                           ("backpack", "banana", "chair", "mug", "toaster")))
    orders = ([1, 2, 3, 0], [0, 3, 2, 1])  # banana chair mug backpack, and reversed
    rows = [{"id": f"d{i}", "image": im, "label": orders[i % 2][0], "candidates": orders[i % 2]}
            for i, im in enumerate(photos())]
    ds = write_classification(tmp_path / "ds", {"imagenet-d-texture-4opt": space},
                              {"imagenet-d-texture-4opt": rows})
    llava = vlm_fixtures.make_llava(tmp_path / "llava")
    out = predict_dataset(RunSpec(
        f"vlm:{llava}", ds, tmp_path / "p.parquet", progress=False,
        reader=ReaderOptions(mode="letter"), backend=BackendOptions(device="cpu", threads=1)))
    assert read_prediction_meta(out)["prompt_id"] == "llava-imagenet-d"
    texts = [r["prompt_text"] for r in pq.read_table(out).to_pylist()]
    assert all(LLAVA_LINES[0] in t and LLAVA_LINES[-1] in t for t in texts)
    assert "A. banana\nB. chair\nC. mug\nD. backpack" in texts[0]
