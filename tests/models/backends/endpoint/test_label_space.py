"""A served model over a label space: its advertised context limit refuses a
closed-world prompt that cannot fit, in one line naming the limit, before
anything is written; a server that advertises no limit or counts no tokens is
not checked (the server itself refuses an over-long request)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from tests.fixtures.classification import write_classification
from tests.fixtures.endpoint import FakeServer, completion
from vlmrobust.core.errors import VlmrobustError
from vlmrobust.evaluation.predict.dataset import predict_dataset
from vlmrobust.evaluation.predict.spec import BackendOptions, ReaderOptions, RunSpec

MODEL = "tiny-served"


class Tokenizing:
    """The fake server's answers: /tokenize counts one token per 4 characters of
    the user turn; everything else is a chat completion."""

    def __init__(self) -> None:
        self.counted: list[int] = []

    def __call__(self, n: int, body: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
        if "temperature" not in body:  # the /tokenize body holds model + messages only
            content = body["messages"][0]["content"]
            text = "".join(c.get("text", "") for c in content if isinstance(c, dict)) \
                if isinstance(content, list) else str(content)
            self.counted.append(len(text) // 4)
            return 200, {}, json.dumps({"count": len(text) // 4}).encode()
        return 200, {}, json.dumps(completion(body)).encode()


def _predict(url: str, ds: Path, out: Path, **reader: Any) -> Path:
    return predict_dataset(RunSpec(
        f"endpoint:{MODEL}", ds, out, progress=False,
        reader=ReaderOptions(mode="generate", **reader),
        backend=BackendOptions(endpoint={"url": url, "use_cache": False, "retries": 0})))


def test_advertised_limit_refuses_a_closed_world_prompt_that_cannot_fit(tmp_path: Path) -> None:
    from vlmrobust.models.readers.base import ReadOptions

    ds = write_classification(tmp_path / "ds", n=2, k=None)
    listing = {"object": "list", "data": [{"id": MODEL, "object": "model", "max_model_len": 100}]}
    action = Tokenizing()
    with FakeServer(action, routes={"/v1/models": json.dumps(listing).encode()}) as fake:
        out = tmp_path / "p.parquet"
        with pytest.raises(VlmrobustError) as err:
            _predict(fake.url, ds, out)
        msg = str(err.value)
        assert "\n" not in msg and "max_model_len 100" in msg and "6 classes" in msg
        needed = action.counted[0] + ReadOptions().max_new_tokens
        assert f"needs {needed} tokens" in msg
        assert not out.exists() and not list(tmp_path.glob(".p.parquet.partial"))
        # with room for the prompt and 16 new tokens the same server answers every row
        _predict(fake.url, ds, out, read_options=ReadOptions(max_new_tokens=16),
                 class_order="fixed")
        rows = pq.read_table(out).to_pylist()
        assert len(rows) == 2 and all("Choose one from tench, goldfish" in r["prompt_text"]
                                      for r in rows)


def test_no_advertised_limit_means_no_check(tmp_path: Path) -> None:
    ds = write_classification(tmp_path / "ds", n=2, k=None)
    with FakeServer(Tokenizing()) as fake:  # no /v1/models route: nothing advertised
        out = _predict(fake.url, ds, tmp_path / "p.parquet")
        assert pq.read_metadata(out).num_rows == 2
