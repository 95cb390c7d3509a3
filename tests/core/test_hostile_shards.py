"""Issue 40.10: a data shard that is a FIFO (every reader hung) or a link to
/dev/zero (a pyarrow traceback) is refused in one line naming it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.fixtures.score import write_mcq
from vlmrobust.cli.main import main


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_predict_refuses_a_special_shard(tmp_path: Path, kind: str,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    ds = write_mcq(tmp_path / "ds", n=3, k=4)
    (shard,) = sorted((ds / "data" / "sample-photo-random").glob("*.parquet"))
    shard.unlink()
    if kind == "fifo":
        os.mkfifo(shard)
    else:
        os.symlink("/dev/zero", shard)
    out = tmp_path / "p.parquet"
    rc = main(["predict", "--model", "clip:ViT-B-32:openai", "--dataset", str(ds),
               "--out", str(out), "--config", "sample-photo-random"])
    err = capsys.readouterr().err
    assert rc == 1 and err.count("error: ") == 1 and "Traceback" not in err, err
    assert f"{shard}: data shard is" in err and "not a regular file" in err, err
    assert not out.exists()
