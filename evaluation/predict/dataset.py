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

import dataclasses
import datetime as _dt
import hashlib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from vlmrobust import __version__
from vlmrobust.core.cpus import check_threads, default_threads
from vlmrobust.core.errors import VlmrobustError
from vlmrobust.core.files.output_guard import check_file_output
from vlmrobust.core.kinds import LABEL_SPACE_KINDS, RETRIEVAL, dataset_kind, refuse_open
from vlmrobust.core.text.public_names import looks_like_path, publishable_meta
from vlmrobust.evaluation.predict import label_rows
from vlmrobust.evaluation.predict.batches import run_batches
from vlmrobust.evaluation.predict.distributed import DistContext, init_distributed, local_world_size
from vlmrobust.evaluation.predict.provenance import reference_info
from vlmrobust.evaluation.predict.retrieval import run_retrieval
from vlmrobust.evaluation.predict.rows import DatasetReader, PlannedRow, plan_rows
from vlmrobust.evaluation.predictions.meta import sidecar_path
from vlmrobust.evaluation.predictions.write import (
    JournalRow,
    check_journal,
    journal_path,
    journal_table,
    partial_dir,
    read_journal_rows,
    recorded_run,
    remove_partial,
    start_journal,
    write_predictions,
)
from vlmrobust.models import load_adapter, parse_adapter_name
from vlmrobust.models.base import FAMILIES, Adapter, AdapterSpec
from vlmrobust.models.prompts import CLIP_LABEL_SPACE_PROMPT, resolve_label_space_prompt
from vlmrobust.models.readers import Reader, ReadOptions, parse_mode
from vlmrobust.models.readers.base import CLASS_LOGITS, EMBEDDING


