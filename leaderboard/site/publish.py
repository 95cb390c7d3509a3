"""Build and publish the static site.

Both commands render into a fresh temporary directory beside the target, check
it, and only then swap it in (:func:`vlmrobust.core.files.atomic.atomic_directory`: one
atomic exchange): an exception or a kill at any point leaves the previous site
exactly as it was, or, once the exchange is done, the new checked one; the site
is never missing (where two renames are needed instead, the next command of any
kind puts the previous site back: vlmrobust.core.files.swap).
``publish`` also appends a release (version, date, code version, baseline fits,
model changes) to ``releases.json``, the changelog shown on the site.

Submissions are re-scored from their predictions before anything is rendered
(vlmrobust.leaderboard.trust.verify); a disagreeing ``scores.json`` stops the build.
Files in the site folder that the site did not create (``CNAME``,
``.nojekyll``, a host's config, links, FIFOs) are carried over into every new
version as hard links; a --out/--site that is a link, a FIFO, a device node or
someone else's folder, or that overlaps the submissions or datasets, is refused.

Per-row results are the details dataset beside the site (leaderboard/site/details.py).
Hosting the site is a separate, documented step: upload the folder as it is, e.g.
``huggingface_hub.upload_folder(repo_id=..., repo_type="space", folder_path=SITE)``
for a static Space, or any static file host.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import re
import stat
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeAlias

from tqdm import tqdm

from vlmrobust import __version__
from vlmrobust.core.files.atomic import atomic_directory
from vlmrobust.core.files.output_guard import (
    check_apart,
    check_not_input,
    kind_of,
    lstat_or_none,
    open_lock_file,
)
from vlmrobust.core.files.swap import carry_over, recover
from vlmrobust.leaderboard.aggregate import aggregate
from vlmrobust.leaderboard.board import Leaderboard
from vlmrobust.leaderboard.pages.failure_modes import failure_modes
from vlmrobust.leaderboard.site.changelog import (
    RELEASES,
    PublishError,
    make_release,
    next_version,
    read_releases,
    releases_json,
)
from vlmrobust.leaderboard.site.check import SiteCheckError, check_files
from vlmrobust.leaderboard.site.details import default_details_dir, publish_details
from vlmrobust.leaderboard.site.paged import PAGE_ROWS
from vlmrobust.leaderboard.site.render import OVERVIEW_ROWS, render_site, site_assets
from vlmrobust.leaderboard.submission import Submission
from vlmrobust.leaderboard.trust.baselines import load_baselines
from vlmrobust.leaderboard.trust.reference_runs import ReferenceRuns, load_reference_runs

# Files whose presence marks a folder as a site we built (and may replace).
SITE_MARKERS = ("index.html", "leaderboard.json")
# The list of files the site wrote, so that a later build knows which others
# (CNAME, .nojekyll, ...) belong to someone else and must be kept. It is the
# site's marker: without it no old file is ours (issue 41.4), whatever its name.
OWNED = ".vlmrobust-files.json"


_OVERVIEW_ROW_RE = re.compile(r"<tr data-model=")


def check_site(root: Path, expected: Mapping[str, bytes], n_models: int) -> None:
    """The built folder holds exactly the rendered bytes, one overview row per model,
    every page and SVG passes the allow-list check (:mod:`.sitecheck`) and every
    local link resolves; nothing is loaded from another host."""
    root = Path(root)
    for rel, data in expected.items():
        p = root / rel
        if not p.is_file() or p.read_bytes() != data:
            raise PublishError(f"{p}: missing or different from what was rendered; "
                               "the disk may be full: free space and publish again")
    if "index.html" in expected:
        # the page holds the first page of rows, data/overview.json every row
        rows = len(_OVERVIEW_ROW_RE.findall(expected["index.html"].decode("utf-8")))
        paged = json.loads(expected[OVERVIEW_ROWS])["rows"]
        if rows != min(n_models, PAGE_ROWS) or len(paged) != n_models:
            raise PublishError(f"index.html has {rows} overview rows and {OVERVIEW_ROWS} "
                               f"{len(paged)} for {n_models} submissions; this is a bug, "
                               "please report it")
    script, style, csp = site_assets()
    try:
        check_files(expected, scripts=[script], styles=[style], csp=csp)
    except SiteCheckError as exc:
        raise PublishError(str(exc)) from None
    table = json.loads(expected["leaderboard.json"])
    if len(table["rows"]) != n_models:
        raise PublishError("leaderboard.json row count differs from the submissions")


def _write_one(root: Path, rel: str, data: bytes) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


# A static host's own files: a folder holding only these is a site waiting for
# its first build (e.g. GitHub Pages with its CNAME), not someone's other data.
HOST_FILES = ("CNAME", "robots.txt", "_headers", "_redirects")


def _refuse_foreign(target: Path) -> None:
    """Never replace a folder that is not a site we built (e.g. a mistyped --out)."""
    def ours_or_host(p: Path) -> bool:
        return p.name in HOST_FILES or p.name.startswith(".")

    st = lstat_or_none(target, "site folder")
    if st is not None and not stat.S_ISDIR(st.st_mode):
        raise PublishError(f"{target} is {kind_of(st.st_mode)}, not a folder; vlmrobust never "
                           "replaces it: pass a new or empty folder (or the folder a link points to)")
    check_not_input(target, "site folder")
    if target.exists() and (not target.is_dir() or (
            not all(ours_or_host(p) for p in target.iterdir())
            and not all((target / m).is_file() for m in SITE_MARKERS))):
        raise PublishError(f"{target} exists and is not a vlmrobust site; choose a new or "
                           "empty folder, or remove it first")


@contextlib.contextmanager
def _site_lock(target: Path) -> Iterator[None]:
    """One writer per site; stale temp folders of killed runs are removed under the lock."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd = open_lock_file(target.parent / f".{target.name}.lock")
    with os.fdopen(fd, "r+b") as fh:
        try:
            import fcntl
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except ImportError:  # pragma: no cover - non-POSIX: no locking available
            pass
        except BlockingIOError:
            raise PublishError(f"{target} is being built by another process; wait for it "
                               "and run again") from None
        # a swap cut short by a kill: the previous site goes back first
        recover(target)
        yield


