"""The leaderboard never trusts a ``scores.json``: every dataset section of every
submission is re-scored from its stored predictions against the dataset build
its metadata names, and the board shows the recomputed numbers.

A section whose predictions are missing, whose predictions' sha256 differs from
the one ``scores.json`` records, or whose stored numbers disagree with the
recomputed ones (any of them: κ-weighted and plain Bench-C numbers alike) is
refused with the file's path. Dataset directories are given
explicitly or found by fingerprint in local stores (folders holding dataset
directories, e.g. the ``datasets/`` a ``vlmrobust demo`` leaves).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from vlmrobust.core.datadir import read_manifest
from vlmrobust.core.errors import VlmrobustError
from vlmrobust.core.files.bounded import MAX_SCORES_BYTES, inside_tree, read_json_bounded
from vlmrobust.core.kinds import dataset_kind
from vlmrobust.evaluation.model_meta import ModelMeta
from vlmrobust.evaluation.predictions.meta import read_prediction_meta
from vlmrobust.evaluation.scoring.registration import ScoreOptions, scorer_for
from vlmrobust.evaluation.submissions import PREDICTIONS_NAME, SCORES_NAME
from vlmrobust.evaluation.validate.check import partial_note
from vlmrobust.evaluation.validate.dataset_cache import DatasetCache
from vlmrobust.evaluation.validate.registration import validator_for
from vlmrobust.leaderboard.load import _check_comparable, submission_folders
from vlmrobust.leaderboard.registration import kind_evidence
from vlmrobust.leaderboard.scores_json import parse_scores
from vlmrobust.leaderboard.submission import LeaderboardInputError, Submission
from vlmrobust.leaderboard.trust.evidence import DatasetEvidence, copied_runs
from vlmrobust.leaderboard.trust.parallel import rescore_all

STORE_ENV = "VLMROBUST_DATASETS"
# Stored and recomputed numbers must agree this closely (same code, same seeds:
# only BLAS/platform rounding may differ).
REL_TOL = 1e-9
ABS_TOL = 1e-12


class DatasetStore:
    """Dataset directories by content fingerprint: ``dirs`` given one by one,
    plus every dataset directory directly inside (or one level below) each of
    ``roots``."""

    def __init__(self, dirs: Iterable[Path | str] = (), roots: Iterable[Path | str] = ()) -> None:
        self.dirs = tuple(Path(d) for d in dirs)
        self.roots = tuple(Path(r) for r in roots)
        self._by_fp: dict[str, Path] | None = None
        self._checked: set[str] = set()

    @classmethod
    def default(cls, submissions: Path, dirs: Iterable[Path | str] = (),
                roots: Iterable[Path | str] = ()) -> DatasetStore:
        """``dirs`` and ``roots``, then $VLMROBUST_DATASETS (os.pathsep-separated
        stores), then a ``datasets/`` folder inside the submissions folder (the
        builds its submissions answer, shipped with them) and one beside it (as
        ``vlmrobust demo`` leaves them)."""
        env = [Path(p) for p in os.environ.get(STORE_ENV, "").split(os.pathsep) if p]
        here = Path(submissions).resolve()
        found = [d for d in (here / "datasets", here.parent / "datasets") if d.is_dir()]
        return cls(dirs, [*roots, *env, *found])

    def _index(self) -> dict[str, Path]:
        if self._by_fp is not None:
            return self._by_fp
        found: dict[str, Path] = {}
        for d in self.dirs:
            fp = read_manifest(d).get("fingerprint")  # an explicit dir must be a dataset
            if isinstance(fp, str):
                found.setdefault(fp, d)
        for root in self.roots:
            if not root.is_dir():
                raise VlmrobustError(f"dataset store {root} is not a directory; pass an existing "
                                     "folder of dataset directories")
            candidates = [root, *sorted(p for p in root.iterdir() if p.is_dir())]
            candidates += [q for p in candidates[1:] for q in sorted(p.iterdir()) if q.is_dir()]
            for c in candidates:
                if (c / "manifest.json").is_file():
                    try:
                        fp = read_manifest(c).get("fingerprint")
                    except VlmrobustError:
                        continue  # a damaged folder in a store is simply not a candidate
                    if isinstance(fp, str):
                        found.setdefault(fp, c)
        self._by_fp = found
        return found

    def resolve(self, fingerprint: str, needed_by: Path) -> Path:
        path = self._index().get(fingerprint)
        if path is None:
            where = ", ".join(str(p) for p in (*self.dirs, *self.roots)) or "none given"
            raise LeaderboardInputError(
                f"{needed_by}: answers dataset build {fingerprint[:16]}…, which is in no dataset "
                f"directory given ({where}); pass it with --datasets DIR (or a folder of dataset "
                f"directories with --dataset-store DIR or ${STORE_ENV})")
        if fingerprint not in self._checked and path not in self.dirs:
            _check_content(path, fingerprint)
        self._checked.add(fingerprint)
        return path


def _check_content(path: Path, fingerprint: str) -> None:
    """A build found in a store (a submissions folder may ship one) is used only
    when its rows give the fingerprint its manifest claims: a relabelled copy
    whose manifest keeps the published fingerprint (and rewrites the shard
    checksums) would otherwise re-score submissions against other answers."""
    from vlmrobust.core.fingerprint import recompute_fingerprints

    try:
        got = recompute_fingerprints(path, read_manifest(path))
    except VlmrobustError as exc:
        raise LeaderboardInputError(f"{path}: {exc}") from None
    except (OSError, ValueError, TypeError, KeyError) as exc:  # pyarrow's errors among them
        raise LeaderboardInputError(
            f"{path}: cannot read its rows ({type(exc).__name__}: {str(exc)[:120]}); rebuild "
            "it with `vlmrobust build` or remove it from the dataset store") from None
    if fingerprint not in got:
        raise LeaderboardInputError(
            f"{path}: its rows do not give the content fingerprint its manifest.json claims "
            f"({fingerprint[:16]}…): the build was changed after it was built; pass the "
            "published build with --datasets, or rebuild it with `vlmrobust build`")


def _disagreement(stored: Any, fresh: Any, where: str) -> str | None:
    """The first field where ``stored`` differs from ``fresh`` (fields only the
    fresh scores have are not disagreements: they came with a newer scorer)."""
    found = _first_difference(stored, fresh)
    return None if found is None else found(where)


# Parsed scalars: compared directly, spared the (slow, ABC) container checks.
_LEAVES = frozenset({str, int, float, bool, type(None)})


def _first_difference(stored: Any, fresh: Any) -> Callable[[str], str] | None:
    """None when ``stored`` agrees with ``fresh``, else the message as a function of
    where ``stored`` sits: field paths are formatted for the one field that differs
    only (a Bench-C section holds ~140k values; issue 37.2)."""
    kind = type(stored)
    if kind not in _LEAVES and isinstance(stored, Mapping):
        if not isinstance(fresh, Mapping):
            return lambda w: f"{w}: stored {type(stored).__name__}, recomputed {fresh!r}"
        for key, value in stored.items():
            if key not in fresh:
                return _below(f".{key}", lambda w: f"{w}: not something the scorer computes")
            inner = _first_difference(value, fresh[key])
            if inner is not None:
                return _below(f".{key}", inner)
        return None
    if kind not in _LEAVES and isinstance(stored, list):
        if not isinstance(fresh, list) or len(stored) != len(fresh):
            return lambda w: f"{w}: stored {stored!r:.80}, recomputed {fresh!r:.80}"
        for i, (a, b) in enumerate(zip(stored, fresh, strict=True)):
            inner = _first_difference(a, b)
            if inner is not None:
                return _below(f"[{i}]", inner)
        return None
    numbers = (int, float)
    if (isinstance(stored, numbers) and isinstance(fresh, numbers)
            and not isinstance(stored, bool) and not isinstance(fresh, bool)):
        if math.isclose(float(stored), float(fresh), rel_tol=REL_TOL, abs_tol=ABS_TOL):
            return None
    elif stored == fresh and type(stored) is type(fresh):
        return None
    return lambda w: f"{w} is {stored!r}, re-scoring the predictions gives {fresh!r}"


def _below(step: str, message: Callable[[str], str]) -> Callable[[str], str]:
    return lambda w: message(f"{w}{step}")


def rescore_folder(folder: Path, store: DatasetStore,
                   cache: DatasetCache | None = None,
                   evidence: dict[str, DatasetEvidence] | None = None,
                   stored: Any = None) -> dict[str, Any]:
    """The recomputed scores of one submission folder (refusing any disagreement);
    ``evidence`` (when given) receives each dataset's :class:`DatasetEvidence`;
    ``stored`` is its scores.json as already parsed (read here when None)."""
    path = folder / SCORES_NAME
    if not (path.exists() or path.is_symlink()):
        raise LeaderboardInputError(f"{path}: missing; add the submission with `vlmrobust submit`")
    if not inside_tree(path, folder.parent):
        raise LeaderboardInputError(f"{path}: a symlink to a file outside the submissions folder "
                                    f"{folder.parent}; store the file itself")
    if stored is None:
        stored = read_json_bounded(path, MAX_SCORES_BYTES, "scores.json", LeaderboardInputError)
    if not isinstance(stored, dict) or not isinstance(stored.get("datasets"), dict):
        raise LeaderboardInputError(f"{path}: expected {{'schema_version': 1, 'model_id': ..., "
                                    "'datasets': {...}}; resubmit with `vlmrobust submit`")
    model_id = folder.name
    fresh: dict[str, Any] = {"schema_version": stored.get("schema_version"),
                             "model_id": stored.get("model_id"), "datasets": {}}
    cache = cache if cache is not None else DatasetCache()
    listed = set(stored["datasets"])
    for child in sorted(folder.iterdir()):
        if child.is_dir() and not child.name.startswith(".") and child.name not in listed:
            raise LeaderboardInputError(
                f"{child}: predictions not listed in {path}; resubmit with `vlmrobust submit`")
    for key, section in stored["datasets"].items():
        where = f"{path}: datasets.{key}"
        predictions = folder / str(key) / PREDICTIONS_NAME
        if "/" in str(key) or str(key).startswith(".") or not predictions.is_file():
            raise LeaderboardInputError(
                f"{predictions}: missing, so {where} cannot be checked; a submission must include "
                "the predictions its scores were computed from (`vlmrobust submit` stores them)")
        if not inside_tree(predictions, folder.parent):
            raise LeaderboardInputError(
                f"{predictions}: a symlink to a file outside the submissions folder "
                f"{folder.parent}; store the predictions themselves (`vlmrobust submit` does)")
        try:
            meta = read_prediction_meta(predictions)
            dataset_dir = store.resolve(meta["dataset"]["fingerprint"], predictions)
            kind = dataset_kind(cache.manifest(dataset_dir))
            report = validator_for(kind)(dataset_dir, predictions, None, cache)
        except LeaderboardInputError:
            raise
        except VlmrobustError as exc:
            raise LeaderboardInputError(f"{predictions}: refused ({exc})") from None
        _refuse_partial(report.partial, predictions)
        scores = scorer_for(kind).scores(report, model_id, ScoreOptions())
        new = _agreeing_section(scores["datasets"], section, key, where, path, predictions,
                                str(report.sha256))
        fresh["datasets"][key] = new
        if evidence is not None:
            evidence[str(key)] = kind_evidence(kind, report)
    return fresh


def _refuse_partial(partial: Any, predictions: Path) -> None:
    if partial is not None:
        raise LeaderboardInputError(f"{predictions}: {partial_note(partial)}; "
                                    "the leaderboard shows complete runs only")


def _agreeing_section(recomputed: Mapping[str, Any], section: Any, key: str, where: str,
                      path: Path, predictions: Path, sha256: str) -> Any:
    """The recomputed section of dataset ``key`` (every kind: option logits and
    retrieval alike), once the stored ``section`` is shown to be of that
    dataset, computed from these very predictions, and equal to it."""
    if list(recomputed) != [key]:
        raise LeaderboardInputError(
            f"{where}: the predictions answer dataset {next(iter(recomputed))!r}; "
            "store them under that name (resubmit with `vlmrobust submit`)")
    new = recomputed[key]
    got = section.get("predictions_sha256") if isinstance(section, Mapping) else None
    if got != sha256:
        raise LeaderboardInputError(
            f"{where}.predictions_sha256 is {got!r}, but {predictions} has sha256 "
            f"{sha256}: the scores were not computed from these predictions; "
            "resubmit with `vlmrobust submit`")
    found = _disagreement(section, new, f"datasets.{key}")
    if found:
        raise LeaderboardInputError(
            f"{path}: {found}; the stored scores disagree with the predictions — "
            "resubmit with `vlmrobust submit`")
    return new


def check_folder_model(folder: Path, meta: ModelMeta,
                       evidence: Mapping[str, DatasetEvidence]) -> None:
    """The predictions in a model folder name that folder's model, as ``submit``
    requires: a ``model_id`` in their metadata is the folder's name, every dataset
    names one model, and that model is the adapter meta.yaml records. Predictions
    moved from another model's folder (with their scores) are refused."""
    first: tuple[str, str] | None = None
    for key in sorted(evidence):
        ev = evidence[key]
        where = folder / key / PREDICTIONS_NAME
        claimed = ev.meta.get("model_id")
        if claimed is not None and claimed != folder.name:
            raise LeaderboardInputError(
                f"{where}: its metadata names model_id {claimed!r}, but it is stored in the "
                f"folder of {folder.name!r}; predictions cannot move between models: submit "
                "them under their own --model-id")
        names = {ev.model, *([ev.adapter] if ev.adapter else [])}
        if meta.adapter and meta.adapter not in names:
            raise LeaderboardInputError(
                f"{where}: its metadata names model {ev.model!r}, but {folder / 'meta.yaml'} "
                f"says the folder {folder.name!r} holds {meta.adapter!r}; predictions cannot "
                "move between models: submit them under their own --model-id")
        if first is None:
            first = (key, ev.model)
        elif ev.model != first[1]:
            raise LeaderboardInputError(
                f"{where}: its metadata names model {ev.model!r}, but {first[0]} in the folder "
                f"{folder.name!r} names {first[1]!r}; predictions cannot move between models: "
                "submit them under their own --model-id")


