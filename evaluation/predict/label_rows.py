"""The evaluator's side of label-space kinds (classification, ood): each
config's label space, read once (checked against the manifest's sha256), and
the row plan, computed from the light columns (``id``, ``label``,
``candidates``) before any model loads.

A K-config row's ``candidates`` (indices into the label space, presentation
order, holding the row's ``label``) restrict what the model answers over; its
prediction has one logit per candidate, in candidate order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from vlmrobust.core.errors import VlmrobustError
from vlmrobust.core.kinds import OOD
from vlmrobust.core.label_space import LabelSpace, candidate_check
from vlmrobust.evaluation.predict.rows import DatasetReader, PlannedRow, checked_id

LABEL_COLUMNS = ("id", "image")
TEXT_MODES = ("generate", "open-world")  # the readers that give a label space no logits


def read_spaces(reader: DatasetReader, configs: Sequence[str]) -> dict[str, LabelSpace]:
    """config -> its label space (a local directory, or the hub copy's file
    checked against the manifest's sha256 as a local one is)."""
    from vlmrobust.core.label_space import read_label_space

    if reader.local is not None:
        return {c: read_label_space(reader.local, c, reader.manifest) for c in configs}
    return {c: _hub_space(reader, c) for c in configs}


def _hub_space(reader: DatasetReader, config: str) -> LabelSpace:
    import hashlib

    from vlmrobust.core.files.bounded import read_bytes_bounded
    from vlmrobust.core.label_space import MAX_LABEL_SPACE_BYTES, label_space_file

    rec = (reader.manifest.get("label_spaces") or {}).get(config)
    if not isinstance(rec, dict) or rec.get("file") != label_space_file(config):
        raise VlmrobustError(f"{reader.source}: manifest.json records no label space for config "
                             f"{config!r}; rebuild the dataset")
    repo, _, revision = reader.source.partition("@")
    try:
        from huggingface_hub import hf_hub_download

        path = hf_hub_download(repo, rec["file"], repo_type="dataset", revision=revision or None)
    except Exception as exc:
        raise VlmrobustError(f"{reader.source}: could not fetch {rec['file']} "
                             f"({type(exc).__name__}); check the id or pass a local copy") from None
    from pathlib import Path

    data = read_bytes_bounded(Path(path), MAX_LABEL_SPACE_BYTES, "label space")
    if hashlib.sha256(data).hexdigest() != rec.get("sha256"):
        raise VlmrobustError(f"{reader.source}: {rec['file']} differs from the sha256 its "
                             "manifest records; re-download the dataset")
    return LabelSpace.from_json_bytes(data, f"{reader.source}/{rec['file']}")


def plan_label_rows(reader: DatasetReader, configs: Sequence[str],
                    spaces: Mapping[str, LabelSpace], limit: int | None = None,
                    max_options: int | None = None, mode: str | None = None,
                    ood: bool = False) -> list[PlannedRow]:
    """Validate the light columns of every config and list the rows to predict.
    ``max_options`` (a lettering reader's limit) refuses a config whose rows
    answer over more classes than it can letter (``ood``: the fix named is a
    likelihood mode only, as an ood dataset refuses text readers)."""
    if limit is not None and limit < 1:
        raise VlmrobustError(f"--limit must be >= 1, got {limit}")
    plan: list[PlannedRow] = []
    seen: dict[str, str] = {}
    for config in configs:
        where = reader.where(config)
        space = spaces[config]
        present = reader.column_names(config)
        missing = [c for c in LABEL_COLUMNS if c not in present]
        if missing:
            raise VlmrobustError(f"{where}: missing column(s) {', '.join(missing)} (has: "
                                 f"{', '.join(present)}); rebuild the dataset")
        cols = [c for c in ("id", "label", "candidates") if c in present]
        data = reader.read_columns(config, cols)
        n = len(data["id"])
        for r in range(n if limit is None else min(n, limit)):
            rid, at = checked_id(data["id"][r], f"{where} row {r}", seen, config)
            k = len(space)
            cands = data.get("candidates", [None] * n)[r]
            if cands:  # a K-config row (an empty list: the whole space)
                label = data.get("label", [None] * n)[r]
                candidate_check(list(cands), -1 if label is None else int(label), len(space),
                                at)
                k = len(cands)
            if max_options is not None and k > max_options:
                raise VlmrobustError(
                    f"{at}: answers over {k} classes (label space {space.name!r}), but --mode "
                    f"{mode} letters at most {max_options}; use --mode likelihood:sum"
                    + (" or likelihood:avg" if ood else ", generate or open-world"))
            plan.append(PlannedRow(len(plan), config, r, rid))
    if not plan:
        raise VlmrobustError(f"{reader.source}: no rows to predict")
    return plan


def preflight(adapter: Any, kind: str, reader: DatasetReader, plan: Sequence[PlannedRow],
              spaces: Mapping[str, LabelSpace]) -> None:
    """What refuses a loaded adapter before the journal starts (so a refused
    run leaves nothing on disk): an adapter that cannot answer over a label
    space, its own checks (``check_label_space``), and ``preflight(rows,
    space)`` on each config's first row (a vlm's context limit)."""
    if not (callable(getattr(adapter, "label_logits", None))
            or callable(getattr(adapter, "read_labels", None))):
        raise VlmrobustError(f"{adapter.name} cannot answer over a label space (kind {kind}); "
                             "use a classifier:, clip: or vlm: model")
    check = getattr(adapter, "check_label_space", None)
    if callable(check):
        check()
    first = getattr(adapter, "preflight", None)
    if not callable(first):
        return
    from vlmrobust.models.runtime import to_pil

    firsts: dict[str, PlannedRow] = {}
    for p in plan:
        firsts.setdefault(p.config, p)
    for config, p in firsts.items():
        for r, row in reader.iter_rows(config, {p.row}):
            row["image"] = to_pil(row["image"], f"{reader.where(config)} row {r}")
            first([row], spaces[config])


def label_plan(reader: DatasetReader, configs: Sequence[str], family: str, model: str,
               limit: int | None, max_options: int | None, mode: str | None,
               kind: str | None = None) -> tuple[dict[str, LabelSpace], list[PlannedRow]]:
    """Spaces and plan of a label-space dataset, with what can be refused
    before a model loads: a 1000-way classifier over a space whose classes lack
    ``imagenet_ids``, a lettering reader over more classes than letters, a
    reader without logits on an ood dataset (its scores are made from logits)."""
    base = (mode or "").partition(":")[0]
    if kind == OOD and base in TEXT_MODES:
        raise VlmrobustError(
            f"{reader.source}: --mode {mode} answers in text, but an ood dataset is scored "
            "from logits over the label space (MSP, max-logit, energy); use --mode "
            "likelihood:sum or likelihood:avg (or letter, up to 26 classes)")
    spaces = read_spaces(reader, configs)
    if family == "classifier":
        from vlmrobust.models.label_logits import imagenet_groups

        for config, space in spaces.items():
            imagenet_groups(space, model, f"{reader.where(config)} (label space)")
    # only letter letters the classes; closed-world generation lists them by name
    lettered = max_options if mode == "letter" else None
    return spaces, plan_label_rows(reader, configs, spaces, limit, lettered, mode,
                                   ood=kind == OOD)


def label_space_meta(adapter: Any, kind: str) -> dict[str, Any]:
    """What a label-space run adds to the predictions' metadata: the kind, the
    prompt a vlm's calls were rendered from (a label-space prompt, not its MCQ
    one), and a CLIP model's logit scale (logits = scale·cos; OOD's MCM undoes it)."""
    meta: dict[str, Any] = {"kind": kind}
    prompt_id = getattr(adapter, "label_prompt_id", None)
    if isinstance(prompt_id, str):
        meta["prompt_id"] = prompt_id
    scale = getattr(adapter, "logit_scale_value", None)
    if callable(scale):
        meta["logit_scale"] = float(scale())
    if getattr(adapter, "mode", None) == "generate":  # closed world: how the names were listed
        from vlmrobust.models.readers.label_space import DEFAULT_CLASS_ORDER

        meta["class_order"] = getattr(adapter, "class_order", None) or DEFAULT_CLASS_ORDER
    return meta


def check_class_order(class_order: str | None, kind: str) -> None:
    """``--class-order`` (fixed | random) orders a closed-world prompt's class
    names: it applies to label-space datasets only."""
    from vlmrobust.core.kinds import LABEL_SPACE_KINDS

    if class_order is not None and (kind not in LABEL_SPACE_KINDS
                                    or class_order not in ("fixed", "random")):
        raise VlmrobustError(f"--class-order {class_order}: fixed or random, for --mode "
                             "generate over a label space (kind classification)")
