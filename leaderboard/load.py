"""Read ``submissions/<model-id>/`` folders: ``meta.yaml`` here, ``scores.json``
through :mod:`.scores_json`, into frozen :class:`Submission` records
(:mod:`.submission`).

Every problem raises :class:`LeaderboardInputError` naming the file, the field
and the fix; nothing is written while loading.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from vlmrobust.core.errors import SubmissionError
from vlmrobust.core.files.bounded import (
    MAX_META_BYTES,
    inside_tree,
    parse_yaml_bounded,
    read_bytes_bounded,
)
from vlmrobust.core.files.swap import recover_children
from vlmrobust.core.text.display import check_text_fields, short_repr
from vlmrobust.evaluation.model_meta import (
    MAX_PARAMS,
    MODEL_ID_RE,
    RESERVED,
    ModelMeta,
    is_model_id,
)
from vlmrobust.evaluation.model_meta import MODEL_FAMILIES as FAMILIES
from vlmrobust.leaderboard.fields import Where
from vlmrobust.leaderboard.scores_json import parse_scores, read_scores
from vlmrobust.leaderboard.submission import LeaderboardInputError, Submission


def load_meta(folder: Path) -> ModelMeta:
    path = folder / "meta.yaml"
    w = Where(path)
    if not (path.exists() or path.is_symlink()):
        raise w.fail("", "missing", "every submission folder needs meta.yaml "
                     "(written by `vlmrobust submit`)")
    if not inside_tree(path, folder.parent):
        raise w.fail("", f"a symlink to a file outside the submissions folder {folder.parent}",
                     "store meta.yaml itself")
    raw = parse_yaml_bounded(read_bytes_bounded(path, MAX_META_BYTES, "meta.yaml",
                                                LeaderboardInputError), str(path),
                             LeaderboardInputError)
    m = w.mapping(raw, "")
    model_id = w.text(m, "model_id", "", required=True) or ""
    if not is_model_id(model_id):
        raise w.fail("model_id", f"{model_id!r} is not a valid model id",
                     "use 1-100 characters from A-Z a-z 0-9 . _ -, starting with a letter or digit")
    if model_id != folder.name:
        raise w.fail("model_id", f"{model_id!r} differs from the folder name {folder.name!r}",
                     "rename the folder or fix model_id")
    family = w.text(m, "family", "", required=True) or ""
    if family not in FAMILIES:
        raise w.fail("family", f"{family!r} is not one of {list(FAMILIES)}", "fix family")
    params_raw = m.get("params")
    if params_raw is not None and (isinstance(params_raw, bool) or not isinstance(params_raw, int)
                                   or not 0 <= params_raw <= MAX_PARAMS):
        shown = short_repr(params_raw)
        raise w.fail("params", f"expected an integer from 0 to {MAX_PARAMS:.0e}, got {shown}",
                     "write the parameter count as an integer (e.g. 4652008)")
    check_text_fields(m, str(path), LeaderboardInputError, multiline=("bibtex",))
    try:
        return _model_meta(m, w, model_id, family, params_raw)
    except SubmissionError as exc:
        raise LeaderboardInputError(f"{path}: {exc}") from None


def _model_meta(m: Mapping[str, Any], w: Where, model_id: str, family: str,
                params_raw: int | None) -> ModelMeta:
    prompts_raw = m.get("prompts")
    if prompts_raw is not None and (
            not isinstance(prompts_raw, dict)
            or not all(isinstance(k, str) and (v is None or isinstance(v, str))
                       for k, v in prompts_raw.items())):
        raise w.fail("prompts", "expected a mapping of dataset name to prompt id",
                     "resubmit with `vlmrobust submit`")
    return ModelMeta(
        model_id=model_id,
        prompts=None if prompts_raw is None else dict(prompts_raw),
        name=w.text(m, "name", "") or model_id,
        family=family,
        vision_encoder=w.text(m, "vision_encoder", ""),
        params=params_raw,
        prompt_id=w.text(m, "prompt_id", ""),
        date=w.text(m, "date", ""),
        tool_version=w.text(m, "tool_version", ""),
        adapter=w.text(m, "adapter", ""),
        mode=w.text(m, "mode", ""),
        **{k: w.text(m, k, "") for k in ("paper_url", "code_url", "weights_url", "bibtex",
                                          "architecture", "training_data", "fine_tuned_on",
                                          "loss")},
        training_size=m.get("training_size"),
    )


def load_submission(folder: Path) -> Submission:
    return read_submission(folder)[0]


def read_submission(folder: Path) -> tuple[Submission, Any]:
    """The submission and its scores.json as parsed JSON (read once: re-scoring
    compares the predictions against that same content)."""
    folder = Path(folder)
    if not is_model_id(folder.name):
        raise LeaderboardInputError(
            f"{folder}: folder name is not a valid model id; rename it to match "
            f"{MODEL_ID_RE.pattern} (the whole name) without '..'")
    meta = load_meta(folder)
    raw = read_scores(folder)
    datasets = parse_scores(raw, folder / "scores.json", meta.model_id)
    return Submission(meta=meta, datasets=datasets, folder=folder), raw


def load_submissions(root: Path) -> tuple[Submission, ...]:
    """All submission folders under ``root`` in model-id order. Hidden folders
    (``.name``) are ignored; a folder without meta.yaml is an error, not skipped,
    so that a half-copied submission is never silently left off the board."""
    root = Path(root)
    if not root.is_dir():
        raise LeaderboardInputError(f"{root}: not a directory; pass --submissions DIR")
    subs = tuple(load_submission(p) for p in submission_folders(root))
    if not subs:
        raise LeaderboardInputError(f"{root}: no submission folders; add one with "
                                    "`vlmrobust submit`")
    _check_comparable(subs)
    return subs


def submission_folders(root: Path) -> list[Path]:
    """The model folders of a submissions root, sorted (hidden and reserved names
    such as the schemas folder are not submissions). A model folder that a
    killed submit left half-swapped is put back first (vlmrobust.core.files.swap), so
    that no model drops off the board."""
    recover_children(root)
    return [p for p in sorted(root.iterdir())
            if p.is_dir() and not p.name.startswith(".") and p.name not in RESERVED]


def _check_comparable(subs: tuple[Submission, ...]) -> None:
    """Scores of one dataset must come from one build: effective-robustness fits and
    rankings across different builds would compare different questions."""
    first: dict[str, tuple[str, str]] = {}
    for s in subs:
        for key, d in s.datasets.items():
            if d.fingerprint is None:
                continue
            if key not in first:
                first[key] = (d.fingerprint, s.model_id)
            elif first[key][0] != d.fingerprint:
                fp, other = first[key]
                raise LeaderboardInputError(
                    f"{s.folder / 'scores.json'}: datasets.{key}.dataset.fingerprint "
                    f"{d.fingerprint[:12]} differs from {fp[:12]} of {other!r}; rescore both "
                    "on the same dataset build or publish them on separate leaderboards")
