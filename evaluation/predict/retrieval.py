"""`vlmrobust predict` on a dataset of kind ``retrieval``: per image row, the
adapter's image embedding and one embedding per caption (captions as they are,
no prompt template), written as a retrieval predictions file
(evaluation/predictions/retrieval.py) with its metadata.

An adapter takes part when it exposes both primitives, ``embed_images(images)``
and ``embed_captions(texts)`` (L2-normalised float arrays): the clip adapters
do; others are refused in one line before any row is read. Rows run in dataset
order, in batches; unlike option-logit runs there is no resume journal (a
5k-image CLIP run is minutes on a GPU), so a killed run starts again."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from vlmrobust import __version__
from vlmrobust.core.errors import VlmrobustError
from vlmrobust.core.text.public_names import publishable_meta
from vlmrobust.evaluation.predict.model import is_local_path, load_model
from vlmrobust.evaluation.predict.provenance import reference_info
from vlmrobust.evaluation.predict.rows import DatasetReader
from vlmrobust.evaluation.predict.spec import RunSpec
from vlmrobust.evaluation.predict.threads import choose_threads, set_threads
from vlmrobust.evaluation.predictions.write import partial_dir
from vlmrobust.models.base import FAMILIES, Adapter, AdapterSpec
from vlmrobust.models.runtime import to_pil

CAPTION_BATCH = 256


def check_retrieval_adapter(adapter: Any) -> None:
    """Refuse, in one line, an adapter without image and caption embeddings."""
    missing = [m for m in ("embed_images", "embed_captions") if not callable(getattr(adapter, m, None))]
    if missing:
        raise VlmrobustError(
            f"{getattr(adapter, 'name', adapter)}: retrieval needs image and caption embeddings, "
            f"and this model has no {' or '.join(missing)}; use an embedding model such as "
            "clip:ViT-B-32:openai")


def _rows(reader: DatasetReader, config: str, limit: int | None) -> list[int]:
    n = int(reader.manifest.get("configs", {}).get(config, 0))
    return list(range(n if limit is None else min(n, limit)))


def embed_dataset(adapter: Any, reader: DatasetReader, configs: Sequence[str],
                  batch_size: int, limit: int | None, progress: bool = True,
                  ) -> tuple[list[str], list[np.ndarray], list[np.ndarray]]:
    """(ids, image embeddings, caption embeddings per row) in dataset order."""
    from tqdm import tqdm

    check_retrieval_adapter(adapter)
    ids: list[str] = []
    images: list[np.ndarray] = []
    texts: list[np.ndarray] = []
    total = sum(len(_rows(reader, c, limit)) for c in configs)
    bar = tqdm(total=total, desc=f"predict {adapter.name}", unit="img", disable=not progress)

    def flush(batch: list[dict[str, Any]]) -> None:
        img = np.asarray(adapter.embed_images([
            to_pil(b["image"], f"{reader.where(b['_config'])} row {b['_row']}") for b in batch]),
            np.float32)
        captions = [str(c) for b in batch for c in b["captions"]]
        parts = [np.asarray(adapter.embed_captions(captions[a:a + CAPTION_BATCH]), np.float32)
                 for a in range(0, len(captions), CAPTION_BATCH)]
        txt = np.concatenate(parts) if parts else np.empty((0, img.shape[1]), np.float32)
        if img.shape[0] != len(batch) or txt.shape[0] != len(captions):
            raise VlmrobustError(f"{adapter.name}: returned {img.shape[0]} image and "
                                 f"{txt.shape[0]} caption embeddings for {len(batch)} images "
                                 f"and {len(captions)} captions")
        start = 0
        for i, b in enumerate(batch):
            ids.append(str(b["id"]))
            images.append(img[i])
            texts.append(txt[start:start + len(b["captions"])])
            start += len(b["captions"])
        bar.update(len(batch))

    try:
        for config in configs:
            batch: list[dict[str, Any]] = []
            for r, row in reader.iter_rows(config, set(_rows(reader, config, limit))):
                if not row.get("captions"):
                    raise VlmrobustError(f"{reader.where(config)} row {r}: no captions; rebuild "
                                         "the dataset (vlmrobust build retrieval)")
                batch.append({**row, "_config": config, "_row": r})
                if len(batch) == batch_size:
                    flush(batch)
                    batch = []
            if batch:
                flush(batch)
    finally:
        bar.close()
    return ids, images, texts


def embeddings_table(ids: Sequence[str], images: Sequence[Any],
                     texts: Sequence[Any]) -> Any:
    """The predictions table: id, image_embedding, text_embeddings (float32)."""
    import pyarrow as pa

    f32 = pa.list_(pa.float32())
    return pa.table({
        "id": pa.array(list(ids), pa.string()),
        "image_embedding": pa.array([np.asarray(v, np.float32) for v in images], f32),
        "text_embeddings": pa.array([[np.asarray(t, np.float32) for t in ts] for ts in texts],
                                    pa.list_(f32)),
    })


def predict_retrieval(load: Callable[[], Adapter], run: RunSpec, spec: AdapterSpec,
                      reader: DatasetReader, configs: Sequence[str], threads: int) -> Path:
    """Embed every image and caption of ``configs`` and write ``run.out`` with
    its metadata, checked against the dataset before it is written; ``threads``
    is the run's torch CPU thread count, recorded in the metadata."""
    from vlmrobust.evaluation.predictions.retrieval import embeddings_from_table
    from vlmrobust.evaluation.predictions.write import write_predictions_file
    from vlmrobust.evaluation.validate.retrieval import check_embeddings

    out, limit, batch_size = run.out, run.limit, run.backend.batch_size
    adapter = load()
    check_retrieval_adapter(adapter)
    ids, images, texts = embed_dataset(adapter, reader, configs, batch_size, limit, run.progress)
    table = embeddings_table(ids, images, texts)
    cols = {c: reader.read_columns(c, ["id", "captions"]) for c in configs}
    galleries = {}
    for c, col in cols.items():
        keep = len(_rows(reader, c, limit))
        galleries[c] = (np.asarray(col["id"][:keep], dtype=object),
                        np.asarray([len(x) for x in col["captions"][:keep]], dtype=np.int64))
    problems, _ = check_embeddings(embeddings_from_table(table, out), galleries)
    if problems:
        raise VlmrobustError(f"{adapter.name}: its embeddings are not usable — "
                             + "; ".join(p.one_line() for p in problems))
    info = reader.info
    meta = {
        "model": adapter.name,
        "family": adapter.family if adapter.family in FAMILIES else "other",
        "vision_encoder": getattr(adapter, "vision_encoder", None),
        "params": getattr(adapter, "params", None),
        "prompt_id": None,  # captions are embedded without a template
        "dataset": {"name": info.name, "version": info.version, "fingerprint": info.fingerprint,
                    "source": info.source, "sample": info.sample},
        "configs": list(configs), "n_rows": len(ids), "limit": limit,
        "adapter": spec.name, "batch_size": batch_size, "world_size": 1, "threads": threads,
        "date": _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat(),
        "tool_version": __version__, "reference": reference_info(adapter, spec),
        "kind": "retrieval", "mode": "embedding",
        **{k: v for k, v in (getattr(adapter, "model_groups", None) or {}).items()
           if v is not None},
    }
    write_predictions_file(out, table, publishable_meta(meta, run.name, is_local_path))
    return out


