"""Bench-C generation at paper size, extrapolated from a measured run here.

Target (issue 17): the paper-sized Bench-C (849 kept questions × 96 copies,
500×375 sources) generated in under 10 minutes on 16 cores, disk written once.

What is measured, on real photos scaled to 500×375 with all 19 corruptions × 5
severities:

- ``corrupt``: CPU seconds to make one question's 96 copies in memory (what a
  worker does for each selector pass over the pool);
- ``encode``: CPU seconds to make and PNG-encode them (what a worker does for
  each kept question);
- ``select`` / ``write``: the parent's own CPU per question, with 2 workers,
  receiving the copies for the selectors, and receiving, hashing and writing
  the PNG rows;
- a whole ``build_dataset`` with ``workers=2`` and three cheap stand-in
  selectors (their model time is not Bench-C's own: a GPU's), whose wall time
  is printed beside the stage model's.

Paper size: a pool of about 4,000 candidates (about 200 per task type; the
849 kept are ≈21.2% of it), 3 selectors, 849 kept. On ``n`` cores:

    T(n) ≈ (pool · corrupt + kept · encode) / n + pool · select + kept · write

with ``select`` and ``write`` the parent's own CPU per question in each stage
(the copies of a question are made once for all the selectors).

The parallel part scales with the workers because each question is
independent (``ordered_map``); the run here checks the model against the
measured wall time. It also checks that the disk is written once: the work
directory never holds an image, and the bytes written equal the dataset's.

Run: python -m pytest tests/perf/test_bench_c_generation.py --benchmark-only -s \
         -p no:doctest -o addopts=""
"""

from __future__ import annotations

import io
import os
import time
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from vlmrobust.builders.bench_c.build import build_dataset, work_dir
from vlmrobust.builders.bench_c.copies import copy_tasks, corrupt_copies, encode_copies
from vlmrobust.builders.bench_c.sources import load_source
from vlmrobust.builders.bench_c.spec import parse_spec
from vlmrobust.builders.corruptions import ALL_CORRUPTIONS
from vlmrobust.builders.families import BuildOptions
from vlmrobust.core.writer import BuildInfo, write_dataset

N_QUESTIONS = int(os.environ.get("VLMROBUST_PERF_QUESTIONS", "8"))
SIZE = (500, 375)  # the paper's sources (ImageNet-like photos)
PAPER = {"pool": 4000, "selectors": 3, "kept": 849, "cores": 16}
TARGET_MINUTES = 10.0


def _photos() -> list[np.ndarray]:
    import skimage.data

    return [skimage.data.astronaut(), skimage.data.chelsea(), skimage.data.coffee(),
            skimage.data.rocket(), skimage.data.immunohistochemistry(),
            np.dstack([skimage.data.camera()] * 3)]


def _source(root: Path) -> None:
    from datasets import Features, List, Value
    from datasets import Image as HFImage

    rows = []
    photos = _photos()
    for i in range(N_QUESTIONS):
        img = Image.fromarray(photos[i % len(photos)]).resize(SIZE, Image.BICUBIC)
        if i >= len(photos):  # distinct pixels for every question
            img = img.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
        buf = io.BytesIO()
        img.save(buf, "PNG")
        rows.append({"id": f"q{i}", "image": {"bytes": buf.getvalue(), "path": None},
                     "question": f"What is shown in photo {i}?",
                     "options": ["a cat", "a cup", "a rocket", "a person"], "answer": i % 4,
                     "variant": "photo" if i % 2 else "scan"})
    feats = Features({"id": Value("string"), "image": HFImage(), "question": Value("string"),
                      "options": List(Value("string")), "answer": Value("int32"),
                      "variant": Value("string")})
    write_dataset(root / "src", configs={"main": rows}, features=feats, card="perf",
                  info=BuildInfo("perf", "1", 0))


class StandIn:
    """A selector whose answer moves with brightness; costs next to nothing."""

    family = "other"

    def __init__(self, channel: int) -> None:
        self.channel = channel

    def option_logits(self, rows: Any) -> np.ndarray:
        out = []
        for row in rows:
            v = np.asarray(row["image"])[::8, ::8, self.channel].mean() / 256 * 4
            out.append([-abs(v - j - 0.5) for j in range(4)])
        return np.array(out, np.float32)

    def embed_images(self, images: Any) -> np.ndarray:
        feats = [np.asarray(im, dtype=float)[::8, ::8].reshape(-1, 3).mean(axis=0) + 1e-3
                 for im in images]
        return np.array([f / np.linalg.norm(f) for f in feats], np.float32)


def _text(texts: Any) -> np.ndarray:
    out = np.array([[len(t), sum(map(ord, t)) % 97, 1.0] for t in texts], np.float64)
    return out / np.linalg.norm(out, axis=1, keepdims=True)


def _written() -> int:
    """Bytes this process and its reaped children have sent towards storage
    (Linux /proc/self/io ``write_bytes``: file pages dirtied, pipes excluded)."""
    with open("/proc/self/io", encoding="ascii") as fh:
        fields = dict(line.split(": ") for line in fh.read(4096).splitlines())
    return int(fields["write_bytes"])


def _cpu_per_question(fn: Any, tasks: Any) -> float:
    t0 = time.process_time()
    for t in tasks:
        fn(t)
    return (time.process_time() - t0) / len(tasks)


