"""`predict` against a hand-written batched forward pass of the same model on
the same inputs (issue 17 target: within 5 %), and `predict`'s default thread
count on a loaded machine.

Both read the same parquet dataset of 48 distinct photos (224-320 px crops),
decode, preprocess with the model's own transform and run the model forward in
the adapter's micro-batches; `predict` adds its journal, row planning, option
gathering, metadata and the prefetch thread. On CPU both run with one torch
thread with every thread of this process pinned to one core (the least busy
one), so that other processes on a shared machine take time from both alike;
runs alternate (predict first in even rounds, hand-written first in odd ones),
the classifier's logits cache cleared before each. Timed in wall clock and in
CPU time of the whole process (every thread: what the work costs, nearly blind
to waiting for the core); for each, two ratios of hand-written time / predict
time (predict's share of the hand-written throughput; >= 0.95 meets the
target): best of rounds against best of rounds, and the median over rounds of
the two runs of one round (back to back, so under the same load). On a GPU (when there is
one) the same comparison runs in bf16 with SDPA attention (a ViT-B-32 CLIP,
random weights) and EfficientNet-Lite0; without one that test is skipped with
the reason printed.

Run: python -m pytest tests/perf/test_predict_throughput.py --benchmark-only -s \
         -p no:doctest -o addopts=""
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from vlmrobust.evaluation.predict.spec import BackendOptions, RunSpec

torch = pytest.importorskip("torch")

N_IMAGES = 48
BATCH = 32
ROUNDS = int(os.environ.get("VLMROBUST_PERF_ROUNDS", "9"))
TARGET = 0.95  # predict at >= 95 % of the hand-written throughput


def _dataset(out: Path, n: int = N_IMAGES) -> Path:
    import datasets
    import skimage.data
    from PIL import Image

    from vlmrobust.core.writer import BuildInfo, write_dataset

    photos = [skimage.data.astronaut(), skimage.data.chelsea(), skimage.data.coffee()]
    rng = np.random.default_rng(0)
    rows = []
    for i in range(n):
        photo = photos[i % 3]
        side = int(rng.integers(224, 321))
        top = int(rng.integers(0, photo.shape[0] - 224))
        left = int(rng.integers(0, photo.shape[1] - 224))
        crop = Image.fromarray(photo[top:top + 224, left:left + 224]).resize((side, side))
        buf = io.BytesIO()
        crop.save(buf, format="PNG")
        ids = [int(x) for x in rng.choice(1000, 5, replace=False)]
        rows.append({"id": f"q{i:03d}", "image": {"bytes": buf.getvalue(), "path": None},
                     "question": "What is shown?", "options": [f"c{c}" for c in ids],
                     "answer": 0, "option_class_ids": ids})
    features = datasets.Features({
        "id": datasets.Value("string"), "image": datasets.Image(),
        "question": datasets.Value("string"), "options": datasets.List(datasets.Value("string")),
        "answer": datasets.Value("int32"),
        "option_class_ids": datasets.List(datasets.Value("int32"))})
    write_dataset(out, configs={"default": rows}, features=features, card="perf",
                  info=BuildInfo("imagenet-mcq", "perf", 0))
    return out


def _hand_written(adapter: Any, ds: Path) -> np.ndarray:
    """Read, decode, preprocess, forward in micro-batches, gather the options."""
    import pyarrow.parquet as pq
    from PIL import Image

    model = adapter.model
    step = adapter.micro_batch or BATCH
    out = []
    for path in sorted((ds / "data" / "default").glob("*.parquet")):
        table = pq.read_table(path, columns=["image", "option_class_ids"])
        images = [r["bytes"] for r in table.column("image").to_pylist()]
        ids = table.column("option_class_ids").to_pylist()
        for b in range(0, len(images), BATCH):
            pix = np.stack([model.preprocess(Image.open(io.BytesIO(data)).convert("RGB"))
                            for data in images[b:b + BATCH]])
            x = torch.from_numpy(pix).to(adapter.device)
            with torch.inference_mode(), torch.autocast(
                    adapter.device.type, dtype=torch.bfloat16,
                    enabled=adapter.device.type == "cuda"):
                logits = torch.cat([model.head(model.features(x[i:i + step]).float())
                                    for i in range(0, len(x), step)]).float().cpu().numpy()
            out.extend(row[k] for row, k in zip(logits, ids[b:b + BATCH], strict=True))
    return np.stack(out)


def _hand_written_clip(adapter: Any, ds: Path, text: dict[str, Any]) -> np.ndarray:
    """CLIP zero-shot by hand: read, decode, preprocess, encode the batch in the
    adapter's dtype (bf16 on a GPU), cosine against the option texts' embeddings
    (computed once beforehand, as the adapter caches them too)."""
    import pyarrow.parquet as pq
    from PIL import Image

    model = adapter.model
    scale = model.logit_scale.exp().float()
    out: list[np.ndarray] = []
    for path in sorted((ds / "data" / "default").glob("*.parquet")):
        table = pq.read_table(path, columns=["image", "options"])
        images = [r["bytes"] for r in table.column("image").to_pylist()]
        options = table.column("options").to_pylist()
        for b in range(0, len(images), BATCH):
            x = torch.stack([adapter.preprocess(Image.open(io.BytesIO(data)).convert("RGB"))
                             for data in images[b:b + BATCH]]).to(adapter.device)
            with torch.inference_mode(), torch.autocast(
                    adapter.device.type, dtype=torch.bfloat16,
                    enabled=adapter.device.type == "cuda"):
                feats = torch.nn.functional.normalize(model.encode_image(x).float(), dim=-1)
                for f, opts in zip(feats, options[b:b + BATCH], strict=True):
                    t = torch.stack([text[o] for o in opts])
                    out.append((scale * (t @ f)).cpu().numpy())
    return np.stack(out)


def _clip_text_table(adapter: Any, ds: Path) -> dict[str, Any]:
    import pyarrow.parquet as pq

    opts = sorted({o for path in (ds / "data" / "default").glob("*.parquet")
                   for row in pq.read_table(path, columns=["options"]).column("options")
                   .to_pylist() for o in row})
    feats = adapter._text_features(opts)
    return dict(zip(opts, feats, strict=True))


def _core_busy(seconds: float = 0.3) -> dict[int, float]:
    """Share of time each CPU was busy over ``seconds`` (from /proc/stat)."""
    def snap() -> dict[int, tuple[int, int]]:
        out = {}
        for line in Path("/proc/stat").read_text().splitlines():
            name, *vals = line.split()
            if name.startswith("cpu") and name != "cpu":
                v = [int(x) for x in vals]
                out[int(name[3:])] = (v[3] + v[4], sum(v))  # idle + iowait, total
        return out

    a = snap()
    time.sleep(seconds)
    b = snap()
    return {c: 1.0 - (b[c][0] - a[c][0]) / max(1, b[c][1] - a[c][1]) for c in a if c in b}


@contextmanager
def _one_core() -> Iterator[int | None]:
    """Every thread of this process (and those it starts) on the least busy of
    its CPUs; yields that CPU (None where affinity cannot be set)."""
    if not hasattr(os, "sched_setaffinity") or not Path("/proc/self/task").is_dir():
        yield None
        return
    mask = os.sched_getaffinity(0)
    busy = _core_busy() if Path("/proc/stat").exists() else {}
    core = min(sorted(mask), key=lambda c: busy.get(c, 0.0))
    tids = [int(t.name) for t in Path("/proc/self/task").iterdir()]
    saved = {}
    for tid in tids:
        try:
            saved[tid] = os.sched_getaffinity(tid)
            os.sched_setaffinity(tid, {core})
        except OSError:  # a thread that has just ended
            pass
    try:
        yield core
    finally:
        for tid, m in saved.items():
            with suppress(OSError):
                os.sched_setaffinity(tid, m)


def _interleaved(runs: dict[str, Callable[[int], Any]], rounds: int
                 ) -> dict[str, list[tuple[float, float]]]:
    """(wall, CPU time of the whole process) of each run in each round, the
    order of the runs alternating from round to round."""
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in runs}
    names = list(runs)
    for r in range(rounds):
        for name in (names if r % 2 == 0 else names[::-1]):
            t0, c0 = time.perf_counter(), time.process_time()
            runs[name](r)
            times[name].append((time.perf_counter() - t0, time.process_time() - c0))
    return times


def _load() -> str:
    try:
        return "load average {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())
    except (AttributeError, OSError):
        return "load average unknown"


def _predict_logits(path: Path) -> np.ndarray:
    import pyarrow.parquet as pq

    got = pq.read_table(path).column("logits").to_pylist()
    return np.stack([np.asarray(v, np.float32) for v in got])


def _compare(benchmark: Any, tmp_path: Path, adapter: Any, ds: Path,
             hand: Callable[[Any, Path], np.ndarray], threads: int, label: str,
             atol: float) -> Callable[[int], None]:
    """Print (and record in ``benchmark.extra_info``) the ratios; return the
    predict run, for the benchmark itself to time once more."""
    from vlmrobust.evaluation.predict.dataset import predict_dataset
    from vlmrobust.models.classifiers import adapter as clf

    def run_predict(k: int) -> None:
        clf._LOGITS_CACHE.clear()
        predict_dataset(RunSpec(
            adapter, ds, tmp_path / f"p{k}.parquet", progress=False,
            backend=BackendOptions(batch_size=BATCH, threads=threads)))

    def run_hand(k: int) -> None:
        hand(adapter, ds)

    run_predict(-1)  # warm up both paths (and the adapter's text cache)
    expected = hand(adapter, ds)
    before = _load()
    times = _interleaved({"predict": run_predict, "hand-written": run_hand}, ROUNDS)
    ours = _predict_logits(tmp_path / "p0.parquet")
    assert ours.shape == expected.shape and np.allclose(ours, expected, atol=atol)
    print(f"\n{label}, {threads} torch thread(s), {N_IMAGES} images, {ROUNDS} interleaved "
          f"rounds ({before} before, {_load()} after); ratio = hand-written time / predict "
          f"time (>= {TARGET} meets the 5 % target):")
    ratios = {}
    for k, what in enumerate(("wall", "CPU")):
        pred = [t[k] for t in times["predict"]]
        hand = [t[k] for t in times["hand-written"]]
        best = min(hand) / min(pred)
        # the two runs of one round ran back to back, under the same load
        paired = float(np.median([h / p for h, p in zip(hand, pred, strict=True)]))
        ratios[what] = (best, paired)
        print(f"  {what:4s}: predict best {min(pred):.3f} s ({N_IMAGES / min(pred):.1f} img/s), "
              f"hand-written best {min(hand):.3f} s ({N_IMAGES / min(hand):.1f} img/s): "
              f"best-of-rounds ratio {best:.3f}, median paired ratio {paired:.3f} "
              f"({'within' if min(best, paired) >= TARGET else 'NOT within'} 5 %)")
    benchmark.extra_info.update({f"{label} {what} ratio {kind}": value
                                 for what, pair in ratios.items()
                                 for kind, value in zip(("best", "median paired"), pair,
                                                        strict=True)})
    assert all(v > 0 for pair in ratios.values() for v in pair)
    return run_predict


def _time_predict(benchmark: Any, run_predict: Callable[[int], None], label: str) -> None:
    """The benchmark's own figure: one more predict run (cache cleared), timed."""
    benchmark.pedantic(run_predict, args=(10_000,), rounds=1, iterations=1)
    seconds = benchmark.stats.stats.min if benchmark.stats else float("nan")
    print(f"  benchmark ({label}): predict {seconds:.3f} s, {N_IMAGES / seconds:.1f} img/s")


