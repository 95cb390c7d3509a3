"""The reference evaluator: a model adapter + a dataset -> a predictions file
carrying its own metadata (parquet key-value metadata, or a JSONL sidecar).

Deterministic row order (configs in manifest order, rows in file order), fixed
batches, an append-only journal (vlmrobust.evaluation.predictions.write) so that a run
killed at any point and started again with the same arguments ends with
exactly one row per dataset row, identical to an uninterrupted run. Under
torchrun each rank takes rows ``i % world == rank`` and journals them beside
``out``; rank 0 gathers every rank's rows through torch.distributed (so the
output folder need not be shared between nodes) and writes the file.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vlmrobust import __version__
from vlmrobust.core.errors import VlmrobustError
from vlmrobust.core.files.output_guard import check_file_output
from vlmrobust.core.kinds import LABEL_SPACE_KINDS, RETRIEVAL, dataset_kind, refuse_open
from vlmrobust.core.text.public_names import publishable_meta
from vlmrobust.evaluation.predict import label_rows
from vlmrobust.evaluation.predict.batches import run_batches
from vlmrobust.evaluation.predict.distributed import DistContext, init_distributed
from vlmrobust.evaluation.predict.micro_batch import recorded_micro_batch, settle_micro_batch
from vlmrobust.evaluation.predict.model import (
    FIXED_MODES,
    adapter_spec,
    backend_of,
    is_local_path,
    load_model,
    mode_id,
    read_record,
)
from vlmrobust.evaluation.predict.provenance import reference_info
from vlmrobust.evaluation.predict.retrieval import run_retrieval
from vlmrobust.evaluation.predict.rows import DatasetInfo, DatasetReader, PlannedRow, plan_rows
from vlmrobust.evaluation.predict.spec import BackendOptions, ReaderOptions, RunSpec
from vlmrobust.evaluation.predict.threads import choose_threads, set_threads
from vlmrobust.evaluation.predictions.meta import sidecar_path
from vlmrobust.evaluation.predictions.write import (
    JournalRow,
    check_journal,
    journal_path,
    journal_table,
    partial_dir,
    read_journal_rows,
    reasoning_totals,
    remove_partial,
    start_journal,
    write_predictions,
)
from vlmrobust.models.base import FAMILIES, Adapter, AdapterSpec
from vlmrobust.models.label_space_prompts import resolve_label_space_prompt
from vlmrobust.models.prompts import CLIP_LABEL_SPACE_PROMPT
from vlmrobust.models.readers import Reader

# re-exported: their documented home until the run spec split this module
__all__ = ["FIXED_MODES", "BackendOptions", "ReaderOptions", "RunSpec", "choose_threads",
           "is_local_path", "predict_dataset"]


def predict_dataset(spec: RunSpec | str | Adapter, *legacy: Any,
                    after_batch: Callable[[int], None] | None = None, **options: Any) -> Path:
    """Predict every row of ``spec.dataset`` (all configs, or ``spec.configs``)
    and write ``spec.out`` (parquet: id, logits list<float32>, config; its
    metadata embedded, or a ``<out>.meta.yaml`` sidecar for .jsonl); a retrieval
    dataset gets image and caption embeddings instead. Returns ``spec.out``.

    ``after_batch(n)`` is called after the n-th batch of this run is journaled
    (a hook for tests and progress reporting). A run killed at any point and
    started again with the same spec resumes its journal (created only once the
    model has loaded) and ends identical to an uninterrupted run.

    The keyword call of before the run spec, ``predict_dataset(model, dataset,
    out, config=..., batch_size=..., ...)``, still works for one minor version
    (a DeprecationWarning): it builds the spec with :meth:`RunSpec.from_keywords`.
    """
    if not isinstance(spec, RunSpec):
        warnings.warn("predict_dataset(model, dataset, out, **options) is deprecated: pass a "
                      "RunSpec (vlmrobust.evaluation.predict.spec); the keyword call goes in "
                      "the next minor version", DeprecationWarning, stacklevel=2)
        named = dict(zip(_LEGACY_ORDER, legacy[2:], strict=False))
        clash = sorted(set(named) & set(options))
        if len(legacy) < 2 or len(legacy) - 2 > len(_LEGACY_ORDER) or clash:
            raise TypeError("predict_dataset(model, dataset, out, ...): "
                            + (f"{clash[0]} given twice" if clash else "wrong arguments"))
        options.update(named)
        after_batch = options.pop("after_batch", after_batch)
        spec = RunSpec.from_keywords(spec, legacy[0], legacy[1], **options)
    elif legacy or options:
        raise TypeError("predict_dataset(spec): the options belong in the RunSpec")
    return _run(spec, after_batch)


# the old signature's positional order after (model, dataset, out)
_LEGACY_ORDER = ("config", "batch_size", "device", "limit", "progress", "prompt",
                 "after_batch", "threads", "overwrite", "trust_remote_code", "mode",
                 "read_options", "device_map", "endpoint", "name", "class_order")


@dataclass(frozen=True)
class _Plan:
    """What a run reads and how, settled before any model loads."""

    model: AdapterSpec
    answer_reader: Reader | None
    mode_id: str | None
    reader: DatasetReader
    info: DatasetInfo
    configs: list[str]
    kind: str
    prompt: str | None
    rows: list[PlannedRow]
    spaces: dict[str, Any] | None


def _run(spec: RunSpec, after_batch: Callable[[int], None] | None) -> Path:
    _check_outputs(spec)
    plan = _plan(spec)
    if plan is None:  # kind retrieval: image and caption embeddings, not option logits
        return spec.out
    ctx = init_distributed(spec.backend.device)
    saved_threads = None
    try:
        if spec.backend.device_map is not None and ctx.world_size > 1:
            raise VlmrobustError("--device-map shards one process's model over every visible "
                                 "GPU; run it without torchrun (torchrun is for models that "
                                 "fit one GPU)")
        pdir = partial_dir(spec.out)
        if ctx.is_main and spec.overwrite:
            remove_partial(pdir)
        chosen = int(ctx.broadcast_from_main(
            choose_threads(spec.backend.threads, pdir) if ctx.is_main else 0))
        saved_threads = set_threads(chosen)
        run_key = _run_key(spec, plan, chosen)
        micro = recorded_micro_batch(pdir) if ctx.is_main else None
        if micro is not None:  # chosen once the model has loaded, by a probe
            run_key["micro_batch"] = micro
        if ctx.is_main:
            check_journal(pdir, run_key)  # a mismatch fails before the model loads
        adapter = _load_checked(spec, plan)
        micro = ctx.broadcast_from_main(
            settle_micro_batch(adapter, micro, len(plan.rows) if ctx.is_main else 0))
        settle_micro_batch(adapter, micro, 0)  # every rank runs rank 0's
        if micro is not None:
            run_key["micro_batch"] = micro
        ctx.barrier()
        if ctx.is_main:
            start_journal(pdir, run_key)
        ctx.barrier()
        merged = _predict_rows(spec, plan, adapter, ctx, pdir, after_batch)
        if ctx.is_main:
            meta = _meta(adapter, spec, plan, chosen, ctx)
            totals = reasoning_totals(list(merged.values()))
            if isinstance(meta.get("server"), dict) and totals is not None:
                meta["server"]["reasoning"] = totals  # every process's rows, from the journal
            if micro is not None:
                meta["micro_batch"] = micro
            _merge(spec.out, plan.rows, merged, pdir, publishable_meta(meta, spec.name,
                                                                       is_local_path))
        ctx.barrier()
        remove_partial(pdir)
    finally:
        set_threads(saved_threads)
        ctx.close()
    return spec.out


def _check_outputs(spec: RunSpec) -> None:
    """The output file (and a JSONL's sidecar) may be written: not inside the
    dataset read, not a folder."""
    dataset = spec.dataset
    local = Path(dataset) if isinstance(dataset, Path) or Path(str(dataset)).exists() else None
    check_file_output(spec.out, "--out", input_dirs=[local])
    if spec.out.suffix == ".jsonl":
        check_file_output(sidecar_path(spec.out), "--out (its metadata sidecar)",
                          input_dirs=[local])


def _plan(spec: RunSpec) -> _Plan | None:
    """The model's spec and reader, the dataset's configs, kind and rows, and
    the prompt, each refused in one line before any model loads; None once a
    retrieval dataset's embeddings are written (they need no row plan)."""
    model, answer_reader = adapter_spec(spec.model, spec.reader)
    reader = DatasetReader(spec.dataset)
    configs = reader.configs(spec.config_arg)
    kind = dataset_kind(reader.manifest, f"{reader.source}/manifest.json")
    refuse_open(reader.manifest, configs, f"{reader.source}/manifest.json")
    label_rows.check_class_order(spec.reader.class_order, kind)
    if kind == RETRIEVAL:
        run_retrieval(spec, model, reader, configs)
        return None
    mode = mode_id(model, answer_reader, spec.model)
    prompt = spec.reader.prompt
    spaces: dict[str, Any] | None = None
    if kind in LABEL_SPACE_KINDS:
        spaces, rows = label_rows.label_plan(reader, configs, model.family, model.name,
                                             spec.limit, model.max_options, mode, kind)
        if model.family == "clip" and prompt is None:
            prompt = CLIP_LABEL_SPACE_PROMPT  # seed 002's zero-shot template
        elif answer_reader is not None:  # a vlm: a label-space prompt, refused before it loads
            prompt = resolve_label_space_prompt(prompt, answer_reader.mode, configs)
    else:
        rows = plan_rows(reader, configs, model.required_columns, spec.limit, model.max_options)
    return _Plan(model, answer_reader, mode, reader, reader.info, configs, kind, prompt, rows,
                 spaces)


def _run_key(spec: RunSpec, plan: _Plan, threads: int) -> dict[str, Any]:
    """What a resumed run must share with its journal's first part."""
    key = {
        "model": plan.model.name,
        "prompt": plan.prompt,
        "mode": plan.mode_id,
        "backend": backend_of(plan.model),
        "read_options": read_record(plan.answer_reader),
        "dataset_fingerprint": plan.info.fingerprint,
        "configs": plan.configs,
        "limit": spec.limit,
        "rows": len(plan.rows),
        "ids_sha256": hashlib.sha256("\n".join(p.id for p in plan.rows).encode()).hexdigest(),
        "threads": threads,
    }
    if plan.spaces is not None:
        key["kind"] = plan.kind
    if spec.reader.class_order is not None:
        key["class_order"] = spec.reader.class_order
    return key


def _load_checked(spec: RunSpec, plan: _Plan) -> Adapter:
    """The run's adapter (loaded unless given), checked against a label space's rows."""
    adapter = spec.model if not isinstance(spec.model, str) else load_model(
        spec, plan.model, plan.answer_reader, plan.prompt)
    if plan.spaces is not None:
        label_rows.preflight(adapter, plan.kind, plan.reader, plan.rows, plan.spaces)
    return adapter


def _predict_rows(spec: RunSpec, plan: _Plan, adapter: Adapter, ctx: DistContext, pdir: Path,
                  after_batch: Callable[[int], None] | None) -> dict[int, JournalRow]:
    """Journal this rank's rows not journaled yet; on rank 0, every rank's
    journaled rows (others get an empty dict)."""
    pdir.mkdir(parents=True, exist_ok=True)  # node-local disks on multi-node runs
    done = _check_done(read_journal_rows(pdir), plan.rows, pdir)
    mine = [p for p in plan.rows if ctx.owns(p.index)]
    todo = [p for p in mine if p.index not in done]
    if todo:
        run_batches(adapter, plan.reader, todo, spec.backend.batch_size,
                    journal_path(pdir, ctx.rank, ctx.world_size),
                    spec.progress and ctx.is_main, len(mine), after_batch,
                    desc=f"predict {plan.model.name}", spaces=plan.spaces)
    ctx.barrier()
    finished = ctx.gather_to_main(
        {i: row for i, row in read_journal_rows(pdir).items() if ctx.owns(i)}
    )
    return {i: row for part in finished for i, row in part.items()} if ctx.is_main else {}


def _check_done(done: dict[int, JournalRow], plan: Sequence[PlannedRow],
                pdir: Path) -> dict[int, JournalRow]:
    for index, (rid, *_) in done.items():
        if index >= len(plan) or plan[index].id != rid:
            raise VlmrobustError(
                f"{pdir}: journal row {index} (id {rid!r}) does not match the dataset; "
                "delete that folder to start over"
            )
    return done


def _merge(out: Path, plan: Sequence[PlannedRow], done: dict[int, JournalRow],
           pdir: Path, meta: dict[str, Any]) -> None:
    missing = [p for p in plan if p.index not in done]
    if missing:
        raise VlmrobustError(
            f"{pdir}: {len(missing)} rows have no prediction (first: {missing[0].id!r}); "
            "run the same command again to finish"
        )
    rows = [done[p.index] for p in plan]
    if any(r[1] is not None for r in rows) and not all(r[1] is not None for r in rows):
        raise VlmrobustError(f"{pdir}: some rows were journalled without logits; "
                             "pass --overwrite to start over")
    write_predictions(out, journal_table([p.id for p in plan], [p.config for p in plan], rows),
                      meta)


def _meta(adapter: Adapter, spec: RunSpec, plan: _Plan, threads: int,
          ctx: DistContext) -> dict[str, Any]:
    """The predictions' metadata (before local paths are taken out of it)."""
    info = plan.info
    meta = {
        "model": adapter.name,
        "family": adapter.family if adapter.family in FAMILIES else "other",
        "vision_encoder": getattr(adapter, "vision_encoder", None),
        "params": getattr(adapter, "params", None),
        "prompt_id": getattr(adapter, "prompt_id", plan.prompt),
        "dataset": {
            "name": info.name,
            "version": info.version,
            "fingerprint": info.fingerprint,
            "source": info.source,
            "sample": info.sample,
        },
        "configs": list(plan.configs),
        "n_rows": len(plan.rows),
        "limit": spec.limit,
        "adapter": plan.model.name,
        "batch_size": spec.backend.batch_size,
        "world_size": ctx.world_size,
        "threads": threads,
        "date": _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat(),
        "tool_version": __version__,
        "reference": reference_info(adapter, plan.model),
        # model groups (evaluation/model_groups.py) the adapter knows, e.g. EfficientNet-Lite's
        **{k: v for k, v in (getattr(adapter, "model_groups", None) or {}).items()
           if v is not None},
    }
    meta.update(mode=plan.mode_id, backend=getattr(adapter, "backend_kind", None))
    server = getattr(getattr(adapter, "backend", None), "server_record", None)
    if callable(server):  # a served model: URL, served name, server version
        meta["server"] = server()
    if plan.answer_reader is not None and plan.answer_reader.decides:
        meta["read_options"] = read_record(plan.answer_reader)
    if plan.spaces is not None:
        meta.update(label_rows.label_space_meta(adapter, plan.kind))
    return meta
