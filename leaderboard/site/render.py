"""Render a :class:`Leaderboard` into the files of the static site (pure: no I/O
besides reading the package's templates and static files).

Pages are autoescaped Jinja2; the stylesheet and the script are one shared file
each (``style.css``, ``site.js``: inlined in every page they were a quarter of a
model page, issue 37.2; no integrity attribute, which would stop the script of a
site opened from disk), and a Content-Security-Policy allows no network access
beyond the site itself and no inline script at all, so even a template mistake could not run injected script
or fetch anything from elsewhere. What goes on the pages comes from
:mod:`.formatting` (the filters), :mod:`.fit_plots`, :mod:`.bench_c_view`,
:mod:`.overview` and :mod:`.downloads` (the CSV and JSON table).
"""

from __future__ import annotations

import dataclasses
import itertools
import re
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markupsafe import Markup

from vlmrobust.benchmarks.citations import CITATIONS, VLMROBUST
from vlmrobust.benchmarks.families import FAMILIES, seed_citation
from vlmrobust.benchmarks.hub_names import DATASET_REPOS, DETAILS_REPO, ORG
from vlmrobust.leaderboard.board import (
    BENCH_C,
    IMAGENET,
    IMAGEWIKIQA,
    REFERENCE,
    Leaderboard,
    family_key,
)
from vlmrobust.leaderboard.charts import svg
from vlmrobust.leaderboard.charts.fit_plots import fit_marker, fit_plot, shift_charts
from vlmrobust.leaderboard.pages import overview
from vlmrobust.leaderboard.pages.bench_c import (
    CELL_COLUMNS,
    aggregate_rows,
    cell_rows,
    mean_maps,
    per_corruption,
    sensitivity_rows,
)
from vlmrobust.leaderboard.pages.classification.page import classification_page
from vlmrobust.leaderboard.pages.completeness import default_completeness
from vlmrobust.leaderboard.pages.formatting import (
    data_v,
    num,
    params,
    pct,
    pvalue,
    signed,
    sort_attr,
    times,
    tone,
)
from vlmrobust.leaderboard.pages.holistic.page import holistic_sections
from vlmrobust.leaderboard.pages.retrieval import retrieval_sections  # noqa: F401  (registers)
from vlmrobust.leaderboard.site import paged
from vlmrobust.leaderboard.site.check import SCRIPT_FILE, STYLE_FILE
from vlmrobust.leaderboard.site.details import details_links
from vlmrobust.leaderboard.site.downloads import pairwise_csv, table_records, to_csv, to_json
from vlmrobust.leaderboard.submission import QUADRANTS, TRANSITIONS
from vlmrobust.leaderboard.trust.provenance import Provenance

HERE = Path(__file__).parents[1]  # templates/ and static/ live in leaderboard/
OVERVIEW_ROWS = "data/overview.json"
# a model page's Bench-C cells table and heat maps, appended to site.js
CELLS_SCRIPT = "cells.js"


@cache
def _static(name: str) -> str:
    return (HERE / "static" / name).read_text(encoding="utf-8")


@cache
def _env() -> Environment:
    env = Environment(loader=FileSystemLoader(str(HERE / "templates")), autoescape=True,
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                      keep_trailing_newline=True)
    env.filters.update(pct=pct, signed=signed, num=num, pvalue=pvalue, params=params,
                       data_v=data_v, sort_attr=sort_attr, tone=tone, times=times,
                       cell_rows=cell_rows)
    env.globals["cell_columns"] = CELL_COLUMNS
    return env


def csp(script: str) -> str:
    """The pages' Content-Security-Policy: nothing from the network, no inline
    script (the site's one script is a file of the site; the site check allows no
    other ``<script>``), images and fetched data (the overview's rows, shared charts
    inlined for their hover labels) only from the site itself."""
    return ("default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
            "img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'")


def site_assets() -> tuple[str, str, str]:
    """(script, style, csp) every page loads: what the site check allows."""
    # one script file on the site; its source is two files, each under 400 lines
    script = _static(SCRIPT_FILE) + _static(CELLS_SCRIPT)
    return script, _static(STYLE_FILE), csp(script)


def plot_paths(fit_indices: Sequence[int]) -> dict[int, str]:
    """Shared plot files: one SVG per fit that model pages mark (indexed, since
    variant and strategy names are submission data)."""
    return {i: f"plots/fit-{i:03d}.svg" for i in fit_indices}


