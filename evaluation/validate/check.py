"""Checking a predictions file against the dataset it claims to answer.

``validate(dataset_dir, predictions, config=None)`` reads the dataset's ids,
option counts and answers (never its images), reads the predictions, and checks:
every id of the chosen configs exactly once, no unknown ids, one finite logit
per option (or a ``prediction`` in range), a ``prediction`` beside ``text``
that equals what the project's matcher (vlmrobust.core.text.matcher) reads in that
text (a submitter's own extraction is never trusted), the Bench-C clean copy of every
corrupted question, and the dataset fingerprint in the metadata that travels
with the predictions file (vlmrobust.evaluation.predictions.meta; refused when
absent). Every kind of problem is reported with its first offending rows
in one :class:`SubmissionError`; on success the returned report holds the
predictions aligned to dataset order, ready for scoring. A ``predict --limit N``
run (its metadata records the limit; it answers the first N rows of every
config) is scored on those rows and marked partial (``ValidationReport.partial``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from vlmrobust.core.errors import SubmissionError
from vlmrobust.evaluation.predictions.alignment import Alignment, align, wild_rows
from vlmrobust.evaluation.predictions.meta import (
    load_meta,
    meta_problems,
    other_dataset,
    refuse_other_dataset,
    sidecar_path,
)
from vlmrobust.evaluation.predictions.read import (
    MAX_ABS_LOGIT,
    MAX_EXAMPLES,
    PredictionsFile,
    Problem,
    read_predictions,
    row_problem,
)
from vlmrobust.evaluation.predictions.truncation import bad_counts
from vlmrobust.evaluation.scoring.guidance import guidance_problems
from vlmrobust.evaluation.scoring.text_answers import NO_ANSWER, is_open_world, text_answers
from vlmrobust.evaluation.validate.dataset_cache import DatasetCache
from vlmrobust.evaluation.validate.dataset_index import (
    BYTES_BASE,
    BYTES_PER_ROW,
    CLEAN,
    DatasetIndex,
    clean_rows_of,
    load_dataset_index,  # noqa: F401  (the old vlmrobust.evaluation.validate path)
    question_keys,
)


def _meta_configs(meta: Mapping[str, Any] | None, known: list[str]) -> list[str] | None:
    """The configs the metadata says were predicted (the known ones among them)."""
    listed = meta.get("configs") if meta is not None else None
    if not isinstance(listed, list) or not listed or not all(isinstance(c, str) for c in listed):
        return None
    return [c for c in known if c in listed] or None


def _unknown_configs(meta: Mapping[str, Any] | None, known: list[str], where: str) -> list[Problem]:
    """A metadata ``configs`` entry the dataset lacks is refused, not ignored:
    the rows of a config nobody can check would otherwise pass silently."""
    listed = meta.get("configs") if meta is not None else None
    if not isinstance(listed, list):
        return []
    unknown = [c for c in listed if c not in known]
    if not unknown:
        return []
    shown = ", ".join(repr(c) for c in unknown[:MAX_EXAMPLES]) + (" …" if len(unknown) > MAX_EXAMPLES else "")
    return [Problem("unknown config in metadata",
                    f"{where} lists configs {shown}, which the dataset does not have (its configs: "
                    f"{', '.join(known[:20])}{' …' if len(known) > 20 else ''}); list only the "
                    "configs predicted, as `vlmrobust predict` writes them")]


def check_predictions(index: DatasetIndex, pf: PredictionsFile,
                      open_world: bool = False) -> list[Problem]:
    """Every problem of ``pf`` against ``index`` (empty when it is valid)."""
    return _check(index, pf, open_world)[0]


def _check(index: DatasetIndex, pf: PredictionsFile,
           open_world: bool = False) -> tuple[list[Problem], NDArray[np.float64]]:
    problems = list(pf.problems)
    ids = pf.ids
    n = pf.n_rows
    lookup = {rid: i for i, rid in enumerate(index.ids.tolist())}
    pos = np.fromiter((lookup.get(r, -1) if r is not None else -2 for r in ids.tolist()),
                      dtype=np.int64, count=n)
    if pf.format == "parquet":
        null_ids = np.flatnonzero(pos == -2)
        if null_ids.size:
            problems.append(row_problem(pf, "null id", "every row needs the dataset row id", null_ids))
    unknown = np.flatnonzero(pos == -1)
    if unknown.size:
        elsewhere = sorted({index.other_ids[ids[r]] for r in unknown if ids[r] in index.other_ids})
        hint = (f"; some belong to config(s) {', '.join(elsewhere)} which were not selected "
                "(drop --config, or list them under configs in the predictions' metadata)") if elsewhere else ""
        problems.append(row_problem(
            pf, "unknown id", f"not an id of configs {', '.join(index.configs)}{hint}", unknown))
    matched = np.flatnonzero(pos >= 0)
    order = matched[np.argsort(pos[matched], kind="stable")]
    dup_mask = np.zeros(order.size, dtype=bool)
    dup_mask[1:] = pos[order[1:]] == pos[order[:-1]]
    dups = np.sort(order[dup_mask])
    if dups.size:
        problems.append(row_problem(pf, "duplicate id", "each id must appear exactly once", dups))
    first = order[~dup_mask]  # first occurrence of each answered dataset row
    row_of = np.full(index.n_rows, -1, dtype=np.int64)
    row_of[pos[first]] = first
    missing = np.flatnonzero(row_of < 0)
    if missing.size:
        shown = tuple(repr(index.ids[i]) for i in missing[:MAX_EXAMPLES])
        problems.append(Problem(
            "missing id", "these dataset rows have no prediction; predict every row of "
            f"configs {', '.join(index.configs)}", shown, int(missing.size)))
    k_of_row = np.full(n, -1, dtype=np.int64)
    k_of_row[matched] = index.n_options[pos[matched]]
    if pf.has_logits:
        assert pf.logits_len is not None and pf.logits_flat is not None
        lens = pf.logits_len
        null_rows = np.flatnonzero(lens < 0) if pf.format == "parquet" else np.empty(0, np.int64)
        if null_rows.size:
            problems.append(row_problem(pf, "null logits", "every row needs a list of logits", null_rows))
        wrong_k = np.flatnonzero((lens >= 0) & (k_of_row >= 0) & (lens != k_of_row))
        if wrong_k.size:
            r = int(wrong_k[0])
            problems.append(row_problem(pf, "wrong number of logits",
                                        _logits_fix(index, pf, r, int(pos[r]), int(lens[r])), wrong_k))
        bad = wild_rows(pf.logits_flat, pf.offsets)
        if bad.size:
            problems.append(row_problem(
                pf, "non-finite logits", "logits must be finite numbers (no NaN, inf or null) "
                f"of magnitude at most {MAX_ABS_LOGIT:g}", bad))
    if pf.truncated is not None:
        cut = bad_counts(pf.truncated, k_of_row)
        if cut.size:
            problems.append(row_problem(
                pf, "truncated out of range", "truncated counts the options whose log-prob "
                "the server did not list: an integer in [0, K] for the row's K options, or "
                "null", cut))
    has_text = (np.asarray([t is not None for t in pf.text.tolist()], dtype=bool)
                if pf.text is not None else np.zeros(n, dtype=bool))
    if has_text.any() and index.options is None and not index.label_spaces:
        problems.append(row_problem(
            pf, "text without options", "the dataset table has no option texts to match the "
            "text against; score against the dataset directory", np.flatnonzero(has_text)))
    answers = text_answers(index, pf, pos, open_world)
    if not pf.has_logits:
        p = pf.prediction if pf.prediction is not None else np.full(n, np.nan)
        no_text = ~has_text
        out = np.flatnonzero(no_text & (~np.isfinite(p) | (p != np.round(p)) | (p < 0)
                                        | ((k_of_row >= 0) & (p >= k_of_row))))
        if out.size:
            if pf.prediction is not None:
                kind, what = "prediction out of range", ("prediction must be an integer option "
                                                         "index in [0, K) for the row's K options")
            else:
                kind, what = "no answer given", "a row without logits needs text or a prediction"
            problems.append(row_problem(pf, kind, what, out))
    if pf.prediction is not None:
        given = pf.prediction
        forged = np.flatnonzero(np.isfinite(answers) & np.isfinite(given) & (given != answers))
        if forged.size:
            r = int(forged[0])
            said = "no option" if answers[r] == NO_ANSWER else f"option {int(answers[r])}"
            problems.append(row_problem(
                pf, "prediction disagrees with text",
                f"the answer of a row with text is what vlmrobust.core.text.matcher reads in it, "
                f"never a submitter's extraction ({pf.where(r)} gives prediction "
                f"{given[r]:g}, its text answers {said}); drop the prediction column or write "
                "the matcher's answer", forged))
    problems.extend(_clean_copy_problems(index, row_of))
    if not pf.has_logits and index.needs_logits is not None:
        problems.append(Problem("no logits", index.needs_logits))
    return problems, answers


def _logits_fix(index: DatasetIndex, pf: PredictionsFile, r: int, i: int, n: int) -> str:
    """The fix for a row of ``n`` logits answering dataset row ``i``."""
    if index.label_spaces:
        from vlmrobust.evaluation.validate.label_index import logits_hint

        return f"{pf.where(r)} has {n} logits; write {logits_hint(index, i)}"
    return (f"one logit per option, in the dataset's option order (e.g. {pf.where(r)} has "
            f"{n} logits for {int(index.n_options[i])} options)")


def _clean_copy_problems(index: DatasetIndex, row_of: NDArray[np.int64]) -> list[Problem]:
    """Bench-C: exactly one clean copy per question, and every corrupted row
    needs its question's clean copy (by source and source_id)."""
    if "corruption" not in index.columns or "source_id" not in index.columns:
        return []
    keys = question_keys(index)
    is_clean = index.columns["corruption"] == CLEAN
    clean_row = clean_rows_of(index)
    problems = []
    repeated = [i for i in np.flatnonzero(is_clean).tolist() if clean_row[keys[i]] != i]
    if repeated:
        shown = list(dict.fromkeys(keys[i] for i in repeated))
        problems.append(Problem(
            "dataset repeats a clean copy",
            "(source, source_id) must be unique among the clean copies (corruption 'none'), "
            "else corrupted copies cannot be paired with their question; questions "
            + ", ".join(f"{s}/{q}" for s, q in shown[:MAX_EXAMPLES])
            + (" …" if len(shown) > MAX_EXAMPLES else "") + " have several; rebuild the dataset",
            tuple(repr(index.ids[i]) for i in repeated[:MAX_EXAMPLES]), len(repeated)))
    no_clean_in_data = []
    no_clean_pred = []
    for i in np.flatnonzero(~is_clean & (row_of >= 0)).tolist():
        c = clean_row.get(keys[i])
        if c is None:
            no_clean_in_data.append(i)
        elif row_of[c] < 0:
            no_clean_pred.append(i)
    if no_clean_pred:
        srcs = list(dict.fromkeys(keys[i] for i in no_clean_pred))
        problems.append(Problem(
            "missing clean copy",
            "corrupted copies are scored against the clean copy of the same question "
            "(same source and source_id, corruption 'none'); predict the clean copies of "
            f"{', '.join(f'{s}/{q}' for s, q in srcs[:MAX_EXAMPLES])}"
            + (" …" if len(srcs) > MAX_EXAMPLES else ""),
            tuple(repr(index.ids[i]) for i in no_clean_pred[:MAX_EXAMPLES]), len(no_clean_pred)))
    if no_clean_in_data:
        problems.append(Problem(
            "dataset lacks clean copy",
            "the dataset has no clean copy (corruption 'none') for these rows' source and "
            "source_id; rebuild it",
            tuple(repr(index.ids[i]) for i in no_clean_in_data[:MAX_EXAMPLES]), len(no_clean_in_data)))
    return problems


