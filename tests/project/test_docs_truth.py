"""The docs say what the code does (issue 27.5): predictions metadata is
embedded (no meta.yaml is written by the evaluator), a JSONL sidecar is
``<file>.meta.yaml``, self-written predictions need the fingerprint, Bench-C's
``corruption`` is a ClassLabel, and the citations are real BibTeX."""

from __future__ import annotations

import re
from pathlib import Path

import datasets
import pytest

from tests.fixtures.score import bench_c_rows, png
from vlmrobust.benchmarks.citations import CITATIONS, VLMROBUST
from vlmrobust.builders import card_meta
from vlmrobust.core.writer import BuildInfo, write_dataset

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("family", list(card_meta.FAMILIES))
def test_card_describes_the_predictions_metadata_as_written(family: str) -> None:
    text = card_meta.common_sections(family)
    assert "meta.yaml` with the" not in text  # predict writes no meta.yaml
    assert "embedded in the parquet file" in text
    assert "`<file>.meta.yaml`" in text and "fingerprint" in text
    assert "without it are refused" in text
    assert VLMROBUST.bibtex in text


def test_submit_page_names_the_sidecar_the_code_reads(tmp_path: Path) -> None:
    from tests.fixtures.submission import real_submissions
    from vlmrobust.evaluation.predictions.meta import sidecar_path
    from vlmrobust.leaderboard.site.publish import build_site

    subs, dss = real_submissions(tmp_path, 1)
    build_site(subs, tmp_path / "site", progress=False, datasets=dss)
    page = (tmp_path / "site" / "submit.html").read_text()
    assert sidecar_path(Path("preds.jsonl")).name == "preds.jsonl.meta.yaml"
    assert "preds.jsonl.meta.yaml" in page
    assert "&lt;dataset&gt;/meta.yaml" not in page
    about = (tmp_path / "site" / "about.html").read_text()
    assert "@software{vlmrobust," in about


def test_readme_bench_c_filter_works_on_a_classlabel_column(tmp_path: Path) -> None:
    names = ["none", "fog", "gaussian_noise"]
    rows = []
    for r in bench_c_rows(2):
        rows.append({**r, "corruption": names.index(r["corruption"]),
                     "image": {"bytes": png(0), "path": None}})
    feats = datasets.Features({
        "id": datasets.Value("string"), "image": datasets.Image(),
        "question": datasets.Value("string"),
        "options": datasets.Sequence(datasets.Value("string")), "answer": datasets.Value("int32"),
        "source_id": datasets.Value("string"), "source": datasets.Value("string"),
        "category": datasets.Value("string"), "corruption": datasets.ClassLabel(names=names),
        "severity": datasets.Value("int32"), "kappa": datasets.Value("float32")})
    write_dataset(tmp_path / "bc", configs={"default": rows}, features=feats, card="toy",
                  info=BuildInfo("bench-c", "0.1.0", 0, sample=True))
    benchc = datasets.load_dataset(str(tmp_path / "bc"), "default", split="test")
    # what the README used to suggest matches nothing
    assert len(benchc.filter(lambda r: r["corruption"] == "none")) == 0
    readme = (REPO / "README.md").read_text()
    snippet = 'none = benchc.features["corruption"].str2int("none")'
    assert snippet in readme and 'benchc.filter(lambda r: r["corruption"] == none)' in readme
    scope: dict[str, object] = {"benchc": benchc}
    exec(snippet, scope)
    clean = benchc.filter(lambda r: r["corruption"] == scope["none"])
    assert len(clean) == 2 and set(clean["severity"]) == {0}
    card = (REPO / "builders" / "bench_c" / "card.py").read_text()
    assert 'str2int(\\"none\\")' in card


def test_citations_name_people_not_handles() -> None:
    for c in (*CITATIONS, VLMROBUST):
        m = re.search(r"author = \{(.*)\},\n", c.bibtex)
        if m is None:
            assert "names no author" in c.bibtex, c.key  # a page without an author
            continue
        author = m.group(1)
        # "Last, First and ..." or an institution in double braces
        assert "," in author or author.startswith("{"), (c.key, author)
    assert "leo1oel}" not in "".join(c.bibtex for c in CITATIONS).replace("leo1oel.github", "")
    readme = (REPO / "README.md").read_text()
    assert VLMROBUST.bibtex in readme
