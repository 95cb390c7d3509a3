"""Validation of retrieval predictions (kind ``retrieval``) against their dataset:
every row of the chosen configs answered exactly once, one embedding per
caption, one width D throughout, finite non-zero vectors, and metadata that
names this build. Every kind of problem is reported at once, in one line; a
valid file gives a :class:`RetrievalReport` that the scorer reads."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from vlmrobust.core.errors import SubmissionError, VlmrobustError
from vlmrobust.core.kinds import RETRIEVAL, dataset_kind
from vlmrobust.evaluation.predictions.meta import (
    load_meta,
    meta_problems,
    refuse_other_dataset,
    sidecar_path,
)
from vlmrobust.evaluation.predictions.read import MAX_EXAMPLES, Problem
from vlmrobust.evaluation.predictions.retrieval import BYTES_PER_ROW, EmbeddingFile, read_embeddings
from vlmrobust.evaluation.validate.dataset_cache import DatasetCache

BYTES_BASE = 16 * 1024 * 1024


@dataclass(frozen=True)
class RetrievalConfig:
    """One config's gallery: ``rows[i]`` is the file row of dataset row i (in
    dataset order) and ``n_captions[i]`` its number of captions."""

    name: str
    ids: NDArray[np.object_]
    rows: NDArray[np.int64]
    n_captions: NDArray[np.int64]

    def embeddings(self, ef: EmbeddingFile) -> tuple[NDArray[np.float32], NDArray[np.float32],
                                                     NDArray[np.int64]]:
        """(image (n, D), text (m, D), text_image (m,)) in dataset order."""
        offsets = ef.text_offsets
        starts, counts = offsets[self.rows], self.n_captions
        # every caption's position in ef.text: one arange per row, concatenated
        index = np.repeat(starts - np.concatenate([[0], np.cumsum(counts)[:-1]]), counts) \
            + np.arange(int(counts.sum()))
        text_image = np.repeat(np.arange(len(self.rows)), counts)
        return ef.image[self.rows], ef.text[index], text_image


@dataclass(frozen=True)
class RetrievalReport:
    dataset_dir: Path | None
    name: str
    manifest: Mapping[str, Any]
    configs: tuple[RetrievalConfig, ...]
    file: EmbeddingFile
    meta: Mapping[str, Any] | None
    # a `predict --limit N` run: {"limit", "rows", "of"} (galleries cut to the
    # first N images of each config: smaller galleries, so not comparable)
    partial: Mapping[str, int] | None = None

    @property
    def sha256(self) -> str | None:
        return self.file.sha256

    @property
    def dataset_name(self) -> str:
        return self.name

    def summary(self) -> str:
        n = sum(len(c.rows) for c in self.configs)
        m = sum(int(c.n_captions.sum()) for c in self.configs)
        from vlmrobust.evaluation.validate.check import partial_note

        return (f"OK: {self.file.path} answers {n} images and {m} captions of {self.name or 'dataset'} "
                f"configs {', '.join(c.name for c in self.configs)} (embeddings, D = {self.file.dim})"
                + (f"; {partial_note(self.partial)}" if self.partial else ""))


def is_retrieval(dataset_dir: Path | str) -> bool:
    """Whether the dataset directory's manifest declares kind ``retrieval``."""
    from vlmrobust.core.datadir import read_manifest

    return dataset_kind(read_manifest(Path(dataset_dir))) == RETRIEVAL


def _configs_of(manifest: Mapping[str, Any], known: list[str], config: str | None,
                meta: Mapping[str, Any] | None) -> list[str]:
    if config is not None:
        if config not in known:
            raise VlmrobustError(f"config {config!r} is not in the dataset (its configs: "
                                 f"{', '.join(known)})")
        return [config]
    listed = meta.get("configs") if meta is not None else None
    if isinstance(listed, list) and listed:
        chosen = [c for c in known if c in listed]
        if chosen:
            return chosen
    return known