def load_verified_submission(folder: Path, store: DatasetStore,
                             cache: DatasetCache | None = None) -> Submission:
    from vlmrobust.leaderboard.load import read_submission

    parsed, stored = read_submission(folder)  # names, ids and shape errors first
    evidence: dict[str, DatasetEvidence] = {}
    fresh = rescore_folder(folder, store, cache, evidence, stored)
    check_folder_model(folder, parsed.meta, evidence)
    datasets = parse_scores(fresh, folder / SCORES_NAME, parsed.model_id)
    return Submission(meta=parsed.meta, datasets=datasets, folder=folder, evidence=evidence)


def load_verified_submissions(root: Path, store: DatasetStore | None = None,
                              datasets: Sequence[Path] = (),
                              stores: Sequence[Path] = (),
                              jobs: int | None = None) -> tuple[Submission, ...]:
    """Every submission under ``root``, re-scored from its predictions (model-id
    order) by ``jobs`` worker processes (None: the usable CPUs; see
    leaderboard/trust/parallel.py). ``store`` defaults to
    DatasetStore.default(root, datasets, stores)."""
    root = Path(root)
    if not root.is_dir():
        raise LeaderboardInputError(f"{root}: not a directory; pass --submissions DIR")
    store = store or DatasetStore.default(root, datasets, stores)
    # every folder is checked: one run names every refused submission, not the first
    results = rescore_all(submission_folders(root), load_verified_submission, store, jobs)
    loaded = [r for r in results if isinstance(r, Submission)]
    refused = [r for r in results if isinstance(r, str)]
    if len(refused) == 1:
        raise LeaderboardInputError(refused[0])
    if refused:
        # one line (the CLI prints errors on one line), every folder in it
        raise LeaderboardInputError(
            f"{len(refused)} submission folders refused (fix each, then build again): "
            + " | ".join(f"({i}) {msg}" for i, msg in enumerate(refused, start=1)))
    subs = tuple(loaded)
    if not subs:
        raise LeaderboardInputError(f"{root}: no submission folders; add one with "
                                    "`vlmrobust submit`")
    _refuse_copies(subs)
    _check_comparable(subs)
    return subs


def _refuse_copies(subs: Sequence[Submission]) -> None:
    """A second folder whose stored predictions are byte for byte another's is a
    copied run, listed as a new model if let through (issue 41.2): refused, naming
    both files."""
    folders = {s.model_id: s.folder for s in subs}
    evidence = {s.model_id: s.evidence for s in subs}
    copies = copied_runs(evidence)
    if not copies:
        return
    key, first, copy = copies[0]
    sha = evidence[copy][key].predictions_sha256
    more = f" (and {len(copies) - 1} more copied predictions files)" if len(copies) > 1 else ""
    raise LeaderboardInputError(
        f"{folders[copy] / key / PREDICTIONS_NAME}: the same file (sha256 {sha[:12]}…) as "
        f"{folders[first] / key / PREDICTIONS_NAME}{more}; a copied run is not a new model: "
        "remove the copy, or submit that model's own predictions")