@dataclass(frozen=True)
class ValidationReport:
    """A predictions file that passed every check, aligned to its dataset."""

    dataset_dir: Path | None
    predictions: Path
    index: DatasetIndex
    file: PredictionsFile
    aligned: Alignment
    meta: Mapping[str, Any] | None = None
    # A partial run (`predict --limit`): {"limit", "rows", "of"}; scored as such,
    # never accepted as a submission.
    partial: Mapping[str, int] | None = None

    @property
    def sha256(self) -> str | None:
        """sha256 of the predictions file's bytes as validated (None: in memory)."""
        return self.file.sha256

    @property
    def has_logits(self) -> bool:
        return self.aligned.logits is not None

    @property
    def dataset_name(self) -> str:
        return self.index.name

    def summary(self) -> str:
        kind = "logits" if self.has_logits else "text" if self.file.has_text else "predictions only"
        text = (f"{self.predictions}: valid — {self.index.n_rows} rows of "
                f"{self.index.name or 'dataset'} configs {', '.join(self.index.configs)} ({kind})")
        return text + (f"; {partial_note(self.partial)}" if self.partial else "")


def partial_note(partial: Mapping[str, int]) -> str:
    """How a partial run is named wherever it is shown."""
    return (f"PARTIAL run (predict --limit {partial['limit']}: {partial['rows']} of "
            f"{partial['of']} rows); `submit` refuses partial runs")


