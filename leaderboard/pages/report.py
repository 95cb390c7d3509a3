"""``report.html`` of a ``vlmrobust eval`` run: the leaderboard of the run's
submission folder, re-scored from its predictions against the builds it
answered (``site/``, every page and chart, static files that open from disk),
and ``report.html`` beside it, which opens the model's own page there."""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path

from vlmrobust.core.files.atomic import write_text_atomic
from vlmrobust.leaderboard.aggregate import page_names
from vlmrobust.leaderboard.site.publish import build_site

REPORT_NAME = "report.html"
SITE_NAME = "site"


def write_report(submissions: Path, model_id: str, out: Path, datasets: Sequence[Path]) -> Path:
    """Render ``submissions`` into ``out/site/`` and write ``out/report.html``, a
    page that opens ``model_id``'s model page (the site's model template: scores,
    intervals, fits, Bench-C maps). Returns the report's path."""
    build_site(submissions, out / SITE_NAME, datasets=datasets)
    ids = sorted(p.name for p in submissions.iterdir() if p.is_dir() and not p.name.startswith("."))
    target = f"{SITE_NAME}/{page_names(ids)[model_id]}"
    href = html.escape(target, quote=True)
    name = html.escape(model_id)
    report = out / REPORT_NAME
    write_text_atomic(report, (
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        f"<meta http-equiv=\"refresh\" content=\"0; url={href}\">\n"
        f"<title>{name} · vlmrobust eval report</title>\n</head>\n<body>\n"
        f"<p><a href=\"{href}\">{name}: the model's page of this run's leaderboard</a></p>\n"
        "</body>\n</html>\n"))
    return report