def test_predict_vs_hand_written_forward_cpu(benchmark: Any, tmp_path: Path) -> None:
    from vlmrobust.models import load_adapter

    adapter = load_adapter("classifier:efficientnet-lite0", device="cpu")
    ds = _dataset(tmp_path / "ds")
    saved = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with _one_core() as core:
            run_predict = _compare(benchmark, tmp_path, adapter, ds, _hand_written, 1,
                                   f"cpu (pinned to core {core})", atol=1e-3)
            _time_predict(benchmark, run_predict, "cpu, 1 thread")
    finally:
        torch.set_num_threads(saved)


def test_predict_vs_hand_written_forward_gpu(benchmark: Any, tmp_path: Path) -> None:
    if not torch.cuda.is_available():
        reason = "no CUDA GPU here: the bf16 + SDPA comparison runs only on a GPU"
        print(f"\nskipped: {reason}")
        pytest.skip(reason)
    from torch.nn.attention import SDPBackend, sdpa_kernel

    from vlmrobust.models import load_adapter

    ds = _dataset(tmp_path / "ds")
    lite0 = load_adapter("classifier:efficientnet-lite0", device="cuda")
    _compare(benchmark, tmp_path / "lite0", lite0, ds, _hand_written, torch.get_num_threads(),
             "cuda bf16 efficientnet-lite0", atol=5e-2)
    clip = load_adapter("clip:ViT-B-32:none", device="cuda")
    text = _clip_text_table(clip, ds)
    # fused attention kernels only: without them the forward fails instead of
    # quietly timing the unfused math path
    with sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION,
                      SDPBackend.CUDNN_ATTENTION]):
        run_clip = _compare(benchmark, tmp_path / "clip", clip, ds,
                            lambda a, d: _hand_written_clip(a, d, text),
                            torch.get_num_threads(), "cuda bf16 SDPA ViT-B-32 CLIP", atol=5e-2)
        _time_predict(benchmark, run_clip, "cuda bf16 SDPA ViT-B-32 CLIP")


