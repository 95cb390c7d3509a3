"""Issue 40.9: a predictions parquet whose read columns decode far beyond
their stored bytes, padded with an incompressible column that is never read,
is refused from the footer before any column is decoded. The pad used to
raise the expansion cap (64x the file's bytes): 39.5 MB gave 6.8 GB in validate."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from vlmrobust.core.errors import SubmissionError
from vlmrobust.evaluation.predictions import parquet as predictions_parquet
from vlmrobust.evaluation.predictions.read import read_predictions

ROWS, TEXT_CHARS, PAD_BYTES = 200, 50_000, 1_000


def _write(path: Path, pad: bool) -> int:
    """A file of ROWS plain-encoded (no dictionary) texts of TEXT_CHARS 'a's,
    zstd-compressed, with a random pad column; returns the texts' decoded bytes."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(0)
    cols = {"id": [f"r{i}" for i in range(ROWS)], "text": ["A" + "a" * TEXT_CHARS] * ROWS}
    if pad:
        cols["pad"] = [rng.bytes(PAD_BYTES) for _ in range(ROWS)]
    pq.write_table(pa.table(cols), path, compression="zstd", use_dictionary=False)
    return ROWS * (TEXT_CHARS + 1)


def test_an_unread_pad_no_longer_raises_the_cap(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(predictions_parquet, "MIN_DECODED_CAP", 1 << 20)
    padded = tmp_path / "padded.parquet"
    decoded = _write(padded, pad=True)
    size = padded.stat().st_size
    # the old cap (64x the file) let it through; the texts' stored bytes are tiny
    assert predictions_parquet.MAX_EXPANSION * size > decoded > 1 << 20
    with pytest.raises(SubmissionError, match="decode to more than") as err:
        read_predictions(padded)
    assert "\n" not in str(err.value) and str(padded) in str(err.value)


def test_a_file_within_the_cap_still_reads(tmp_path: Path) -> None:
    plain = tmp_path / "plain.parquet"
    _write(plain, pad=True)
    pf = read_predictions(plain)  # the default 64 MiB floor holds 10 MB of text
    assert pf.n_rows == ROWS and pf.text is not None and len(pf.text[0]) == TEXT_CHARS + 1