def predict_dataset(
    model: str | Adapter,
    dataset: str | Path,
    out: str | Path,
    config: str | None = None,
    batch_size: int = 16,
    device: str | None = None,
    limit: int | None = None,
    progress: bool = True,
    prompt: str | None = None,
    after_batch: Callable[[int], None] | None = None,
    threads: int | None = None,
    overwrite: bool = False,
    trust_remote_code: bool = False,  # vlm: let the checkpoint run its own modelling code
    mode: str | None = None,
    read_options: ReadOptions | None = None,
    device_map: str | None = None,
    endpoint: Mapping[str, Any] | None = None,
    name: str | None = None,
    class_order: str | None = None,
) -> Path:
    """Predict option logits for every row of ``dataset`` (all configs, or ``config``)
    and write ``out`` (parquet: id, logits list<float32>, config; its metadata embedded, or
    a ``<out>.meta.yaml`` sidecar for .jsonl).

    ``model`` is an adapter name (``classifier:efficientnet-lite0``, ...) or a loaded
    adapter; ``limit`` keeps the first rows of each config; ``after_batch(n)`` is
    called after the n-th batch of this run is journaled (a hook for tests and
    progress reporting); ``threads`` sets torch's CPU threads for this call only
    (default: chosen once per run by :func:`choose_threads`, recorded in the
    resume journal and the metadata; a resumed run reuses the journal's count);
    ``overwrite`` discards an unfinished run's journal instead of resuming it;
    ``mode`` is a vlm's answer mode (``vlmrobust.models.readers``: letter,
    likelihood:sum|avg|cfg=T, generate, open-world), ``read_options`` the
    generating modes' limits, ``device_map`` shards a vlm over the visible
    devices (accelerate), ``endpoint`` holds an ``endpoint:`` model's connection
    options (``url``, ``api_key_env``, ``concurrency``, ``timeout_s``, ``retries``,
    ``cache_dir``, ``use_cache``); ``name`` is the model's public name (without
    it, no local path of the model reaches the metadata:
    :func:`vlmrobust.core.text.public_names.publishable_meta`); ``class_order``
    (fixed | random) lists a label space's classes in a vlm's closed-world
    prompt in label-space order or shuffled per row. The journal is
    created only once the model has loaded. Returns ``out``.
    """
    out = Path(out)
    if batch_size < 1:
        raise VlmrobustError(f"--batch-size must be >= 1, got {batch_size}")
    if threads is not None:
        check_threads(threads)
    if name is not None and (not name.strip() or len(name) > 300):
        raise VlmrobustError("--name must be 1-300 characters, not blank")
    if out.suffix not in (".parquet", ".jsonl"):
        raise VlmrobustError(f"--out {out}: use a .parquet (or .jsonl) file name")
    if device_map is not None and device is not None:
        raise VlmrobustError("--device-map places the model on every visible device; "
                             "drop --device (or --device-map)")
    local = Path(dataset) if isinstance(dataset, Path) or Path(str(dataset)).exists() else None
    check_file_output(out, "--out", input_dirs=[local])
    if out.suffix == ".jsonl":
        check_file_output(sidecar_path(out), "--out (its metadata sidecar)", input_dirs=[local])
    spec, answer_reader = _spec_for(model, prompt, mode, read_options)
    mode_id = _mode_id(spec, answer_reader, model)
    reader = DatasetReader(dataset)
    configs = reader.configs(config)
    kind = dataset_kind(reader.manifest, f"{reader.source}/manifest.json")
    refuse_open(reader.manifest, configs, f"{reader.source}/manifest.json")
    label_rows.check_class_order(class_order, kind)
    if kind == RETRIEVAL:  # image and caption embeddings, not option logits
        return run_retrieval(model, spec, reader, configs, out, device, prompt, batch_size,
                             limit, progress, threads, name)
    spaces: dict[str, Any] | None = None
    if kind in LABEL_SPACE_KINDS:
        spaces, plan = label_rows.label_plan(reader, configs, spec.family, spec.name, limit,
                                             spec.max_options, mode_id, kind)
        if spec.family == "clip" and prompt is None:
            prompt = CLIP_LABEL_SPACE_PROMPT  # seed 002's zero-shot template
        elif answer_reader is not None:  # a vlm: a label-space prompt, refused before it loads
            prompt = resolve_label_space_prompt(prompt, answer_reader.mode, configs)
    else:
        plan = plan_rows(reader, configs, spec.required_columns, limit, spec.max_options)
    info = reader.info

    ctx = init_distributed(device)
    saved_threads = None
    try:
        if device_map is not None and ctx.world_size > 1:
            raise VlmrobustError("--device-map shards one process's model over every visible "
                                 "GPU; run it without torchrun (torchrun is for models that "
                                 "fit one GPU)")
        pdir = partial_dir(out)
        if ctx.is_main and overwrite:
            remove_partial(pdir)
        chosen = int(ctx.broadcast_from_main(choose_threads(threads, pdir) if ctx.is_main else 0))
        saved_threads = _set_threads(chosen)
        run_key = {
            "model": spec.name,
            "prompt": prompt,
            "mode": mode_id,
            "backend": _backend_of(spec),
            "read_options": _read_record(answer_reader),
            "dataset_fingerprint": info.fingerprint,
            "configs": configs,
            "limit": limit,
            "rows": len(plan),
            "ids_sha256": hashlib.sha256("\n".join(p.id for p in plan).encode()).hexdigest(),
            "threads": chosen,
        }
        if spaces is not None:
            run_key["kind"] = kind
        if class_order is not None:
            run_key["class_order"] = class_order
        if ctx.is_main:
            check_journal(pdir, run_key)  # a mismatch fails before the model loads
        adapter = model if not isinstance(model, str) else _load(
            spec, device, prompt, trust_remote_code, answer_reader, read_options, device_map,
            endpoint, class_order)
        if spaces is not None:
            label_rows.preflight(adapter, kind, reader, plan, spaces)
        ctx.barrier()
        if ctx.is_main:
            start_journal(pdir, run_key)
        ctx.barrier()
        pdir.mkdir(parents=True, exist_ok=True)  # node-local disks on multi-node runs
        done = _check_done(read_journal_rows(pdir), plan, pdir)
        mine = [p for p in plan if ctx.owns(p.index)]
        todo = [p for p in mine if p.index not in done]
        if todo:
            run_batches(adapter, reader, todo, batch_size, journal_path(pdir, ctx.rank,
                         ctx.world_size), progress and ctx.is_main, len(mine), after_batch,
                         desc=f"predict {spec.name}", spaces=spaces)
        ctx.barrier()
        finished = ctx.gather_to_main(
            {i: row for i, row in read_journal_rows(pdir).items() if ctx.owns(i)}
        )
        if ctx.is_main:
            merged = {i: row for part in finished for i, row in part.items()}
            meta = _meta(adapter, spec, info, configs, prompt, limit, len(plan), batch_size,
                         chosen, ctx)
            meta.update(mode=mode_id, backend=getattr(adapter, "backend_kind", None))
            server = getattr(getattr(adapter, "backend", None), "server_record", None)
            if callable(server):  # a served model: URL, served name, server version
                meta["server"] = server()
            if answer_reader is not None and answer_reader.decides:
                meta["read_options"] = _read_record(answer_reader)
            if spaces is not None:
                meta.update(label_rows.label_space_meta(adapter, kind))
            _merge(out, plan, merged, pdir, publishable_meta(meta, name, is_local_path))
        ctx.barrier()
        remove_partial(pdir)
    finally:
        _set_threads(saved_threads)
        ctx.close()
    return out


