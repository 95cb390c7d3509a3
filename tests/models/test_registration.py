"""Importing the registration module alone fills every adapter family: the
issue-38 moves turned `models/clip.py` into a package whose ``__init__`` registers
nothing, so `clip` went missing unless another import came first (the leaderboard's
completeness suite then failed with "readers.clip: unknown model family")."""

from __future__ import annotations

import subprocess
import sys


def test_registration_alone_registers_every_family() -> None:
    code = ("import vlmrobust.models.registration\n"
            "from vlmrobust.models.base import ADAPTER_FAMILIES\n"
            "print(sorted(ADAPTER_FAMILIES))")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True).stdout
    assert out.strip() == str(sorted(["classifier", "clip", "describe", "endpoint", "moondream",
                                      "pipeline", "vlm"]))
