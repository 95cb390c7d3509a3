"""Hostile label-space runs: a refusal names a fix that works. A vlm lettering
the ood sample's 1,000 ImageNet classes was told to use generate or open-world,
which an ood dataset refuses next (its scores are made from logits)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fixtures import vlm as vlm_fixtures
from tests.fixtures.trust import one_line_error, run_cli


def test_letter_over_an_ood_label_space_names_only_logit_modes(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ds = tmp_path / "ood"
    assert run_cli(["build", "ood", "--sample", "--out", str(ds)], capsys)[0] == 0
    llava = vlm_fixtures.make_llava(tmp_path / "llava")
    capsys.readouterr()  # the checkpoint writer's progress bar
    out = tmp_path / "run" / "p.parquet"
    out.parent.mkdir()
    rc, err = run_cli(["predict", "--model", f"vlm:{llava}", "--dataset", str(ds), "--out",
                       str(out), "--mode", "letter", "--device", "cpu", "--threads", "1",
                       "--no-progress"], capsys)
    assert rc != 0
    one_line_error(err)
    assert "letters at most 26" in err and "likelihood:sum" in err, err
    assert "generate" not in err and "open-world" not in err, err
    assert not list(out.parent.iterdir())  # no predictions, no .partial journal