def limited_run(index: DatasetIndex, pf: PredictionsFile, meta: Mapping[str, Any] | None,
                ) -> tuple[DatasetIndex, dict[str, int] | None]:
    """The rows a ``predict --limit N`` run answered: when the metadata records
    a limit and the predictions hold exactly the first N rows (or all, if fewer)
    of every config, the index shrinks to them and the run is marked partial.
    Anything else is left to the missing-id check."""
    limit = meta.get("limit") if meta is not None else None
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
        return index, None
    answered = set(pf.ids.tolist())
    keep = np.fromiter((rid in answered for rid in index.ids.tolist()), dtype=bool,
                       count=index.n_rows)
    if keep.all():
        return index, None
    expected = np.zeros(index.n_rows, dtype=bool)
    for config in index.configs:
        expected[np.flatnonzero(index.config == config)[:limit]] = True
    if not np.array_equal(keep, expected):
        return index, None
    return index.subset(keep), {"limit": limit, "rows": int(keep.sum()), "of": index.n_rows}


def failure_message(pf_path: Path, problems: list[Problem], where: str) -> str:
    kinds = "; ".join(p.one_line() for p in problems)
    return (f"{pf_path} does not match {where}: {len(problems)} kind"
            f"{'s' if len(problems) != 1 else ''} of problem — {kinds}")


