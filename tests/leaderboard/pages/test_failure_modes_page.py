"""The leaderboard's Failure modes page: seed 004's metrics recomputed from a
built failure-discovery dataset's stored verdicts, checked against the records
it was built from (by hand and by discover evaluate), rendered autoescaped and
reached through `leaderboard build --datasets`."""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from tests.fixtures.failure_discovery import build_failure_dataset, planted_source
from vlmrobust.cli.main import main
from vlmrobust.core.discover_records import DiscoveryRecord, read_records, write_records
from vlmrobust.leaderboard.pages.failure_modes import failure_modes, read_open_records


def hashed_embed(texts: Sequence[str]) -> np.ndarray:
    """Bag of hashed words: a cheap deterministic embedding (SD is checked
    against the vendi-score package on the same vectors)."""
    out = np.zeros((len(texts), 64))
    for i, t in enumerate(texts):
        for w in t.lower().split():
            out[i, int(hashlib.sha256(w.encode()).hexdigest(), 16) % 64] += 1.0
    return out


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("fm")
    source = planted_source(root / "src")
    # an id a browser must never run: the page escapes it
    path = source / "records" / "color.jsonl"
    recs = [DiscoveryRecord(**{**r.__dict__, "questioner": "<script>q</script>"})
            for r in read_records(path)]
    write_records(path, recs)
    return source, build_failure_dataset(source, root / "datasets" / "fd")


def _records(source: Path) -> list[DiscoveryRecord]:
    return [r for f in sorted((source / "records").glob("*.jsonl")) for r in read_records(f)]


def test_rows_are_recomputed_from_the_stored_verdicts(world) -> None:
    from vendi_score import vendi

    source, built = world
    recs = _records(source)
    assert read_open_records(built) == recs
    (fd,) = failure_modes([built], embed=lambda: (hashed_embed, ""))
    assert fd.grouping == "skill"  # no meta-skills tagged: per skill
    assert len(fd.rows) == 2 and {r.verifier for r in fd.rows} == {"rule-verifier:planted"}
    for row in fd.rows:
        mine = [r for r in recs if r.answerer == row.answerer]
        valid = [r for r in mine if r.valid]
        assert row.n_questions == len(mine)
        assert row.qvr == pytest.approx(len(valid) / len(mine), abs=1e-6)  # JSON: 6 digits
        assert row.fdr == pytest.approx(sum(not r.correct for r in valid) / len(valid), abs=1e-6)
        emb = hashed_embed([str(r.question) for r in valid])
        assert row.sd == pytest.approx(vendi.score_dual(emb, normalize=True), abs=1e-6)
        # SC (seed 004 Table 1): mean distinct skills per tagged valid question
        tagged = [r for r in valid if r.skills]
        assert row.n_skill_tagged == len(tagged) > 0
        assert row.skill_coverage == pytest.approx(
            np.mean([len(set(r.skills)) for r in tagged]), abs=1e-6)
        n_valid = Counter(r.skills[0] for r in valid)
        n_fail = Counter(r.skills[0] for r in valid if not r.correct)
        for g, n in n_valid.items():
            assert row.cell(g) == (pytest.approx(n_fail[g] / n), n)
        # FDR against the number of question slots (Fig. 8): ends at the row's FDR
        assert row.curve[-1][0] == len(mine) and row.curve[-1][1] == pytest.approx(row.fdr)
        m, f = row.curve[len(row.curve) // 2]
        first = [r for r in mine[:m] if r.valid]
        assert f == pytest.approx(sum(not r.correct for r in first) / len(first), abs=1e-6)
        blind = row.answerer.split("=")[1]
        skill = {"count": "counting", "color": "color recognition"}[blind]
        if n_valid[skill]:  # the planted blind spot fails every time, nothing else does
            assert row.cell(skill)[0] == 1.0
        assert all(f == 0.0 for g, f, _ in row.by_group if g != skill)


def test_page_is_rendered_escaped_and_found_through_datasets(world, tmp_path) -> None:
    from tests.fixtures.submission import real_submissions

    _, built = world
    subs, datasets = real_submissions(tmp_path, 2)
    site = tmp_path / "site"
    assert main(["leaderboard", "build", "--submissions", str(subs), "--out", str(site),
                 "--datasets", *map(str, datasets), str(built), "--quiet"]) == 0
    html = (site / "failure-modes.html").read_text()
    assert "rule-answerer:blind=count" in html and "rule-answerer:blind=color" in html
    assert "rule-verifier:planted" in html and "FDR per skill" in html
    assert html.count('<path class="curve"') == 2  # one FDR curve per row (Fig. 8)
    assert "<script>q</script>" not in html and "&lt;script&gt;q&lt;/script&gt;" in html
    assert 'href="failure-modes.html"' in (site / "index.html").read_text()
    # each row's numbers under their columns (SD aside: it depends on the embedder)
    (fd,) = failure_modes([built], embed=lambda: (None, ""))
    table = html.split('<table class="sortable">')[1].split("</table>")[0]
    for r in fd.rows:
        row = re.search(rf"<tr>((?:(?!</tr>).)*?>{re.escape(r.answerer)}<.*?)</tr>", table, re.S)
        assert row is not None, r.answerer
        v = re.findall(r'<td data-v="([^"]*)"', row.group(1))
        assert len(v) == 7
        assert (int(v[0]), float(v[1]), float(v[2])) == (r.n_questions, r.qvr, r.fdr)
        assert (float(v[4]), int(v[5]), float(v[6])) == (r.ld, r.n_skills, r.skill_coverage)
        # the planted tagger gives one skill per question: SC 1.00, not a share printed as 100.0
        assert r.skill_coverage == 1.0 and ">1.00</td>" in row.group(1)
    # without the dataset the page says so
    empty = tmp_path / "site2"
    assert main(["leaderboard", "build", "--submissions", str(subs), "--out", str(empty),
                 "--datasets", *map(str, datasets), "--quiet"]) == 0
    assert "No failure-discovery dataset was given" in (empty / "failure-modes.html").read_text()


def test_a_damaged_shard_is_refused(world, tmp_path) -> None:
    import shutil

    from vlmrobust.core.errors import VlmrobustError

    _, built = world
    copy = tmp_path / "fd"
    shutil.copytree(built, copy)
    shard = next((copy / "data" / "open").glob("*.parquet"))
    shard.write_bytes(shard.read_bytes()[:-10] + b"0123456789")
    with pytest.raises(VlmrobustError, match=r"sha256|checksum"):
        failure_modes([copy], embed=lambda: (None, "no SD"))


def test_stores_are_searched_and_a_dataset_counts_once(world, tmp_path, monkeypatch) -> None:
    _, built = world
    store = built.parent  # a folder of dataset directories
    found = failure_modes(roots=[store], embed=lambda: (None, "no SD"))
    assert [f.fingerprint for f in found] == [
        json.loads((built / "manifest.json").read_text())["fingerprint"]]
    assert found[0].rows[0].sd is None and found[0].sd_note == "no SD"
    # given twice (explicitly and through $VLMROBUST_DATASETS): one section
    monkeypatch.setenv("VLMROBUST_DATASETS", str(store))
    assert len(failure_modes([built], embed=lambda: (None, ""))) == 1
    monkeypatch.delenv("VLMROBUST_DATASETS")
    assert failure_modes(roots=[tmp_path], embed=lambda: (None, "")) == ()