_ARIA_LABEL = re.compile(r'aria-label="([^"]*)"')


def shared_chart(files: dict[str, str], path: str, chart: Markup) -> Markup:
    """A chart that draws every model, moved out of its page into the shared file
    ``path`` (relative to the site's root, from a page at the root): the page holds
    an ``<img class="inline">`` that site.js replaces by the SVG once shown, as the
    robustness charts. Issue 37.2: holistic.html's three OOD charts were 170 of its
    237 kB at 400 models, and grew with every model."""
    files[path] = str(chart)
    label = _ARIA_LABEL.search(chart)  # our own SVG's attribute, already escaped
    alt = label.group(1) if label else ""
    return Markup(f'<img class="inline" src="{path}" alt="{alt}" loading="lazy">')


def render_site(lb: Leaderboard, *, releases: Sequence[Mapping[str, Any]] = (),
                release: Mapping[str, Any] | None = None, code_version: str = "",
                provenances: Mapping[str, Provenance] | None = None,
                ) -> dict[str, bytes]:
    """All site files as {relative path: bytes}. ``releases`` is the changelog
    (oldest first); ``release`` the one being published (None for a preview build);
    ``provenances`` overrides the badges the maintainers' record gave (lb.provenance). Same inputs
    give byte-identical files.

    Size grows linearly with the number of models: plots are shared SVG files
    (one per fit, drawn once with all the family's models), model pages lay a
    one-point marker over them, and a model's Bench-C heat maps are drawn by the
    script from the table of every cell its page holds as data (issue 37.2)."""
    env = _env()
    script, css, _ = site_assets()
    prov = dict(provenances) if provenances is not None else dict(lb.provenance)
    common = {
        "csp": csp(script),
        "lb": lb, "release": release, "code_version": code_version,
        "baselines": lb.spec, "n_models": len(lb.submissions),
    }
    files: dict[str, str] = {SCRIPT_FILE: script, STYLE_FILE: css}

    def page(path: str, template: str, **ctx: Any) -> None:
        depth = path.count("/")
        files[path] = env.get_template(template).render(
            **common, **ctx, root="../" * depth, current=path)

    model_fits = [i for i, f in enumerate(lb.fits)
                  if f.kind == REFERENCE and f.strategy == lb.strategy]
    fit_files = plot_paths(model_fits)
    for i, path in fit_files.items():
        files[path] = str(fit_plot(lb.fits[i]))
    strats = overview.strategies(lb)
    rows = overview.overview_rows(lb, strats, prov)
    prompts = overview.choices({o["s"].meta.prompt_id or "": o["s"].meta.prompt_id or "—"
                                for o in rows})
    prompt_key = {p: str(i) for i, (p, _) in enumerate(prompts)}
    # the page holds the first page of rows; the script pages through all of them
    table = overview.table_rows(lb, rows, strats, prompt_key, overview.headline_strategy(lb))
    files[OVERVIEW_ROWS] = paged.rows_json(table).decode("utf-8")
    page("index.html", "index.html.j2", rows=paged.first_page(table), n_rows=len(table),
         rows_file=OVERVIEW_ROWS, strategies=strats,
         headline_strategy=overview.headline_strategy(lb), size_buckets=overview.SIZE_BUCKETS,
         families=sorted({o["r"].family for o in rows}, key=family_key), prompts=prompts,
         prompt_key=prompt_key, page_rows=paged.PAGE_ROWS)
    charts = shift_charts(lb)
    n_chart = 0
    for _, items in charts:
        for c in items:
            # each chart holds every model's point: one shared file, not inline
            c["path"] = f"plots/chart-{n_chart:03d}.svg"
            files[c["path"]] = str(c.pop("svg"))
            n_chart += 1
    page("robustness.html", "robustness.html.j2", strategies=charts)
    bc_subs = [s for s in lb.submissions
               if BENCH_C in s.datasets and s.datasets[BENCH_C].bench_c is not None]
    # one point per model: a model whose clean answers were all right (or all wrong)
    # has no corrective (destructive) RAS, and was silently left out (issue 37.3)
    ras_points = []
    for s in bc_subs:
        bc = s.datasets[BENCH_C].bench_c
        assert bc is not None
        dr, cr = bc.aggregate.get("destructive_ras"), bc.aggregate.get("corrective_ras")
        if dr is not None or cr is not None:
            ras_points.append((s.meta.name, dr, cr))
    bc_files = ("data/bench-c.json", "data/bench-c-sensitivity.json")
    agg_rows, sens_rows = aggregate_rows(lb, bc_subs), sensitivity_rows(lb, bc_subs)
    files[bc_files[0]] = paged.rows_json(agg_rows).decode("utf-8")
    files[bc_files[1]] = paged.rows_json(sens_rows).decode("utf-8")
    page("bench-c.html", "bench_c.html.j2", subs=bc_subs, rows_files=bc_files,
         agg_rows=paged.first_page(agg_rows), sens_rows=paged.first_page(sens_rows),
         page_rows=paged.PAGE_ROWS,
         mean_maps=mean_maps(bc_subs),
         ras_plot=shared_chart(files, "plots/bench-c-ras.svg", svg.linear_scatter(
             ras_points, x_label="destructive RAS (RR ∪ RW)", y_label="corrective RAS (WW ∪ WR)",
             title="destructive vs corrective RAS", undefined="undefined (no such questions)")),
         quadrants=QUADRANTS, transitions=TRANSITIONS)
    chart_no = itertools.count()
    sections = [dataclasses.replace(sec, charts=tuple(
        shared_chart(files, f"plots/holistic-{next(chart_no):03d}.svg", c) for c in sec.charts))
        for sec in holistic_sections(lb)]
    page("holistic.html", "holistic.html.j2", sections=sections)
    cls_context, cls_files = classification_page(lb)
    page("classification.html", "classification.html.j2", **cls_context)
    for name in ("classification.html", "holistic.html"):  # a row per model and dataset
        files[name], extra = paged.page_tables(name, files[name], "")
        files.update({k: v.decode("utf-8") for k, v in extra.items()})
    page("failure-modes.html", "failure_modes.html.j2", datasets=lb.failure_modes)
    page("releases.html", "releases.html.j2", releases=list(reversed(list(releases))))
    complete = default_completeness()
    page("submit.html", "submit.html.j2", complete=complete, families=FAMILIES, hub_org=ORG,
         hub_repos=DATASET_REPOS, details_repo=DETAILS_REPO)
    page("about.html", "about.html.j2", citations=(VLMROBUST, *CITATIONS), families=[
        (f, [(n, *seed_citation(n)) for n in f.seeds]) for f in FAMILIES], complete=complete)
    missing_by_id = {o["r"].model_id: o["missing"] for o in rows}
    for s in lb.submissions:
        # per-row results live in the details dataset (leaderboard/site/details.py),
        # not in the site: the page links the model's configs there
        details = details_links(s)
        order = {IMAGENET: 0, BENCH_C: 1, IMAGEWIKIQA: 2}
        datasets = sorted(s.datasets.items(), key=lambda kv: (order.get(kv[0], 3), kv[0]))
        plots = []
        for i, path in fit_files.items():
            marker = fit_marker(lb.fits[i], s.model_id)
            if marker is not None:
                plots.append((path, marker, lb.fits[i]))
        er_warnings = list(dict.fromkeys(
            f.warning for f in lb.fits if f.kind == REFERENCE and f.warning
            and any(p.model_id == s.model_id for p in f.points)))
        page(lb.pages[s.model_id], "model.html.j2", s=s, er=lb.er.get(s.model_id, ()),
             er_warnings=er_warnings,
             datasets=datasets, per_corruption=per_corruption(s),
             imagenet=IMAGENET, bench_c=BENCH_C, iwqa=IMAGEWIKIQA, quadrants=QUADRANTS,
             transitions=TRANSITIONS, plots=plots, prov=prov[s.model_id],
             missing=missing_by_id[s.model_id], details=details, details_repo=DETAILS_REPO)
    columns, records = table_records(lb)
    out = {k: v.encode("utf-8") for k, v in files.items()}
    out.update(cls_files)
    out["leaderboard.csv"] = to_csv(columns, records).encode("utf-8")
    out["leaderboard.json"] = to_json(lb, columns, records).encode("utf-8")
    out["pairwise.csv"] = pairwise_csv(lb).encode("utf-8")
    return out