def choose_threads(threads: int | None, pdir: Path) -> int:
    """The torch CPU threads of one run, chosen once: the float rounding of the
    logits depends on the count, so a resumed run must use its first part's.
    An explicit ``threads`` wins, unless the unfinished run in ``pdir`` used
    another count (refused: its rows would not match an uninterrupted run).
    Otherwise the journal's count, or for a new run
    :func:`vlmrobust.core.cpus.default_threads` (the quota'd CPUs other
    processes leave idle) shared among the processes torchrun put on this host."""
    old = recorded_run(pdir) or {}
    recorded = old.get("threads")
    if not (isinstance(recorded, int) and not isinstance(recorded, bool) and recorded >= 1):
        recorded = None
    if threads is not None:
        if recorded is not None and recorded != threads:
            raise VlmrobustError(
                f"{pdir} holds an unfinished run computed with --threads {recorded} (the logits' "
                f"rounding depends on it); resume with --threads {recorded} or without "
                "--threads, or pass --overwrite to start over"
            )
        return threads
    if recorded is not None:
        return recorded
    return max(1, default_threads() // local_world_size())


def _set_threads(threads: int | None) -> int | None:
    """Set torch's intra-op CPU threads; returns the previous value (None: unchanged)."""
    if threads is None:
        return None
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    return previous


def _spec_for(model: str | Adapter, prompt: str | None, mode: str | None,
              read_options: ReadOptions | None) -> tuple[AdapterSpec, Reader | None]:
    """The adapter spec and, for a vlm, its reader; a bad prompt, mode or
    option fails here, before any model loads."""
    if isinstance(model, str):
        spec = parse_adapter_name(model)
    else:
        from vlmrobust.models.classifiers.adapter import CLASSIFIER_COLUMNS

        cols = CLASSIFIER_COLUMNS if model.family == "classifier" else AdapterSpec.required_columns
        spec = AdapterSpec(model.name, model.family, model.name, required_columns=cols,
                           max_options=getattr(model, "max_options", None))
    if spec.family == "classifier":
        from vlmrobust.models.prompts import resolve_classifier_prompt

        resolve_classifier_prompt(prompt)  # a typo fails before the model loads
    reader: Reader | None = None
    if spec.family == "vlm":
        loaded = None if isinstance(model, str) else getattr(model, "reader", None)
        if loaded is not None and mode is not None and mode != loaded.mode:
            raise VlmrobustError(f"--mode {mode}: the loaded adapter reads {loaded.mode}")
        reader = loaded if loaded is not None else parse_mode(mode, read_options)
        if isinstance(model, str):
            spec = dataclasses.replace(spec, max_options=reader.max_options)
    elif mode is not None and mode != FIXED_MODES.get(spec.family):
        fixed = FIXED_MODES.get(spec.family, "its own reading")
        raise VlmrobustError(f"--mode {mode}: answer modes apply to vlm models; {spec.name} "
                             f"is read by {fixed}")
    elif read_options is not None and read_options != ReadOptions():
        raise VlmrobustError("--max-new-tokens, --stop and --answer-cue apply to vlm models")
    return spec, reader


# how the adapters that are not read through a backend turn a row into logits
FIXED_MODES = {"classifier": CLASS_LOGITS, "other": CLASS_LOGITS, "clip": EMBEDDING}


def _mode_id(spec: AdapterSpec, reader: Reader | None, model: str | Adapter) -> str | None:
    if reader is not None:
        return reader.mode
    return getattr(model, "mode", None) or FIXED_MODES.get(spec.family)


def _backend_of(spec: AdapterSpec) -> str | None:
    """The backend a vlm name runs on (``vlm:`` in process: hf; ``endpoint:``)."""
    if spec.family != "vlm":
        return None
    prefix = spec.name.partition(":")[0]
    return "hf" if prefix == "vlm" else prefix


def _read_record(reader: Reader | None) -> dict[str, Any] | None:
    """The generating readers' limits, which change their answers."""
    options = getattr(reader, "options", None)
    return options.record() if isinstance(options, ReadOptions) else None


def _load(spec: AdapterSpec, device: str | None, prompt: str | None,
          trust_remote_code: bool = False, reader: Reader | None = None,
          read_options: ReadOptions | None = None, device_map: str | None = None,
          endpoint: Mapping[str, Any] | None = None, class_order: str | None = None) -> Adapter:
    opts: dict[str, Any] = {"prompt": prompt} if prompt is not None else {}
    if class_order is not None:
        if spec.family != "vlm":
            raise VlmrobustError(f"--class-order applies to vlm models, not {spec.name}")
        opts["class_order"] = class_order
    if spec.name.startswith("endpoint:"):
        opts["endpoint"] = dict(endpoint or {})
    elif endpoint:
        raise VlmrobustError(f"--endpoint-* options apply to endpoint: models, not {spec.name}")
    if trust_remote_code:
        if spec.family != "vlm":
            raise VlmrobustError(f"--trust-remote-code applies to vlm models, not {spec.name}")
        opts["trust_remote_code"] = True
    if device_map is not None:
        if spec.family != "vlm":
            raise VlmrobustError(f"--device-map applies to vlm models, not {spec.name}")
        opts["device_map"] = device_map
    if reader is not None:
        opts.update(mode=reader.mode, read_options=read_options)
    return load_adapter(spec.name, device=device, **opts)



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


def is_local_path(part: str) -> bool:
    # "vlm:runs/tiny" loads a folder when one exists there, as transformers does
    return looks_like_path(part) or ("/" in part and Path(part).expanduser().exists())


def _meta(adapter: Adapter, spec: AdapterSpec, info: Any, configs: Sequence[str],
          prompt: str | None, limit: int | None, n_rows: int, batch_size: int,
          threads: int, ctx: DistContext) -> dict[str, Any]:
    return {
        "model": adapter.name,
        "family": adapter.family if adapter.family in FAMILIES else "other",
        "vision_encoder": getattr(adapter, "vision_encoder", None),
        "params": getattr(adapter, "params", None),
        "prompt_id": getattr(adapter, "prompt_id", prompt),
        "dataset": {
            "name": info.name,
            "version": info.version,
            "fingerprint": info.fingerprint,
            "source": info.source,
            "sample": info.sample,
        },
        "configs": list(configs),
        "n_rows": n_rows,
        "limit": limit,
        "adapter": spec.name,
        "batch_size": batch_size,
        "world_size": ctx.world_size,
        "threads": threads,
        "date": _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat(),
        "tool_version": __version__,
        "reference": reference_info(adapter, spec),
        # model groups (evaluation/model_groups.py) the adapter knows, e.g. EfficientNet-Lite's
        **{k: v for k, v in (getattr(adapter, "model_groups", None) or {}).items()
           if v is not None},
    }