LOADED_IMAGES = 32
LOADED_ROUNDS = 3
BUSY_LOOP = "import time\nend = time.time() + 600\nwhile time.time() < end: pass\n"


def test_default_threads_on_a_loaded_machine(benchmark: Any, tmp_path: Path) -> None:
    """Throughput with predict's default threads, with the former default (every
    CPU the quota allows) and with one thread, while 2 busy-loop processes run
    beside it (on this 2-core machine: a machine as loaded as when other agents
    work)."""
    from vlmrobust.core.cpus import available_cpus, runnable_others
    from vlmrobust.evaluation.predict.dataset import predict_dataset
    from vlmrobust.evaluation.predictions.meta import read_prediction_meta
    from vlmrobust.models import load_adapter
    from vlmrobust.models.classifiers import adapter as clf

    adapter = load_adapter("classifier:efficientnet-lite0", device="cpu")
    ds = _dataset(tmp_path / "ds", LOADED_IMAGES)
    chosen: list[int] = []

    def run(threads: int | None) -> Callable[[int], None]:
        def go(k: int) -> None:
            clf._LOGITS_CACHE.clear()
            out = tmp_path / f"t{threads}-{k}.parquet"
            predict_dataset(RunSpec(
                adapter, ds, out, progress=False,
                backend=BackendOptions(batch_size=BATCH, threads=threads)))
            if threads is None:
                chosen.append(int(read_prediction_meta(out)["threads"]))
        return go

    cpus = available_cpus()
    runs = {"default": run(None), f"all {cpus} CPUs (former default)": run(cpus),
            "--threads 1": run(1)}
    timed: list[float] = []
    saved = torch.get_num_threads()
    busy = [subprocess.Popen([sys.executable, "-c", BUSY_LOOP]) for _ in range(2)]
    try:
        time.sleep(1.0)
        queue = runnable_others()
        load = f"{_load()}, other processes' runnable tasks now " + (
            "unknown" if queue is None else f"{queue:.1f}")
        times = _interleaved(runs, LOADED_ROUNDS)
        # the benchmark's own figure: one more default-threads run, still loaded
        benchmark.pedantic(run(None), args=(LOADED_ROUNDS,), rounds=1, iterations=1)
        timed.append(benchmark.stats.stats.min if benchmark.stats else float("nan"))
    finally:
        for p in busy:
            p.kill()
            p.wait()
        torch.set_num_threads(saved)
    best = {name: min(t[0] for t in ts) for name, ts in times.items()}
    print(f"\nloaded machine (2 busy-loop processes; {load}), {LOADED_IMAGES} images, "
          f"best of {LOADED_ROUNDS} interleaved rounds:")
    for name, wall in best.items():
        extra = f" (chose {sorted(set(chosen))} threads)" if name == "default" else ""
        print(f"  {name}{extra}: {LOADED_IMAGES / wall:.1f} img/s")
    print(f"  benchmark (default threads, loaded): {LOADED_IMAGES / timed[0]:.1f} img/s")
    benchmark.extra_info.update({name: LOADED_IMAGES / wall for name, wall in best.items()})
    # every run answered every row, whatever its thread count (the rounding differs)
    assert chosen and all(1 <= c <= cpus for c in chosen)
    outputs = sorted(tmp_path.glob("t*-*.parquet"))
    assert len(outputs) == len(runs) * LOADED_ROUNDS + 1
    first = _predict_logits(outputs[0])
    assert first.shape == (LOADED_IMAGES, 5)
    for path in outputs[1:]:
        np.testing.assert_allclose(_predict_logits(path), first, atol=1e-3)