def gallery(dataset_dir: Path, config: str) -> tuple[NDArray[np.object_], NDArray[np.int64]]:
    import pyarrow.compute as pc

    from vlmrobust.core.datadir import read_table

    t = read_table(dataset_dir, config, columns=["id", "captions"])
    ids = np.asarray(t.column("id").to_pylist(), dtype=object)
    counts = np.asarray(pc.list_value_length(t.column("captions").combine_chunks()).fill_null(0),
                        dtype=np.int64)
    return ids, counts


def check_embeddings(ef: EmbeddingFile, galleries: Mapping[str, tuple[NDArray[np.object_],
                                                                     NDArray[np.int64]]],
                     other_ids: frozenset[str] = frozenset(),
                     ) -> tuple[list[Problem], list[RetrievalConfig]]:
    """Problems of ``ef`` against the galleries (config -> (ids, caption counts)),
    and each config's alignment when there are none. ``other_ids`` (rows of the
    dataset's other configs, e.g. under ``--config``) are ignored, not unknown."""
    problems = list(ef.problems)
    pos: dict[str, int] = {}
    dup: list[int] = []
    for i, rid in enumerate(ef.ids.tolist()):
        if isinstance(rid, str):
            if rid in pos:
                dup.append(i)
            else:
                pos[rid] = i
    if dup:
        problems.append(ef.problem("duplicate id", "give each dataset row once", dup))
    wanted = {rid for ids, _ in galleries.values() for rid in ids.tolist()}
    extra = [i for rid, i in pos.items() if rid not in wanted and rid not in other_ids]
    if extra:
        problems.append(ef.problem("unknown id", "ids must be rows of the dataset's chosen "
                                   f"configs ({', '.join(galleries)})", sorted(extra)))
    out = []
    wrong_count: list[int] = []
    for name, (ids, counts) in galleries.items():
        missing = [rid for rid in ids.tolist() if rid not in pos]
        if missing:
            shown = ", ".join(repr(m) for m in missing[:MAX_EXAMPLES])
            problems.append(Problem("missing rows", f"config {name}: {len(missing)} of its "
                                    f"{len(ids)} images have no row ({shown}"
                                    f"{' …' if len(missing) > MAX_EXAMPLES else ''}); predict "
                                    "every image of the config"))
            continue
        rows = np.asarray([pos[rid] for rid in ids.tolist()], dtype=np.int64)
        wrong_count += [int(r) for r, c in zip(rows.tolist(), counts.tolist(), strict=True)
                        if ef.text_counts[r] >= 0 and ef.text_counts[r] != c]
        out.append(RetrievalConfig(name, ids, rows, counts))
    if wrong_count:
        problems.append(ef.problem("caption count mismatch", "text_embeddings must hold one "
                                   "embedding per caption of the row, in its captions order",
                                   sorted(wrong_count)))
    # rows of the wrong shape hold NaN and are reported already: check values only without them
    if not any(p.kind.startswith(("image_embedding", "text_embeddings")) for p in ef.problems):
        # (x == 0).all, not |x|.sum == 0: a float32 sum of values near its maximum
        # overflows (a warning on the user's terminal) though the vector is fine
        bad = np.flatnonzero(~np.isfinite(ef.image).all(axis=1) | (ef.image == 0).all(axis=1))
        if ef.text.shape[0]:
            text_bad = ~np.isfinite(ef.text).all(axis=1) | (ef.text == 0).all(axis=1)
            owner = np.repeat(np.arange(ef.n_rows), np.maximum(ef.text_counts, 0))
            bad = np.union1d(bad, owner[text_bad])
        if bad.size:
            problems.append(ef.problem("embedding not finite or all zeros", "every embedding must "
                                   "be finite with a direction (non-zero)", bad))
    return problems, out