def validate_against(index: DatasetIndex, pf: PredictionsFile, *, dataset_dir: Path | None = None,
                     meta: Mapping[str, Any] | None = None,
                     extra: list[Problem] | None = None,
                     partial: Mapping[str, int] | None = None) -> ValidationReport:
    """Check ``pf`` against an in-memory ``index``; raise SubmissionError listing
    every kind of problem, or return the aligned report."""
    found, matched = _check(index, pf, is_open_world(meta))
    problems = [*(extra or []), *found, *guidance_problems(pf, meta)]
    if problems:
        raise SubmissionError(failure_message(pf.path, problems, str(dataset_dir or index.name)))
    return ValidationReport(dataset_dir, pf.path, index, pf, align(index, pf, matched), meta,
                            partial)


def validate(dataset_dir: Path | str, predictions: Path | str, config: str | None = None,
             cache: DatasetCache | None = None) -> ValidationReport:
    """Validate ``predictions`` against ``dataset_dir``: the configs named by
    ``config``, else those its metadata lists (what ``vlmrobust predict
    --config`` recorded), else every config.

    Raises SubmissionError (a VlmrobustError; the CLI exits 1) naming every kind
    of problem and its first offending rows; never writes anything.
    ``cache`` is a caller-owned :class:`DatasetCache` (the leaderboard validates
    many submissions against one dataset: its per-dataset work is done once).
    """
    dataset_dir = Path(dataset_dir)
    predictions = Path(predictions)
    cache = cache if cache is not None else DatasetCache()
    # the shards are checked before anything reads them
    cache.verify_shards(dataset_dir)
    facts = cache.facts(dataset_dir)
    manifest, known, max_rows = facts.manifest, list(facts.known), facts.max_rows
    try:
        pf = read_predictions(predictions, max_rows=max_rows,
                              max_bytes=BYTES_BASE + BYTES_PER_ROW * max_rows,
                              max_logits=facts.max_logits)
    except SubmissionError:
        # another dataset's file trips this one's row or size caps: name the cause
        refuse_other_dataset(predictions, manifest, dataset_dir)
        raise
    meta: dict[str, Any] | None
    try:
        meta = load_meta(predictions, pf.embedded_meta, pf.sha256)
    except SubmissionError as exc:
        # reported beside the rows' problems, so that one run shows everything to fix
        meta, extra = None, [Problem("metadata", str(exc))]
    if meta is not None and (line := other_dataset(meta, manifest, dataset_dir)) is not None:
        raise SubmissionError(f"{predictions}: {line}")  # every row would be a symptom
    chosen = [config] if config is not None else _meta_configs(meta, known)
    index = cache.index(dataset_dir, None if chosen is None else tuple(chosen))
    if meta is not None:
        where = (f"{predictions} (its metadata)" if pf.embedded_meta is not None
                 else str(sidecar_path(predictions)))
        extra = [Problem(kind, detail) for kind, detail in meta_problems(meta, index.manifest, where)]
        extra += _unknown_configs(meta, known, where)
    index, partial = limited_run(index, pf, meta)
    return validate_against(index, pf, dataset_dir=dataset_dir, meta=meta, extra=extra,
                            partial=partial)
