"""transformers' deprecation of the gradient_checkpointing names, which TRL
triggers inside `discover train`, is silenced there and only there (issue 40
item 5: the warnings showed in the demo and test output)."""

from __future__ import annotations

import re
import warnings
from typing import Any

import pytest

from vlmrobust.evaluation.discover import train


def test_the_filter_matches_transformers_messages_only() -> None:
    pattern = re.compile(train.CHECKPOINTING_DEPRECATION)
    for old in ("gradient_checkpointing", "is_gradient_checkpointing",
                "gradient_checkpointing_enable", "gradient_checkpointing_disable"):
        msg = f"`{old}` is deprecated and will be removed in v6. Use `x` instead."
        assert pattern.match(msg), msg
    assert not pattern.match("`torch_dtype` is deprecated! Use `dtype` instead!")


def test_run_train_silences_only_those(monkeypatch: pytest.MonkeyPatch) -> None:
    def fake_train(*args: Any, **kwargs: Any) -> dict[str, Any]:
        warnings.warn("`gradient_checkpointing` is deprecated and will be removed in v6.",
                      FutureWarning, stacklevel=1)
        warnings.warn("something else", FutureWarning, stacklevel=1)
        return {}

    monkeypatch.setattr(train, "_train", fake_train)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        train.run_train("q", None, None, None, None, train.TrainConfig(), None)
    assert [str(w.message) for w in seen] == ["something else"]