def run_retrieval(run: RunSpec, spec: AdapterSpec, reader: DatasetReader,
                  configs: list[str]) -> Path:
    """predict_dataset's branch for kind retrieval: threads chosen as for every run
    (recorded in the metadata), the model loaded only once the dataset is known."""
    chosen = choose_threads(run.backend.threads, partial_dir(run.out))
    saved = set_threads(chosen)
    try:
        return predict_retrieval(
            lambda: run.model if not isinstance(run.model, str) else load_model(
                run, spec, None, run.reader.prompt),
            run, spec, reader, configs, chosen)
    finally:
        set_threads(saved)


def write_retrieval_predictions(dataset_dir: str | Path, ids: Sequence[str],
                                image_embeddings: Sequence[Any],
                                text_embeddings: Sequence[Sequence[Any]], *, model: str,
                                family: str, out: str | Path,
                                configs: Sequence[str] | None = None,
                                vision_encoder: str | None = None, params: int | None = None,
                                model_id: str | None = None) -> Path:
    """For your own embedding model: check ``ids`` with their image embedding and
    one embedding per caption (in each row's ``captions`` order) against the
    retrieval dataset at ``dataset_dir`` (every row of ``configs``, default all)
    and write them to ``out`` (parquet, or JSONL + sidecar) with the metadata
    (the dataset's fingerprint included). Raises SubmissionError naming the
    rows at fault and writes nothing when they do not answer the dataset."""
    from vlmrobust.core.datadir import read_manifest
    from vlmrobust.core.errors import SubmissionError
    from vlmrobust.core.files.output_guard import check_file_output
    from vlmrobust.evaluation.predictions.meta import sidecar_path
    from vlmrobust.evaluation.predictions.retrieval import embeddings_from_table
    from vlmrobust.evaluation.predictions.write import write_predictions_file
    from vlmrobust.evaluation.schemas import check_schema
    from vlmrobust.evaluation.validate.dataset_index import manifest_configs
    from vlmrobust.evaluation.validate.retrieval import check_embeddings, gallery, is_retrieval

    dataset_dir, out = Path(dataset_dir), Path(out)
    if not is_retrieval(dataset_dir):
        raise SubmissionError(f"{dataset_dir}: not a retrieval dataset; use write_predictions")
    check_file_output(out, "out", input_dirs=[dataset_dir])
    if out.suffix == ".jsonl":
        check_file_output(sidecar_path(out), "out (its metadata sidecar)", input_dirs=[dataset_dir])
    manifest = read_manifest(dataset_dir)
    chosen = list(configs) if configs is not None else manifest_configs(manifest, dataset_dir)
    if len(ids) != len(image_embeddings) or len(ids) != len(text_embeddings):
        raise SubmissionError("write_retrieval_predictions: give one image embedding and one list "
                              "of caption embeddings per id")
    table = embeddings_table(ids, image_embeddings, text_embeddings)
    problems, _ = check_embeddings(embeddings_from_table(table, out),
                                   {c: gallery(dataset_dir, c) for c in chosen})
    if problems:
        raise SubmissionError(f"{out}: does not match {dataset_dir}: "
                              + "; ".join(p.one_line() for p in problems))
    spec = manifest.get("spec", {})
    meta: dict[str, Any] = {
        "model": model, "family": family, "vision_encoder": vision_encoder, "params": params,
        "prompt_id": None, "kind": "retrieval", "mode": "embedding",
        "dataset": {"name": str(spec.get("name", "")), "version": str(spec.get("version", "")),
                    "fingerprint": str(manifest.get("fingerprint", ""))},
        "configs": chosen, "n_rows": len(ids),
        "date": _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat(),
        "tool_version": __version__,
    }
    if model_id is not None:
        meta["model_id"] = model_id
    check_schema(meta, "predictions-meta", "write_retrieval_predictions metadata")
    write_predictions_file(out, table, meta)
    return out