def validate_retrieval(dataset_dir: Path | str, predictions: Path | str,
                       config: str | None = None, cache: DatasetCache | None = None,
                       ) -> RetrievalReport:
    """Validate retrieval ``predictions`` against ``dataset_dir`` (configs: ``config``,
    else those the metadata lists, else all). Raises SubmissionError naming every
    kind of problem; writes nothing. ``cache``: as evaluation.validate.check.validate."""
    dataset_dir, predictions = Path(dataset_dir), Path(predictions)
    cache = cache if cache is not None else DatasetCache()
    kind = dataset_kind(cache.manifest(dataset_dir))
    if kind != RETRIEVAL:
        raise VlmrobustError(f"{dataset_dir}: not a retrieval dataset (kind {kind!r})")
    cache.verify_shards(dataset_dir)
    facts = cache.facts(dataset_dir)
    manifest, known, max_rows = facts.manifest, list(facts.known), facts.max_rows
    try:
        ef = read_embeddings(predictions, max_rows, BYTES_BASE + BYTES_PER_ROW * max_rows)
    except SubmissionError:
        refuse_other_dataset(predictions, manifest, dataset_dir)  # the cause, not a cap
        raise
    extra: list[Problem] = []
    meta: dict[str, Any] | None
    try:
        meta = load_meta(predictions, ef.embedded_meta, ef.sha256)
    except SubmissionError as exc:
        meta, extra = None, [Problem("metadata", str(exc))]
    if meta is not None:
        where = (f"{predictions} (its metadata)" if ef.embedded_meta is not None
                 else str(sidecar_path(predictions)))
        extra += [Problem(k, d) for k, d in meta_problems(meta, manifest, where)]
        listed = meta.get("configs")
        unknown = [c for c in listed if c not in known] if isinstance(listed, list) else []
        if unknown:
            extra.append(Problem("unknown config in metadata", f"{where} lists configs "
                                 f"{unknown[:MAX_EXAMPLES]} the dataset lacks (its configs: "
                                 f"{', '.join(known)})"))
    chosen = _configs_of(manifest, known, config, meta)
    galleries = {c: cache.gallery(dataset_dir, c, gallery) for c in chosen}
    other = frozenset(rid for c in known if c not in chosen
                      for rid in cache.gallery(dataset_dir, c, gallery)[0].tolist())
    galleries, partial = limited_galleries(galleries, ef, meta)
    problems, aligned = check_embeddings(ef, galleries, other)
    problems = extra + problems
    if problems:
        kinds = "; ".join(p.one_line() for p in problems)
        raise SubmissionError(f"{predictions} does not match {dataset_dir}: {len(problems)} kind"
                              f"{'s' if len(problems) != 1 else ''} of problem — {kinds}")
    name = str(manifest.get("spec", {}).get("name", ""))
    return RetrievalReport(dataset_dir, name, manifest, tuple(aligned), ef, meta, partial)


def limited_galleries(galleries: Mapping[str, tuple[NDArray[np.object_], NDArray[np.int64]]],
                      ef: EmbeddingFile, meta: Mapping[str, Any] | None,
                      ) -> tuple[dict[str, tuple[NDArray[np.object_], NDArray[np.int64]]],
                                 dict[str, int] | None]:
    """As evaluation.validate.limited_run: when the metadata records ``limit`` N
    and the file holds exactly the first N images of every config, the galleries
    shrink to them and the run is partial; anything else is left to the
    missing-rows check."""
    limit = meta.get("limit") if meta is not None else None
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
        return dict(galleries), None
    answered = set(ef.ids.tolist())
    total = sum(len(ids) for ids, _ in galleries.values())
    if all(rid in answered for ids, _ in galleries.values() for rid in ids.tolist()):
        return dict(galleries), None
    cut = {c: (ids[:limit], counts[:limit]) for c, (ids, counts) in galleries.items()}
    rows = sum(len(ids) for ids, _ in cut.values())
    if rows != len(answered) or not all(rid in answered for ids, _ in cut.values()
                                        for rid in ids.tolist()):
        return dict(galleries), None
    return cut, {"limit": limit, "rows": rows, "of": total}
