"""The ``moondream`` adapter family on a tiny stand-in of MoonDream2's code path
(tests/fixtures/moondream.py): remote code registered as a causal LM only, no
processor, answers from ``query()`` read by the project's matcher."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from tests.fixtures.moondream import make_moondream_like
from vlmrobust.core.errors import VlmrobustError
from vlmrobust.models import load_adapter
from vlmrobust.models.moondream import MoondreamAdapter

OPTIONS = ["red thing", "green thing", "blue thing", "dark thing"]
COLOURS = [(230, 20, 20), (20, 230, 20), (20, 20, 230), (5, 5, 5)]


def _rows() -> list[dict]:
    return [{"id": str(i), "image": Image.new("RGB", (16, 16), c), "question": "Which?",
             "options": OPTIONS} for i, c in enumerate(COLOURS)]


@pytest.mark.parametrize("style", ["letter", "text"])
def test_answers_are_read_by_the_matcher(tmp_path: Path, style: str) -> None:
    folder = make_moondream_like(tmp_path / "md", answer_style=style)
    auto_map = json.loads((folder / "config.json").read_text())["auto_map"]
    assert set(auto_map) == {"AutoConfig", "AutoModelForCausalLM"}
    assert not (folder / "preprocessor_config.json").exists()
    with pytest.raises(VlmrobustError, match="--trust-remote-code"):
        load_adapter(f"moondream:{folder}", device="cpu")
    adapter = load_adapter(f"moondream:{folder}", device="cpu", trust_remote_code=True)
    assert isinstance(adapter, MoondreamAdapter) and adapter.family == "vlm"
    assert type(adapter.model).__module__.startswith("transformers_modules")
    logits = adapter.option_logits(_rows())
    # the colour picks the option: red -> A, green -> B, blue -> C, dark -> D
    np.testing.assert_array_equal(logits, np.eye(4, dtype=np.float32))
    assert adapter.unmatched == 0


def test_unreadable_answer_counts_and_takes_a(tmp_path: Path) -> None:
    folder = make_moondream_like(tmp_path / "md", answer_style="none")
    adapter = load_adapter(f"moondream:{folder}", device="cpu", trust_remote_code=True)
    logits = adapter.option_logits(_rows()[:2])
    assert (logits == 0).all() and adapter.unmatched == 2


def test_bad_targets_fail_before_loading(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(VlmrobustError, match=r"config\.json not found"):
        load_adapter(f"moondream:{tmp_path / 'empty'}", device="cpu", trust_remote_code=True)
    with pytest.raises(VlmrobustError, match="neither a model folder nor a hub id"):
        load_adapter("moondream:not-a-hub-id", device="cpu", trust_remote_code=True)
