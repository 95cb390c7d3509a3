"""`predict --model endpoint:` keeps --endpoint-concurrency requests in flight
whatever --batch-size is (a sliding window over the run, issue 39.3), writes
the same rows as one request at a time, and encodes each image once (not once
per request and once more for the audit trail)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq

from tests.fixtures.endpoint import FakeServer, completion
from tests.fixtures.predict import write_mcq
from tests.models.backends.endpoint.test_predict import letter_logprobs
from vlmrobust.cli.main import main
from vlmrobust.models.backends.endpoint import images as endpoint_images


class Counting:
    """Answers with letter log-probs after ``delay_s``; counts requests at once."""

    def __init__(self, delay_s: float) -> None:
        self.delay_s = delay_s
        self.lock = threading.Lock()
        self.now = self.peak = 0

    def __call__(self, n: int, body: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
        with self.lock:
            self.now += 1
            self.peak = max(self.peak, self.now)
        time.sleep(self.delay_s)
        with self.lock:
            self.now -= 1
        return 200, {}, json.dumps(completion(body, top=letter_logprobs(body))).encode()


def run(url: str, dataset: Path, out: Path, concurrency: int, batch_size: int) -> None:
    assert main(["predict", "--model", "endpoint:tiny-served", "--dataset", str(dataset),
                 "--out", str(out), "--endpoint-url", url, "--api-key-env", "NO_KEY_HERE",
                 "--endpoint-concurrency", str(concurrency), "--batch-size", str(batch_size),
                 "--no-endpoint-cache", "--no-progress", "--mode", "letter"]) == 0


def test_window_over_batches_and_images_encoded_once(tmp_path: Path) -> None:
    dataset = write_mcq(tmp_path / "ds", {"a": 14, "b": 10}, with_class_ids=False)
    endpoint_images.ENCODED.__init__()  # type: ignore[misc]  # a fresh cache
    server = Counting(delay_s=0.5)  # long enough for a loaded machine to fill 8 slots
    with FakeServer(server) as fake:
        run(fake.url, dataset, tmp_path / "w.parquet", concurrency=8, batch_size=2)
        # 24 rows of 2 rows per batch: before, at most one batch (2 requests) at once
        assert server.peak == 8
        # the dataset's two photos, each encoded once for 24 requests + 24 prompt texts
        assert endpoint_images.ENCODED.encoded == 2
        server.peak, server.delay_s = 0, 0.01
        run(fake.url, dataset, tmp_path / "s.parquet", concurrency=1, batch_size=2)
        assert server.peak == 1
    got, want = (pq.read_table(tmp_path / f"{x}.parquet").to_pylist() for x in "ws")
    assert [r["id"] for r in got] == [r["id"] for r in want]
    assert [r["id"] for r in got][:3] == ["a-000", "a-001", "a-002"]
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g["logits"], w["logits"])
        assert g["prompt_text"] == w["prompt_text"]