def _owned_files(target: Path) -> set[str] | None:
    """The files an earlier build of the site wrote (None: no readable list)."""
    owned_path = target / OWNED
    if not owned_path.is_file() or owned_path.is_symlink():
        return None
    from vlmrobust.core.files.bounded import MAX_SCORES_BYTES, read_bytes_bounded

    try:
        listed = json.loads(read_bytes_bounded(owned_path, MAX_SCORES_BYTES, "file list",
                                               PublishError).decode("utf-8"))
    except (ValueError, RecursionError, PublishError):
        return None
    return {str(x) for x in listed} if isinstance(listed, list) else None


def _rendered_by_us(target: Path) -> Callable[[str], bool]:
    """Whether a path of the previous site is one of its rendered files (dropped
    from the new version): one its file list names. Everything else (CNAME,
    .nojekyll, a host's config, a user's my-app.js, links, FIFOs) is someone
    else's and is carried over; so is every file of a site whose list is missing
    or unreadable, since a name or suffix proves nothing (a rendered file of the
    same path is replaced all the same: the new files win)."""
    owned = _owned_files(target) or set()

    def ours(rel: str) -> bool:
        p = target / rel
        if p.is_symlink() or not p.is_file():
            return False
        return rel == OWNED or rel in owned
    return ours


def _write_site(target: Path, files: Mapping[str, bytes], n_models: int,
                progress: bool) -> None:
    # what appears in the site while it is rendered is carried over at swap time too
    with atomic_directory(target, carry=_rendered_by_us) as tmp:
        # mkdtemp creates 0700; a web server must be able to read the swapped-in site.
        umask = os.umask(0)
        os.umask(umask)
        tmp.chmod(0o777 & ~umask)
        for rel in tqdm(sorted(files), desc="writing site", unit="file", disable=not progress):
            _write_one(tmp, rel, files[rel])
        _write_one(tmp, OWNED, (json.dumps(sorted(files), indent=0) + "\n").encode("utf-8"))
        if target.is_dir():
            # after the new files, which win; as hard links, never read or followed
            carry_over(target, tmp, _rendered_by_us(target))
        check_site(tmp, files, n_models)


RecordArg: TypeAlias = "Path | str | ReferenceRuns | None"


def _record(reference_runs: RecordArg) -> ReferenceRuns:
    if isinstance(reference_runs, ReferenceRuns):
        return reference_runs
    return load_reference_runs(reference_runs)


def _leaderboard(submissions: Path | Sequence[Submission], baselines: Path | None,
                 datasets: Sequence[Path] = (), stores: Sequence[Path] = (),
                 reference_runs: RecordArg = None,
                 timings: dict[str, float] | None = None, jobs: int | None = None) -> Leaderboard:
    """A folder is loaded and re-scored from its predictions and checked against
    the maintainers' reference-run record (``reference_runs``, default the
    packaged leaderboard/reference_runs.yaml); already-loaded submissions (e.g.
    from load_verified_submissions) are used as they are, and checked against a
    record only when one is given."""
    clock = _Clock(timings)
    if isinstance(submissions, (str, Path)):
        from vlmrobust.leaderboard.trust.verify import load_verified_submissions

        record: ReferenceRuns | None = _record(reference_runs)
        subs = load_verified_submissions(Path(submissions), datasets=datasets, stores=stores,
                                         jobs=jobs)
    else:
        record = None if reference_runs is None else _record(reference_runs)
        subs = tuple(submissions)
    clock.lap("load + re-score")
    lb = aggregate(subs, load_baselines(baselines), record)
    root = Path(submissions) if isinstance(submissions, (str, Path)) else None
    lb = replace(lb, failure_modes=failure_modes(datasets, stores, root))
    clock.lap("aggregate (fits, bootstrap, pairwise)")
    return lb