def _parent_cpu_per_question(tasks: Any, spec: Any, cands: Any, out: Path) -> tuple[float, float]:
    """The parent's own CPU per question in each stage, workers=2: receiving a
    question's arrays and wrapping them as PIL images (what selector_answers
    does besides the models); receiving its PNGs, hashing and writing them as
    dataset rows (what the build's writer does, as if every question were kept)."""
    from vlmrobust.builders.bench_c.build import _row, features
    from vlmrobust.builders.bench_c.copies import ordered_map
    from vlmrobust.builders.bench_c.work import variants

    c0 = time.process_time()
    for imgs in ordered_map(corrupt_copies, tasks, 2):
        [Image.fromarray(a) for a in imgs]
    select_q = (time.process_time() - c0) / len(tasks)

    def rows() -> Any:
        for c, datas in zip(cands, ordered_map(encode_copies, tasks, 2), strict=True):
            for (cor, sev), (data, _) in zip(variants(spec.corruptions, spec.severities),
                                             datas, strict=True):
                rid = f"{c.key}/{cor}/{sev}"
                yield _row(c, rid, data, cor, sev, 0.5, False)

    c0 = time.process_time()
    write_dataset(out, configs={"default": rows()}, features=features(False, spec.corruptions),
                  card="perf", info=BuildInfo("bench-c", "perf", 0))
    return select_q, (time.process_time() - c0) / len(tasks)


def test_bench_c_generation_extrapolates_under_target(benchmark: Any, tmp_path: Path) -> None:
    _source(tmp_path)
    raw = {"family": "bench-c", "name": "bench-c", "version": "perf", "seed": 0,
           "corruptions": list(ALL_CORRUPTIONS), "severities": [1, 2, 3, 4, 5],
           "selection": {"selectors": ["other:r", "other:g", "other:b"],
                         "image_embedder": "other:r", "batch_size": 32},
           "sources": [{"name": "perf", "path": "src", "category_column": "variant"}]}
    spec = parse_spec(raw, tmp_path / "bench-c.yaml")
    src = load_source(spec.sources[0], tmp_path)
    tasks = copy_tasks(src.candidates, spec.corruptions, spec.severities, spec.seed, None)
    load = os.getloadavg()[0]
    # warm up first: a fresh checkout compiles (and caches) the numba kernels on
    # the first call, seconds that no later question pays
    encode_copies(tasks[-1])
    corrupt_s = _cpu_per_question(corrupt_copies, tasks[:2])
    encode_s = _cpu_per_question(encode_copies, tasks[:2])
    select_q, write_q = _parent_cpu_per_question(tasks, spec, src.candidates, tmp_path / "w")

    models = {"other:r": StandIn(0), "other:g": StandIn(1), "other:b": StandIn(2)}
    out = tmp_path / "bench-c"

    def run() -> dict[str, Any]:
        t0, w0 = time.perf_counter(), _written()
        manifest = build_dataset(spec, spec.selection, [src],
                                 options=BuildOptions(out=out, progress=False, workers=2),
                                 loader=models.__getitem__, text_embedder=_text,
                                 keep_work=True)
        return {"manifest": manifest, "wall": time.perf_counter() - t0,
                "written": _written() - w0}

    got = benchmark.pedantic(run, rounds=1, iterations=1)
    manifest, wall = got["manifest"], got["wall"]
    pool, kept = N_QUESTIONS, len(manifest["selection"]["kept"])

    # the disk is written once: no image under the work dir, and everything the
    # build wrote (workers included) is the shards plus the card, manifest,
    # selection table and answer files
    work_files = [p for p in work_dir(out).rglob("*") if p.is_file()]
    assert work_files and all(p.suffix == ".json" for p in work_files)
    data_bytes = sum(p.stat().st_size for p in (out / "data").rglob("*.parquet"))
    assert manifest["num_rows"] == kept * 96 and data_bytes > 0
    written = got["written"]
    assert written < 1.25 * data_bytes, (written, data_bytes)

    # the pool is corrupted once for all selectors; kept questions once more
    model_here = (pool * corrupt_s + kept * encode_s) / 2 + pool * select_q + kept * write_q
    paper_parallel = (PAPER["pool"] * corrupt_s + PAPER["kept"] * encode_s) / PAPER["cores"]
    paper_serial = PAPER["pool"] * select_q + PAPER["kept"] * write_q
    paper_min = (paper_parallel + paper_serial) / 60
    print()
    print(f"load average {load:.1f} on {os.cpu_count()} cores; {pool} questions, {kept} kept, "
          f"{manifest['num_rows']} rows, {data_bytes / 2**20:.1f} MiB of shards, "
          f"{written / data_bytes:.2f}× that written to disk by the build")
    print(f"per question, one worker: 96 copies in memory {corrupt_s:.3f} s CPU; "
          f"made + PNG-encoded {encode_s:.3f} s CPU")
    print(f"per question, the parent: {select_q:.3f} s CPU receiving copies for the "
          f"selectors; {write_q:.3f} s CPU receiving, hashing and writing PNG rows")
    print(f"build here (workers=2, stand-in selectors): {wall:.1f} s wall; "
          f"stage model {model_here:.1f} s")
    print(f"paper size ({PAPER['pool']} pool, {PAPER['kept']} kept) on {PAPER['cores']} cores: "
          f"{paper_parallel / 60:.2f} min in workers + {paper_serial / 60:.2f} min in the parent "
          f"= {paper_min:.2f} min (target < {TARGET_MINUTES:.0f} min; selector model time "
          "excluded)")
    benchmark.extra_info.update({"corrupt_s": corrupt_s, "encode_s": encode_s, "wall_s": wall,
                                 "select_parent_s": select_q, "write_parent_s": write_q,
                                 "paper_minutes": paper_min})
    # issue 17's target; at the paper's real pool (4,000, not the 1,200 once assumed)
    # the parent's share (receiving every pool question's copies) grows past it
    assert paper_min < TARGET_MINUTES, (
        f"paper size extrapolates to {paper_min:.1f} min, over the {TARGET_MINUTES:.0f} min "
        f"target ({PAPER['pool']} × {select_q:.3f} s in the parent for the selectors)")
