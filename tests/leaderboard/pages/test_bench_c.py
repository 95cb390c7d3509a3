"""The Bench-C page shows what the scorer reports, named: plain and κ-weighted
numbers side by side, clean S/C, destructive / corrective RAS per cell and the
per-category breakdown."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pyarrow as pa

from vlmrobust.evaluation.scoring.dataset import dumps_scores, score_tables
from vlmrobust.leaderboard.aggregate import aggregate
from vlmrobust.leaderboard.load import load_submissions
from vlmrobust.leaderboard.site.render import render_site
from vlmrobust.leaderboard.trust.baselines import BaselineSpec

CORRUPTIONS = ("fog", "snow")


def _table() -> pa.Table:
    rows: dict[str, list] = {k: [] for k in ("id", "n_options", "answer", "source_id",
                                             "category", "corruption", "severity", "kappa")}
    for q in range(10):
        for c, s in [("none", 0)] + [(c, s) for c in CORRUPTIONS for s in range(1, 6)]:
            rows["id"].append(f"q{q}-{c}-{s}")
            rows["n_options"].append(4)
            rows["answer"].append(q % 4)
            rows["source_id"].append(f"q{q}")
            rows["category"].append("chart" if q < 4 else "scene")
            rows["corruption"].append(c)
            rows["severity"].append(s)
            rows["kappa"].append(0.1 * (q + 1))
    return pa.table(rows)


def test_page_shows_plain_and_weighted_and_categories(tmp_path: Path) -> None:
    table = _table()
    manifest = {"spec": {"name": "bench-c", "version": "0.1"}, "fingerprint": "f",
                "configs": {"default": table.num_rows}}
    root = tmp_path / "subs"
    rng = np.random.default_rng(0)
    raw = {}
    for i in range(2):
        logits = rng.normal(size=(table.num_rows, 4))
        preds = pa.table({"id": table.column("id"), "logits": logits.tolist()})
        scores = score_tables(table, manifest, preds, f"m{i}")
        folder = root / f"m{i}"
        folder.mkdir(parents=True)
        (folder / "scores.json").write_text(dumps_scores(scores))
        (folder / "meta.yaml").write_text(f"model_id: m{i}\nname: Model {i}\nfamily: vlm\n")
        raw[f"m{i}"] = scores["datasets"]["bench-c"]["bench_c"]
    subs = load_submissions(root)
    for s in subs:
        bc = s.datasets["bench-c"].bench_c
        assert bc is not None
        want = raw[s.model_id]
        assert bc.plain_aggregate["ras"] == want["aggregate"]["plain"]["ras"]
        assert bc.clean["plain"]["S"] == want["clean"]["plain"]["S"]
        assert sorted(bc.categories) == ["chart", "scene"]
        cell = bc.categories["scene"].cells[0]
        assert cell.plain["destructive_ras"] == \
            want["categories"]["scene"]["cells"][0]["plain"]["destructive_ras"]
    lb = aggregate(subs, BaselineSpec(version="t", n_bootstrap=10))
    files = render_site(lb)
    page = files["bench-c.html"].decode("utf-8")
    for text in ("RAS (plain)", "RAS (κ)", "Destructive RAS (plain)", "Corrective RAS (κ)",
                 "S⁽ᵒ⁾", "C⁽ᵒ⁾", "Clean acc (plain)"):
        assert text in page, text
    m0 = raw["m0"]["aggregate"]["plain"]["ras"]
    assert f"{m0:.3f}".replace("-", "−") in page or f"{m0:.3f}" in page
    # every cell of each model's row holds the scorer's number of its column
    table = page.split('<table id="benchc"')[1].split("</table>")[0]
    heads = re.findall(r"<th[^>]*>([^<]+)</th>", table)[2:]  # after Model, Family
    for i in range(2):
        r = raw[f"m{i}"]
        a, pl = r["aggregate"], r["aggregate"]["plain"]
        want: dict[str, float] = {
            "Clean acc (plain)": r["clean"]["plain"]["acc"], "Clean acc (κ)": r["clean_accuracy"],
            "S⁽ᵒ⁾": pl["S_clean"], "S⁽ᵈ⁾": pl["S"], "ΔS": pl["delta_S"],
            "C⁽ᵒ⁾": pl["C_clean"], "C⁽ᵈ⁾": pl["C"], "ΔC": pl["delta_C"],
            **a["quadrants"], **a["transitions"]}
        for label, key in (("Acc", "acc"), ("ΔAcc", "delta_acc"), ("RAS", "ras"),
                           ("Destructive RAS", "destructive_ras"), ("Corrective RAS", "corrective_ras")):
            want[f"{label} (plain)"], want[f"{label} (κ)"] = pl[key], a[key]
        row = re.search(rf'<tr data-model="m{i}">(.*?)</tr>', table, re.S)
        assert row is not None and 'data-v="Model ' + str(i) + '"' in row.group(1)
        cells = re.findall(r'<td[^>]* data-v="([^"]*)"', row.group(1))[2:]  # after Model, Family
        assert len(cells) == len(heads) == len(want)
        for head, v in zip(heads, cells, strict=True):
            assert (float(v) if v else None) == want[head], (i, head, v)
        assert sum(want[h] is None for h in heads) <= 2  # m0 is never right on a clean copy
    model = files[lb.pages["m0"]].decode("utf-8")
    for text in ("Per source category", "Every corruption × severity cell", ">chart<", ">scene<",
                 "Destructive plain", "Corrective κ"):
        assert text in model, text
    scene = raw["m0"]["categories"]["scene"]["aggregate"]["plain"]["corrective_ras"]
    assert f"{scene:.3f}".replace("-", "−") in model or f"{scene:.3f}" in model
