"""The generating readers (generate, open-world) on tiny random Qwen2-VL and
LLaVA models: greedy texts equal transformers' own unbatched greedy decoding of
the recorded prompt text, stop strings cut, the answer cue's letter log-probs
equal one forward of prompt + output + cue, and the matcher decides."""

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
from vlmrobust.core.text.matcher import match_option
from vlmrobust.models import load_adapter
from vlmrobust.models.readers import ReadOptions
from vlmrobust.models.readers.generate import open_world_prediction
from vlmrobust.models.vlm import VlmAdapter

BUILDERS = {"qwen2vl": vlm_fixtures.make_qwen2vl, "llava": vlm_fixtures.make_llava}
N_NEW = 5


@pytest.fixture(scope="module", params=list(BUILDERS))
def model_dir(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
              ) -> tuple[str, Path]:
    return request.param, BUILDERS[request.param](tmp_path_factory.mktemp(request.param) / "m")


@pytest.fixture(scope="module")
def rows() -> list[dict[str, Any]]:
    cat = Image.fromarray(skimage.data.chelsea())
    coffee = Image.fromarray(skimage.data.coffee())
    return [
        {"id": "q0", "image": cat, "question": "What is in this image?",
         "options": ["tabby cat", "espresso", "rocket"], "answer": 0},
        {"id": "q1", "image": coffee, "question": "What is this?", "options": ["espresso", "cup"],
         "answer": 0},
    ]


def _adapter(folder: Path, mode: str, **opts: Any) -> VlmAdapter:
    a = load_adapter(f"vlm:{folder}", device="cpu", mode=mode,
                     read_options=ReadOptions(**opts))
    assert isinstance(a, VlmAdapter)
    return a


def greedy(a: VlmAdapter, prompt_text: str, image: Any, n: int) -> str:
    """transformers' own greedy decoding of one unpadded prompt."""
    inputs = a.processor(text=[prompt_text], images=[image], return_tensors="pt")
    with torch.no_grad():
        seq = a.model.generate(**inputs, max_new_tokens=n, do_sample=False,
                               pad_token_id=a.tokenizer.pad_token_id)
    text: str = a.tokenizer.decode(seq[0, inputs["input_ids"].shape[1]:],
                                   skip_special_tokens=True)
    return text


def test_generate_equals_unbatched_greedy_and_matcher_decides(
        model_dir: tuple[str, Path], rows: list[dict[str, Any]]) -> None:
    _, folder = model_dir
    a = _adapter(folder, "generate", max_new_tokens=N_NEW)
    assert a.reader.has_logits is False and a.reader.decides
    readings = a.read(rows)
    for row, r in zip(rows, readings, strict=True):
        assert r.prompt_text == a.prompt_for(row) and "A. " in r.prompt_text
        assert r.text == greedy(a, r.prompt_text, row["image"], N_NEW)
        assert r.logits is None
        assert r.prediction == match_option(r.text or "", row["options"])
    with pytest.raises(VlmrobustError, match="gives no option logits"):
        a.option_logits(rows)


def test_stop_strings_cut_the_output(model_dir: tuple[str, Path],
                                     rows: list[dict[str, Any]]) -> None:
    _, folder = model_dir
    free = _adapter(folder, "generate", max_new_tokens=N_NEW).read(rows[:1])[0].text or ""
    stop = free.strip()[1:3]
    assert stop and stop in free
    cut = _adapter(folder, "generate", max_new_tokens=N_NEW, stop=(stop,)).read(rows[:1])[0]
    assert cut.text == free[: free.index(stop)]


def test_answer_cue_reads_the_letters_after_the_output(model_dir: tuple[str, Path],
                                                       rows: list[dict[str, Any]]) -> None:
    _, folder = model_dir
    cue = "\nAnswer:"
    a = _adapter(folder, "generate", max_new_tokens=N_NEW, answer_cue=cue)
    assert a.reader.has_logits
    readings = a.read(rows)
    letter = "Ġ{}"  # after a cue ending in a visible character the answer is " A"
    for row, r in zip(rows, readings, strict=True):
        assert r.text is not None and r.logits is not None
        text = r.prompt_text + r.text + cue
        inputs = a.processor(text=[text], images=[row["image"]], return_tensors="pt")
        with torch.no_grad():
            lp = torch.log_softmax(a.model(**inputs).logits[0, -1].float(), dim=-1)
        ids = a.tokenizer.convert_tokens_to_ids(
            [letter.format(c) for c in "ABC"[: len(row["options"])]])
        np.testing.assert_allclose(r.logits, lp[ids].numpy(), rtol=0, atol=1e-4)


def test_open_world_asks_without_options(model_dir: tuple[str, Path],
                                         rows: list[dict[str, Any]]) -> None:
    _, folder = model_dir
    a = _adapter(folder, "open-world", max_new_tokens=N_NEW)
    readings = a.read(rows)
    for row, r in zip(rows, readings, strict=True):
        assert "A. " not in r.prompt_text and row["question"] in r.prompt_text
        assert r.text == greedy(a, r.prompt_text, row["image"], N_NEW)
        assert r.prediction == open_world_prediction(r.text or "", row, "row")
    with pytest.raises(VlmrobustError, match="needs the row's 'answer'") as exc:
        a.read([{k: v for k, v in rows[0].items() if k != "answer"}])
    assert "\n" not in str(exc.value)


@pytest.mark.parametrize(("text", "expected"), [
    ("A tabby cat on a sofa.", 0),          # the true class
    ("Two tabby cats.", 0),                 # plural
    ("an espresso", None),                  # a distractor: wrong, counted as no answer
    ("a tabby cat next to an espresso", 0),  # the true class named: success (seed 002)
    ("a dog", None),
])
def test_open_world_rule(text: str, expected: int | None) -> None:
    row = {"options": ["tabby cat", "espresso", "rocket"], "answer": 0}
    assert open_world_prediction(text, row, "row") == expected


def test_open_world_synonyms_from_class_ids() -> None:
    # ImageNet 1 is goldfish (Carassius auratus), 2 great white shark
    row = {"options": ["goldfish", "great white shark"], "answer": 1,
           "option_class_ids": [1, 2]}
    assert open_world_prediction("a man-eater in the sea", row, "row") == 1
    assert open_world_prediction("Carassius auratus", row, "row") is None
    row["answer"] = 0
    assert open_world_prediction("Carassius auratus", row, "row") == 0


def test_generating_flags_refused_for_other_modes() -> None:
    from vlmrobust.models.readers import parse_mode

    with pytest.raises(VlmrobustError, match="apply to --mode generate"):
        parse_mode("letter", ReadOptions(max_new_tokens=3))
    with pytest.raises(VlmrobustError, match="open-world asks without options"):
        parse_mode("open-world", ReadOptions(answer_cue="Answer:"))
    with pytest.raises(VlmrobustError, match="max-new-tokens"):
        ReadOptions(max_new_tokens=0)
