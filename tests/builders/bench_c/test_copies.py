"""Bench-C copies: made in memory by worker processes, equal bytes whatever the
number of workers, only the kept questions encoded, pending results bounded."""

from __future__ import annotations

import hashlib
import io
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from tests.fixtures.bench_c import (
    CORRUPTIONS,
    FakeSelector,
    raw_spec,
    run,
    text_embed,
    write_source,
)
from vlmrobust.builders.bench_c.build import build_dataset
from vlmrobust.builders.bench_c.copies import (
    Workers,
    copies_nbytes,
    copy_tasks,
    corrupt_copies,
    encode_copies,
    ordered_map,
)
from vlmrobust.builders.bench_c.sources import load_source
from vlmrobust.builders.bench_c.spec import parse_spec
from vlmrobust.builders.families import BuildOptions


def test_parallel_workers_make_the_same_bytes(tmp_path: Path) -> None:
    write_source(tmp_path)
    spec = parse_spec(raw_spec(), tmp_path / "bench-c.yaml")
    cands = load_source(spec.sources[0], tmp_path).candidates[:3]
    tasks = copy_tasks(cands, ["fog", "snow"], [2], 3, None)
    one = list(ordered_map(encode_copies, tasks, workers=1))
    two = list(ordered_map(encode_copies, tasks, workers=2))
    assert [len(x) for x in one] == [3, 3, 3]  # clean, fog-2, snow-2
    assert one == two
    # the PNGs hold exactly the arrays the selectors were shown
    for task, datas in zip(tasks, one, strict=True):
        for arr, (data, sha) in zip(corrupt_copies(task), datas, strict=True):
            assert np.array_equal(np.asarray(Image.open(io.BytesIO(data))), arr)
            assert sha == hashlib.sha256(data).hexdigest()


def test_ordered_map_keeps_order_and_bounds_pending(tmp_path: Path) -> None:
    seen: list[int] = []

    def items() -> Any:
        for i in range(10):
            seen.append(i)
            yield i

    it = ordered_map(abs, items(), workers=2)
    assert next(it) == 0
    # 2 × workers items are pending when the 5th is read: the first result
    # is handed over before it is submitted
    assert len(seen) == 5
    assert list(it) == list(range(1, 10))
    with pytest.raises(ValueError, match="workers must be >= 1, got 0"):
        list(ordered_map(abs, [1], workers=0))


def test_pending_results_are_bounded_by_bytes(tmp_path: Path) -> None:
    seen: list[int] = []

    def items() -> Any:
        for i in range(6):
            seen.append(i)
            yield -i

    with Workers(2, budget=25) as workers:
        it = workers.map(abs, items(), cost=lambda _: 10)
        assert next(it) == 0
        assert len(seen) == 3  # 2 held (20 bytes); the 3rd would pass 25: wait first
        assert list(it) == [1, 2, 3, 4, 5]
    # the estimate the build uses is the arrays' true size
    write_source(tmp_path)
    spec = parse_spec(raw_spec(), tmp_path / "bench-c.yaml")
    cands = load_source(spec.sources[0], tmp_path).candidates[:1]
    for side in (None, 20):
        task = copy_tasks(cands, ["fog", "snow"], [1, 2], 3, side)[0]
        assert copies_nbytes(task) == sum(a.nbytes for a in corrupt_copies(task))


def test_workers_leave_ctrl_c_to_the_parent() -> None:
    import signal

    # the parent turns KeyboardInterrupt into "interrupted; run again to resume";
    # workers that also raised it would each print a traceback
    with Workers(2) as workers:
        got = list(workers.map(signal.getsignal, [signal.SIGINT, signal.SIGINT]))
    assert got == [signal.SIG_IGN, signal.SIG_IGN]


def test_workers_are_shared_by_the_stages() -> None:
    with Workers(2) as workers:
        assert list(workers.map(abs, [-1, -2])) == [1, 2]
        first = workers._pool
        assert first is not None
        assert list(ordered_map(abs, [-3], workers)) == [3]
        assert workers._pool is first  # the second stage reuses the warm workers
    assert workers._pool is None


def test_parallel_build_gives_the_same_dataset(tmp_path: Path) -> None:
    write_source(tmp_path)
    spec = parse_spec(raw_spec(max_questions=2), tmp_path / "bench-c.yaml")
    src = load_source(spec.sources[0], tmp_path)
    got = []
    for workers in (1, 2):
        out = tmp_path / f"w{workers}"
        models = {"other:bright": FakeSelector("b", None), "other:red": FakeSelector("r", 0),
                  "other:emb": FakeSelector("e", None)}
        got.append(build_dataset(spec, spec.selection, [src],
                                 options=BuildOptions(out=out, progress=False, workers=workers),
                                 loader=models.__getitem__, text_embedder=text_embed))
    assert got[0]["fingerprint"] == got[1]["fingerprint"]
    assert got[0]["image_sha256"] == got[1]["image_sha256"]


def test_only_kept_questions_are_encoded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                         ) -> None:
    from vlmrobust.builders.corruptions import images

    calls = []
    real = images.encode_png

    def counting(rgb: np.ndarray, level: int = 6) -> bytes:
        calls.append(level)
        return real(rgb, level)

    from vlmrobust.builders.bench_c import scoring

    made: list[str] = []
    real_copies = scoring.corrupt_copies

    def counting_copies(task: Any) -> list[np.ndarray]:
        made.append(task.key)
        return real_copies(task)

    monkeypatch.setattr(images, "encode_png", counting)
    monkeypatch.setattr(scoring, "corrupt_copies", counting_copies)
    write_source(tmp_path)
    manifest = run(tmp_path, tmp_path / "bench-c", max_questions=2)
    per_q = 1 + len(CORRUPTIONS) * 5
    kept = manifest["selection"]["kept"]
    assert len(manifest["selection"]["kappa"]) == 6 > len(kept)  # 6 candidates, fewer kept
    assert len(calls) == len(kept) * per_q == manifest["num_rows"]
    assert set(calls) == {images.BENCH_C_PNG_LEVEL}
    # two selectors, one pass over the pool: each question's copies made once
    assert sorted(made) == sorted(manifest["selection"]["kappa"])


def test_max_side_and_seed_shape_the_copies(tmp_path: Path) -> None:
    write_source(tmp_path)
    spec = parse_spec(raw_spec(), tmp_path / "bench-c.yaml")
    cands = load_source(spec.sources[0], tmp_path).candidates[:1]
    small = corrupt_copies(copy_tasks(cands, ["fog"], [1], 3, 20)[0])
    assert [a.shape for a in small] == [(18, 20, 3)] * 2  # 40x36 scaled to a longer side of 20
    full = corrupt_copies(copy_tasks(cands, ["fog"], [1], 3, None)[0])
    assert full[0].shape == (36, 40, 3)
    other = corrupt_copies(copy_tasks(cands, ["fog"], [1], 4, 20)[0])
    assert np.array_equal(other[0], small[0]) and not np.array_equal(other[1], small[1])
    with pytest.raises(ValueError, match="max_side must be >= 1, got 0"):
        copy_tasks(cands, ["fog"], [1], 3, 0)
