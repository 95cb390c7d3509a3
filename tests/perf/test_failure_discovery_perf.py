"""The failure-discovery family at the seed's scale: 1,000 images (the paper's
COCO subset size; planted 64×64 PNGs here), two answerers over the same 10
question slots per image (20,000 records). Times the build (records read,
image sha256 checks, MCQ derivation, both configs written) and the Failure
modes page's recomputation from the built open config (SD left out: it is
MiniLM's cost, measured in test_discovery_speed.py), and prints the peak RSS.

Run: python -m pytest tests/perf/test_failure_discovery_perf.py --benchmark-only -s \
         -p no:doctest -o addopts=""
"""

from __future__ import annotations

import resource
import time
from pathlib import Path
from typing import Any

import numpy as np

N_IMAGES, SLOTS = 1_000, 10


def _source(root: Path) -> Path:
    from vlmrobust.core.discover_records import DiscoveryRecord, write_records
    from vlmrobust.evaluation.discover.images import list_images, write_planted_images
    from vlmrobust.evaluation.discover.planted import TEMPLATES, RuleAnswerer, RuleVerifier

    write_planted_images(root / "images", N_IMAGES, 0)
    refs = list_images(root / "images")
    phrasings = [q for qs in TEMPLATES.values() for q in qs]
    rng = np.random.default_rng(0)
    asked = [[phrasings[j] for j in rng.integers(0, len(phrasings), SLOTS)] for _ in refs]
    verifier = RuleVerifier()
    (root / "records").mkdir()
    loaded = [ref.load() for ref in refs]
    for blind in ("count", "color"):
        answerer = RuleAnswerer((blind,))
        recs = []
        for ref, (im, sha), qs in zip(refs, loaded, asked, strict=True):
            answers = answerer.answer([im] * len(qs), qs)
            for slot, (q, a) in enumerate(zip(qs, answers, strict=True), start=1):
                v = verifier.judge(im, q, a)
                recs.append(DiscoveryRecord(
                    image=ref.name, image_sha256=sha, completion_id=f"{ref.name}#{slot // 2}",
                    slot=slot, question=q, answer=a, valid=v.valid, correct=v.correct,
                    valid_reason=v.valid_reason, correct_reason=v.correct_reason,
                    verifier_parsed=True, method="zero-shot", questioner="scripted",
                    answerer=answerer.name, verifier=verifier.name, seed=0,
                    skills=(q.split()[1],)))
        write_records(root / "records" / f"{blind}.jsonl", recs)
    return root


def test_build_and_page_at_seed_scale(benchmark: Any, tmp_path: Path) -> None:
    from vlmrobust.cli.main import main
    from vlmrobust.leaderboard.pages.failure_modes import failure_modes

    src = _source(tmp_path / "src")
    times: dict[str, float] = {}

    def run() -> None:
        out = tmp_path / "fd"
        t0 = time.perf_counter()
        assert main(["build", "failure-discovery", "--source-root", str(src), "--out",
                     str(out)]) == 0
        times["build"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        (fd,) = failure_modes([out], embed=lambda: (None, "no SD"))
        times["page"] = time.perf_counter() - t0
        assert sum(r.n_questions for r in fd.rows) == 2 * N_IMAGES * SLOTS

    benchmark.pedantic(run, rounds=1, iterations=1)
    n = 2 * N_IMAGES * SLOTS
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\nfailure-discovery: {n:,} records, {N_IMAGES:,} images: build {times['build']:.1f} s "
          f"({n / times['build']:,.0f} records/s), page recompute {times['page']:.2f} s "
          f"({n / times['page']:,.0f} records/s); peak RSS {peak:,.0f} MB")
