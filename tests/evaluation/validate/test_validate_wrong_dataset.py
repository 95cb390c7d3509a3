"""Another dataset's predictions given to `validate` are named as such, from
their metadata, before any row cap or id check (issue 40 item 5: a larger
dataset's file reported "more than N rows", a row-count cap, not the cause)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.fixtures.predict import write_mcq
from tests.fixtures.score import write_meta, write_parquet
from vlmrobust.cli.main import main

OTHER_FP = "f" * 64


def _foreign(tmp_path: Path, ds: Path, n_rows: int) -> Path:
    """Predictions of ``n_rows`` rows whose metadata names dataset 'classification'."""
    pred = write_parquet(tmp_path / "p" / "predictions.parquet",
                         [f"other-{i}" for i in range(n_rows)], [[0.0, 1.0]] * n_rows)
    side = write_meta(pred, ds)
    meta = yaml.safe_load(side.read_text())
    meta["dataset"].update(name="classification", fingerprint=OTHER_FP)
    side.write_text(yaml.safe_dump(meta))
    return pred


@pytest.mark.parametrize("n_rows", [3, 250])  # within and beyond the 100-row cap
def test_other_datasets_predictions_named(n_rows: int, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    import json

    ds = write_mcq(tmp_path / "ds", {"a": 2})
    fp = json.loads((ds / "manifest.json").read_text())["fingerprint"]
    pred = _foreign(tmp_path, ds, n_rows)
    assert main(["validate", "--dataset", str(ds), "--predictions", str(pred)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert (f"these predictions are for dataset 'classification' (fingerprint "
            f"{OTHER_FP[:16]}…), not 'imagenet-mcq' (fingerprint {fp[:16]}…)") in err, err
    assert "rows" not in err.split("these predictions")[1].split(";")[0]
    assert "missing id" not in err and "more than" not in err


def test_stale_build_beyond_the_cap_is_named(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """Same dataset name, another build, and more rows than the cap: the build is named."""
    ds = write_mcq(tmp_path / "ds", {"a": 2})
    pred = write_parquet(tmp_path / "p.parquet", [f"r{i}" for i in range(250)],
                         [[0.0, 1.0]] * 250)
    side = write_meta(pred, ds)
    meta = yaml.safe_load(side.read_text())
    meta["dataset"]["fingerprint"] = OTHER_FP
    side.write_text(yaml.safe_dump(meta))
    assert main(["validate", "--dataset", str(ds), "--predictions", str(pred)]) == 1
    err = capsys.readouterr().err
    assert "these predictions are for dataset 'imagenet-mcq' (fingerprint ffffffff" in err, err
