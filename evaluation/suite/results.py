"""``results.json`` of one ``vlmrobust eval`` run (lm-evaluation-harness's habit:
one file that says what ran, on what, with which code, and what came out) and
the table printed at the end.

Every timing-dependent value sits under a ``timing`` key (per entry and for the
run), so two runs of the same suite, model and builds differ only there."""

from __future__ import annotations

import importlib.metadata
import platform
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

RESULTS_VERSION = 1
RESULTS_NAME = "results.json"
# the libraries whose versions change numbers or how a model runs
PACKAGES = ("vlmrobust", "numpy", "scipy", "pyarrow", "datasets", "torch", "torchvision",
            "transformers", "open_clip_torch", "timm", "sentence-transformers", "accelerate")


def headlines(section: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per headline number of a dataset's scores.json section: per config
    its accuracy (a kind's own rows where its scorer names them: retrieval's
    Recall@5 both ways), per OOD set its AUROC under the
    headline score, and for Bench-C the κ-weighted RAS over the cells; each with
    its interval and n.

    >>> s = {"configs": {"a": {"n": 4, "accuracy": 0.5, "accuracy_ci": [0.1, 0.9]}}}
    >>> headlines(s)
    [{'config': 'a', 'metric': 'accuracy', 'value': 0.5, 'ci': [0.1, 0.9], 'n': 4}]
    """
    from vlmrobust.evaluation.scoring.registration import config_headlines

    rows = config_headlines(section)  # by the section kind's scorer
    ood = section.get("ood") or {}
    for name, s in (ood.get("sets") or {}).items():
        rows.append({"config": name, "metric": f"auroc ({ood.get('score')})",
                     "value": s.get("auroc"), "ci": s.get("auroc_ci"), "n": s.get("n")})
    bench_c = section.get("bench_c") or {}
    ras = (bench_c.get("aggregate") or {}).get("ras")
    if ras is not None:
        intervals = bench_c.get("intervals") or {}
        rows.append({"config": "all cells", "metric": "ras (kappa-weighted)", "value": ras,
                     "ci": (intervals.get("kappa_weighted") or {}).get("ras"),
                     "n": intervals.get("n_questions")})
    return rows


def package_versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    return out


def git_revision(where: Path) -> str | None:
    """The commit of the checkout vlmrobust runs from (None outside a git checkout,
    e.g. an installed wheel); a ``+dirty`` suffix when it has uncommitted changes."""
    try:
        rev = subprocess.run(["git", "-C", str(where), "rev-parse", "HEAD"], capture_output=True,
                             text=True, timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(where), "status", "--porcelain",
                                "--untracked-files=no"], capture_output=True, text=True,
                               timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return rev + ("+dirty" if dirty else "") if rev else None


def fmt_ci(ci: Sequence[float] | None) -> str:
    return "" if not ci else f"[{ci[0]:.3f}, {ci[1]:.3f}]"


def results_table(results: Mapping[str, Any]) -> list[str]:
    """The table printed at the end of a run: dataset, config, headline metric,
    value, interval, n; then one line per skipped dataset."""
    head = ("dataset", "config", "metric", "value", "95% CI", "n")
    body: list[tuple[str, ...]] = []
    for e in results["entries"]:
        for h in e.get("headlines") or []:
            value = "n/a" if h["value"] is None else f"{h['value']:.3f}"
            body.append((e["dataset"], h["config"], h["metric"], value, fmt_ci(h["ci"]),
                         "" if h["n"] is None else str(h["n"])))
    widths = [max(len(r[i]) for r in (head, *body)) for i in range(len(head))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
             for r in (head, *body)]
    lines.insert(1, "  ".join("-" * w for w in widths))
    for e in results["entries"]:
        if e["status"] == "skipped":
            lines.append(f"skipped {e['dataset']}: {e['reason']}")
    if results.get("partial"):
        lines.append(f"PARTIAL run (--limit {results['limit']}): scores of the first rows "
                     "of each config; no submission folder")
    return lines
