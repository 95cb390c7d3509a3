"""The site publishes each model's per-row results (#27 item 7), recomputed from
the stored predictions (never the submitted rows.jsonl), and the model page
links them."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pyarrow.parquet as pq

from tests.fixtures.submission import real_submissions
from vlmrobust.core.datadir import read_table
from vlmrobust.leaderboard.site.publish import build_site


def test_site_has_per_row_downloads_linked_from_the_model_page(tmp_path: Path) -> None:
    subs, datasets = real_submissions(tmp_path, 2)
    # a tampered submitted rows file must not reach the site
    (subs / "model-0" / "bench-c" / "rows.jsonl").write_text('{"id": "forged"}\n')
    site = tmp_path / "site"
    build_site(subs, site, datasets=datasets)
    for model in ("model-0", "model-1"):
        page = (site / "models" / f"{model}.html").read_text()
        for ds in datasets:
            name = ds.name
            rel = f"downloads/{model}/{name}.rows.jsonl.gz"
            assert f'href="../{rel}"' in page, (model, name)
            records = [json.loads(line) for line in
                       gzip.decompress((site / rel).read_bytes()).decode().splitlines()]
            ids = [r["id"] for c in read_table_configs(ds) for r in c]
            assert [r["id"] for r in records] == ids
            stored = pq.read_table(subs / model / name / "predictions.parquet").to_pylist()
            z = {r["id"]: r["logits"] for r in stored}
            for rec in records:
                logits = z[rec["id"]]
                assert rec["predicted"] == logits.index(max(logits))
                assert rec["correct"] is (rec["predicted"] == rec["answer"])
            if name == "bench-c":
                corrupted = [r for r in records if r["clean_id"] is not None]
                assert corrupted and all(-2 <= r["ras"] <= 1 for r in corrupted)
            # the site's file equals what submit stored for the untampered one
            if not (model == "model-0" and name == "bench-c"):
                assert records == [json.loads(line) for line in
                                   (subs / model / name / "rows.jsonl").read_text().splitlines()]
    # the gzip has no timestamp: rebuilding gives the same bytes
    first = (site / "downloads" / "model-1" / "bench-c.rows.jsonl.gz").read_bytes()
    build_site(subs, tmp_path / "site2", datasets=datasets)
    assert (tmp_path / "site2" / "downloads" / "model-1" / "bench-c.rows.jsonl.gz").read_bytes() == first
    assert re.search(r"Per-row results</a>", (site / "models" / "model-1.html").read_text())


def read_table_configs(ds: Path) -> list[list[dict[str, str]]]:
    manifest = json.loads((ds / "manifest.json").read_text())
    return [read_table(ds, c, columns=["id"]).to_pylist() for c in manifest["configs"]]