class _Clock:
    """Seconds per build stage into ``timings`` (tests/perf), when one is given, and
    this process's CPU seconds of the stage under ``<stage> CPU`` (on a loaded
    machine the wall time says little; worker processes are not counted)."""

    def __init__(self, timings: dict[str, float] | None) -> None:
        self.timings = timings
        self.t, self.cpu = time.perf_counter(), time.process_time()

    def lap(self, stage: str) -> None:
        now, cpu = time.perf_counter(), time.process_time()
        if self.timings is not None:
            self.timings[stage] = self.timings.get(stage, 0.0) + now - self.t
            self.timings[f"{stage} CPU"] = self.timings.get(f"{stage} CPU", 0.0) + cpu - self.cpu
        self.t, self.cpu = now, cpu


def build_site(submissions: Path | Sequence[Submission], out: Path, *,
               baselines: Path | None = None, progress: bool = False,
               datasets: Sequence[Path] = (), stores: Sequence[Path] = (),
               reference_runs: RecordArg = None,
               timings: dict[str, float] | None = None, details: Path | None = None,
               jobs: int | None = None) -> Path:
    """Preview build: render ``submissions`` into ``out`` (no new release; the
    changelog of an existing site in ``out`` is kept), and the per-row details
    dataset into ``details`` when given (version ``preview``). A submissions
    folder is re-scored against ``datasets`` / the dataset ``stores`` first
    (vlmrobust.leaderboard.trust.verify) by ``jobs`` processes (None: the usable
    CPUs). ``timings`` (when given) receives the seconds of each stage. Returns
    ``out/index.html``."""
    out = Path(out)
    subs_dir = Path(submissions) if isinstance(submissions, (str, Path)) else None
    check_apart(out, "--out", [subs_dir, *datasets])
    if details is not None:
        check_apart(details, "--details", [subs_dir, *datasets, out])
    lb = _leaderboard(submissions, baselines, datasets, stores, reference_runs, timings, jobs)
    clock = _Clock(timings)
    _refuse_foreign(out)  # before the lock file is created beside it
    with _site_lock(out):
        _refuse_foreign(out)
        releases = read_releases(out) if out.is_dir() else []
        files = render_site(lb, releases=releases, code_version=__version__)
        if releases:
            files[RELEASES] = releases_json(releases)
        clock.lap("render")
        if details is not None:
            publish_details(lb, details, "preview", [subs_dir, *datasets, out])
            clock.lap("details")
        _write_site(out, files, len(lb.submissions), progress)
        clock.lap("write + site check")
    return out / "index.html"


def publish_site(submissions: Path | Sequence[Submission], site: Path, *,
                 version: str | None = None, baselines: Path | None = None,
                 now: dt.datetime | None = None, progress: bool = False,
                 datasets: Sequence[Path] = (), stores: Sequence[Path] = (),
                 reference_runs: RecordArg = None, details: Path | None = None,
                 push: bool = False, hub_api: Any = None,
                 jobs: int | None = None) -> dict[str, Any]:
    """Render, check and atomically swap in a new release of the site at ``site``
    (submissions re-scored as in build_site, by ``jobs`` processes), after the per-row details dataset
    (``details``, default ``details/`` beside the site; ``push``: to the hub through
    ``hub_api``, builders/hub.py's interface). Returns the release record appended
    to ``releases.json`` (its ``details``: repo, configs, fingerprint, hub tag)."""
    site = Path(site)
    details = default_details_dir(site) if details is None else Path(details)
    subs_dir = Path(submissions) if isinstance(submissions, (str, Path)) else None
    check_apart(site, "--site", [subs_dir, *datasets])
    check_apart(details, "--details", [subs_dir, *datasets, site])
    lb = _leaderboard(submissions, baselines, datasets, stores, reference_runs, jobs=jobs)
    # Read the changelog under the lock: two publishes must not both append to v1.
    _refuse_foreign(site)  # before the lock file is created beside it
    with _site_lock(site):
        _refuse_foreign(site)
        previous = read_releases(site) if site.is_dir() else []
        number = next_version(previous, version)
        release = make_release(lb, previous, number, now or dt.datetime.now(dt.timezone.utc))
        # the details go first: a failed push leaves the previous site in place
        release["details"] = publish_details(lb, details, number, [subs_dir, *datasets, site],
                                            push, hub_api)
        releases = [*previous, release]
        files = render_site(lb, releases=releases, release=release, code_version=__version__)
        files[RELEASES] = releases_json(releases)
        _write_site(site, files, len(lb.submissions), progress)
    return release
