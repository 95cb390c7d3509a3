"""The site describes what it shows (issues 37.4, 40.4): "complete" is measured
against the families a model's kind answers in the completeness suite (full.yaml),
not against every family, so an `other` model answering only ImageWikiQA is not
partial and a CLIP model without retrieval is; About names all eight families,
what each measures and its seed, and How to submit says how many there are."""

from __future__ import annotations

import re
from pathlib import Path

from tests.leaderboard.site.test_leaderboard_publish import _subs
from vlmrobust.benchmarks.families import FAMILIES, LABELS
from vlmrobust.evaluation.suite.spec import load_suite
from vlmrobust.leaderboard.load import load_submissions
from vlmrobust.leaderboard.pages.completeness import completeness, default_completeness
from vlmrobust.leaderboard.site.publish import build_site
from vlmrobust.leaderboard.synthetic import synthetic_submission, write_submission


def _row(html: str, model_id: str) -> str:
    start = html.index(f'<tr data-model="{model_id}"')
    return html[start:html.index("</tr>", start)]


def test_partial_is_per_model_kind(tmp_path: Path) -> None:
    subs = _subs(tmp_path / "subs", 3)  # classifier-0000, clip-0001, vlm-0002
    meta, scores = synthetic_submission(3, "other")
    scores["datasets"] = {"imagewikiqa": scores["datasets"]["imagewikiqa"]}
    write_submission(subs, meta, scores)
    html = build_site(load_submissions(subs), tmp_path / "site").read_text()
    other = _row(html, "other-0003")
    assert "badge partial" not in other and "no ImageNet-MCQ" not in other
    clip = _row(html, "clip-0001")
    for label in ("Classification", "Cue-conflict", "OOD detection", "Retrieval",
                  "Failure discovery"):
        assert f"no {label}" in clip
    vlm = _row(html, "vlm-0002")
    # seed 001 reads no VLM for OOD and a VLM gives no retrieval embeddings
    assert "no OOD detection" not in vlm and "no Retrieval" not in vlm
    assert "no Classification" in vlm
    classifier = _row(html, "classifier-0000")
    assert "no ImageWikiQA" not in classifier and "no Cue-conflict" in classifier


def test_completeness_follows_the_suite() -> None:
    full = default_completeness()
    assert full.suite == "full" and full.of("other") == ()
    assert set(full.of("clip")) == set(LABELS)  # CLIP answers every family
    assert "imagewikiqa" not in full.of("classifier") and "ood" not in full.of("vlm")
    # the sample suite's VLMs read OOD by likelihood: another suite, another answer
    assert "ood" in completeness(load_suite("sample")).of("vlm")


def test_about_and_submit_describe_every_family(tmp_path: Path) -> None:
    build_site(load_submissions(_subs(tmp_path / "subs", 3)), tmp_path / "site")
    about = (tmp_path / "site" / "about.html").read_text()
    assert len(FAMILIES) == 8
    for f in FAMILIES:
        row = about[about.index(f'id="family-{f.name}"'):]
        row = row[:row.index("</tr>")]
        assert f.label in row and all(f"seed {n}:" in row for n in f.seeds)
        assert re.search(r'href="https://[^"]+"', row)
    assert "three multiple-choice benchmark families" not in about
    assert "suite <code>full</code>" in about
    submit = (tmp_path / "site" / "submit.html").read_text()
    assert "8 families" in submit and "Three families" not in submit
    assert "without all three" not in submit
