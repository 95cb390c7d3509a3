"""Recognise-then-answer pipeline: real EfficientNet-Lite0 + real MiniLM."""

from __future__ import annotations

import numpy as np
import pytest
import skimage.data
from PIL import Image

from vlmrobust.core.errors import VlmrobustError
from vlmrobust.models import load_adapter, parse_adapter_name


@pytest.fixture(scope="module")
def pipeline():  # type: ignore[no-untyped-def]
    return load_adapter("pipeline:efficientnet-lite0+minilm", device="cpu")


def _rows() -> list[dict]:
    cat = Image.fromarray(skimage.data.chelsea())
    coffee = Image.fromarray(skimage.data.coffee())
    q = "Which category does this object belong to?"
    return [
        {"id": "a", "image": cat, "question": q,
         "options": ["feline", "beverage", "vehicle", "building"]},
        {"id": "b", "image": coffee, "question": q,
         "options": ["feline", "beverage", "vehicle", "building"]},
        {"id": "c", "image": cat, "question": 'Complete the sentence: "This object is a ___."',
         "options": ["cat", "car", "cup"]},
    ]


def test_recognition_drives_the_answer(pipeline) -> None:  # type: ignore[no-untyped-def]
    rows = _rows()
    names = pipeline.recognise([r["image"] for r in rows])
    assert "cat" in names[0].lower() and "espresso" in names[1].lower()
    logits = pipeline.option_logits(rows)
    assert logits.shape == (3, 4)
    assert np.isnan(logits[2, 3]) and np.isfinite(logits[:2]).all()  # mixed K
    # same question, same options: the recognised object decides
    assert int(np.argmax(logits[0])) == 0  # the cat -> feline
    assert int(np.argmax(logits[1])) == 1  # the espresso -> beverage
    assert int(np.nanargmax(logits[2])) == 0  # cloze: "tabby is a cat"


def test_permuting_options_permutes_logits(pipeline) -> None:  # type: ignore[no-untyped-def]
    row = _rows()[0]
    perm = [2, 0, 3, 1]
    base = pipeline.option_logits([row])[0]
    permuted = pipeline.option_logits([{**row, "options": [row["options"][i] for i in perm]}])[0]
    np.testing.assert_allclose(permuted, base[perm], rtol=1e-5, atol=1e-5)


def test_bad_names_fail_before_loading() -> None:
    with pytest.raises(VlmrobustError, match="did you mean 'minilm'"):
        parse_adapter_name("pipeline:efficientnet-lite0+minlm")
    with pytest.raises(VlmrobustError, match="did you mean 'efficientnet-lite2'"):
        parse_adapter_name("pipeline:efficientnet-lite9+minilm")
    with pytest.raises(VlmrobustError, match="CLASSIFIER\\+ANSWERER"):
        parse_adapter_name("pipeline:efficientnet-lite0")
    assert parse_adapter_name("pipeline:efficientnet-lite0+minilm").family == "other"
