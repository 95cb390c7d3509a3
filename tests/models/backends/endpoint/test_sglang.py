"""``likelihood:*`` over ``--endpoint-engine sglang`` against the counting
stand-in (tests/fixtures/engine_cache.py): issue 36 item 1. The options of a
row cost one image prefill plus their own tokens (within 2x the in-process
count; the default chat path costs K full prompts), the values are the
in-process arithmetic on the same token log-probs, a thinking template is read
as in process, and an option that merges into the prompt is refused by name."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.fixtures.engine_cache import (
    THINK_GEN,
    CountingEngine,
    in_process,
    make_qwen_processor,
    sglang,
)
from vlmrobust.core.errors import VlmrobustError
from vlmrobust.models.backends.base import CONTINUATION, Prompt
from vlmrobust.models.backends.endpoint.backend import EndpointBackend, EndpointOptions
from vlmrobust.models.readers.likelihood import LikelihoodReader

OPTIONS = ["tabby cat", "goldfish", "espresso cup", "rocket", "red fox"]


@pytest.fixture(scope="module")
def processor(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_qwen_processor(tmp_path_factory.mktemp("proc") / "qwen")


@pytest.fixture(scope="module")
def thinking_processor(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.fixtures.vlm import QWEN_TEMPLATE

    template = QWEN_TEMPLATE.replace(
        "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}",
        "{% if add_generation_prompt %}<|im_start|>assistant\n" + THINK_GEN + "{% endif %}")
    assert template != QWEN_TEMPLATE
    return make_qwen_processor(tmp_path_factory.mktemp("proc") / "think", template)


def image(seed: int = 3) -> Any:
    from PIL import Image

    rng = np.random.default_rng(seed)
    return Image.fromarray(rng.integers(0, 255, (8, 8, 3), dtype=np.uint8))


@pytest.mark.parametrize("k", [5, 100])
def test_prefill_per_row_within_twice_in_process(processor: Path, k: int) -> None:
    """Today's request pattern (chat + prompt_logprobs, one request per option)
    prefills the whole image prompt K + 1 times; SGLang's costs the prompt once."""
    names = [f"{OPTIONS[j % 5]} {j}" for j in range(k)]
    prompt = Prompt("What is in this image?", image=image())
    with CountingEngine() as fake:
        b = sglang(fake.url, processor)
        assert CONTINUATION in b.capabilities
        before = len(fake.prefilled)
        got = b.continuation_logprobs([prompt], [names])[0]
        cost = sum(fake.prefilled[before:])
        local, want = in_process(fake, processor, prompt, names)
    with CountingEngine() as fake:
        chat = EndpointBackend(EndpointOptions(url=fake.url, model="tiny", use_cache=False,
                                               api_key_env=None))
        before = len(fake.prefilled)
        chat.continuation_logprobs([prompt], [names])
        chat_cost = sum(fake.prefilled[before:])
    prompt_tokens = local - sum(len(v) for v in want)
    print(f"\nK={k}: prefill tokens per row: in process {local}, sglang {cost} "
          f"({cost / local:.2f}x), chat + prompt_logprobs {chat_cost} "
          f"({chat_cost / local:.1f}x)")
    assert [len(v) for v in got] == [len(v) for v in want]
    assert cost <= 2 * local
    assert chat_cost >= k * prompt_tokens


def rows(n: int = 2) -> list[dict[str, Any]]:
    return [{"question": f"What is shown {i}?", "options": OPTIONS, "image": image(i)}
            for i in range(n)]


@pytest.mark.parametrize("mode", ["sum", "avg"])
def test_values_are_the_in_process_arithmetic(processor: Path, mode: str) -> None:
    reducer = np.mean if mode == "avg" else np.sum
    with CountingEngine() as fake:
        b = sglang(fake.url, processor, concurrency=2)
        read = LikelihoodReader(mode).read(b, rows(), "default")
        for row, reading in zip(rows(), read, strict=True):
            _, want = in_process(fake, processor, Prompt(row["question"], image=row["image"]),
                               OPTIONS)
            np.testing.assert_allclose(reading.logits, [reducer(v) for v in want], rtol=1e-6)


def test_guidance_terms_with_and_without_the_image(processor: Path) -> None:
    with CountingEngine() as fake:
        b = sglang(fake.url, processor)
        (reading,) = LikelihoodReader("sum", 2.0).read(b, rows(1), "default")
        row = rows(1)[0]
        _, cond = in_process(fake, processor, Prompt(row["question"], image=row["image"]), OPTIONS)
        _, uncond = in_process(fake, processor, Prompt(row["question"]), OPTIONS)
    np.testing.assert_allclose(reading.logp_with_image, [v.sum() for v in cond], rtol=1e-6)
    np.testing.assert_allclose(reading.logp_without_image, [v.sum() for v in uncond], rtol=1e-6)


def test_thinking_template_is_read_as_in_process(thinking_processor: Path) -> None:
    """The think block is part of the rendered prompt, as in process; the chat path
    under the same kind of template is refused (the continued turn drops it)."""
    prompt = Prompt("What is in this image?", image=image())
    with CountingEngine(think=True) as fake:
        b = sglang(fake.url, thinking_processor)
        got = b.continuation_logprobs([prompt], [OPTIONS])[0]
        _, want = in_process(fake, thinking_processor, prompt, OPTIONS)
        chat = EndpointBackend(EndpointOptions(url=fake.url, model="tiny", use_cache=False,
                                               api_key_env=None))
        with pytest.raises(VlmrobustError, match="not a token prefix"):
            chat.continuation_logprobs([prompt], [OPTIONS])
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-6)


def test_an_option_merging_into_the_prompt_is_refused(processor: Path) -> None:
    with CountingEngine(merge_newline=True) as fake:
        b = sglang(fake.url, processor)
        with pytest.raises(VlmrobustError) as exc:
            b.continuation_logprobs([Prompt("What is this?", image=image())], [["cat"]])
        assert fake.paths.count("/generate") == 1  # the probe: no prefill for a refused row
    msg = str(exc.value)
    assert "\n" not in msg and "'cat'" in msg and "row 0" in msg and "not a token prefix" in msg


class ShiftedStart(CountingEngine):
    """A server that reads input log-probs from one token after
    ``logprob_start_len``: the tokens it scored are not those the prefix proves."""

    def generate(self, body: dict[str, Any]) -> tuple[int, Any]:
        if "logprob_start_len" in body and body["logprob_start_len"] > 0:
            body = {**body, "logprob_start_len": body["logprob_start_len"] + 1}
        return super().generate(body)


def test_scored_tokens_that_are_not_the_proven_ones_are_refused(processor: Path) -> None:
    with ShiftedStart() as fake:
        b = sglang(fake.url, processor)
        with pytest.raises(VlmrobustError) as exc:
            b.continuation_logprobs([Prompt("What is this?", image=image())], [["cat"]])
    msg = str(exc.value)
    assert "\n" not in msg and "'cat'" in msg and "cannot be isolated" in msg


def test_a_processor_that_does_not_load_is_one_line(tmp_path: Path) -> None:
    with CountingEngine() as fake:
        b = sglang(fake.url, tmp_path / "no-such-model")
        with pytest.raises(VlmrobustError) as exc:
            b.continuation_logprobs([Prompt("What is this?")], [["cat"]])
        # the load's probes only: nothing was sent for the row
        assert fake.paths.count("/generate") == 1 and "/v1/tokenize" not in fake.paths
    msg = str(exc.value)
    assert "\n" not in msg and msg.startswith("--endpoint-processor") and "no-such-model" in msg


class ExtraBos(CountingEngine):
    """A server whose /generate adds a BOS token that its /v1/tokenize does not."""

    def ids(self, text: str, image: str | None) -> list[int]:
        return [7, *super().ids(text, image)]


def test_generate_tokens_that_are_not_tokenize_s_are_refused(processor: Path) -> None:
    with ExtraBos() as fake:
        b = sglang(fake.url, processor)
        with pytest.raises(VlmrobustError) as exc:
            b.continuation_logprobs([Prompt("What is this?", image=image())], [["cat"]])
    msg = str(exc.value)
    assert "\n" not in msg and "row 0" in msg and "not /v1/tokenize's" in msg


def test_server_that_is_not_sglang_is_refused_at_load(processor: Path) -> None:
    from tests.fixtures.endpoint import FakeServer

    def not_found(n: int, body: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
        return 404, {}, b'{"detail": "Not Found"}'

    with FakeServer(not_found) as fake:
        b = sglang(fake.url, processor)
        with pytest.raises(VlmrobustError) as exc:
            b.check_reader([CONTINUATION], "--mode likelihood:sum")
    assert "--endpoint-engine sglang" in str(exc.value) and "\n" not in str(exc.value)


def test_engine_options_are_checked_and_recorded(processor: Path) -> None:
    with pytest.raises(VlmrobustError, match="--endpoint-engine 'tgi'"):
        EndpointOptions(url="http://localhost:1/v1", model="m", engine="tgi")
    with pytest.raises(VlmrobustError, match="--endpoint-processor applies"):
        EndpointOptions(url="http://localhost:1/v1", model="m", processor="x")
    from vlmrobust.cli.commands.predict import endpoint_options
    from vlmrobust.cli.main import make_parser

    args = make_parser().parse_args(
        ["predict", "--model", "endpoint:m", "--dataset", "d", "--out", "o.parquet",
         "--endpoint-url", "http://h:30000/v1", "--endpoint-engine", "sglang"])
    assert endpoint_options(args) == {"url": "http://h:30000/v1", "engine": "sglang"}
    with CountingEngine() as fake:
        record = sglang(fake.url, processor).server_record()
    # a local folder is published as its base name and a hash, never its path
    assert record["engine"] == "sglang" and record["processor"].startswith("qwen@")
    assert str(processor) not in repr(record)


def test_predict_cli_over_sglang(tmp_path: Path, processor: Path) -> None:
    """`predict --endpoint-engine sglang --mode likelihood:sum` end to end: per row
    a tokenize and an options request, one prefill per distinct image + question
    (the 4 rows hold 2), the engine and the
    processor's public name in the metadata (never its path), and a re-run
    answered by the response cache alone."""
    import pyarrow.parquet as pq

    from tests.fixtures.predict import write_mcq
    from vlmrobust.cli.main import main
    from vlmrobust.evaluation.predictions.meta import read_prediction_meta

    dataset = write_mcq(tmp_path / "ds", {"default": 4}, with_class_ids=False)

    def predict(out: Path) -> int:
        return main(["predict", "--model", "endpoint:tiny", "--dataset", str(dataset),
                     "--out", str(out), "--endpoint-url", fake.url, "--api-key-env", "NO_KEY",
                     "--endpoint-engine", "sglang", "--endpoint-processor", str(processor),
                     "--endpoint-cache", str(tmp_path / "cache"), "--no-progress",
                     "--mode", "likelihood:sum"])

    with CountingEngine() as fake:
        assert predict(tmp_path / "run" / "p.parquet") == 0
        paths = list(fake.paths)
        assert predict(tmp_path / "again" / "p.parquet") == 0
        assert fake.paths == paths  # the re-run sent nothing
    # the probe, 2 prefills (identical requests are sent once), 4 option batches
    assert paths.count("/v1/tokenize") == 4 and paths.count("/generate") == 1 + 2 + 4
    rows = pq.read_table(tmp_path / "run" / "p.parquet").to_pylist()
    assert [len(r["logits"]) for r in rows] == [2, 3, 4, 5]
    assert all(np.isfinite(r["logits"]).all() and max(r["logits"]) < 0 for r in rows)
    # each row's prompt text is the /generate prompt as scored: the chat template
    # applied here, the image as its digest
    assert all('"text": "<|im_start|>user' in r["prompt_text"] and "<image/png sha256="
               in r["prompt_text"] and "base64" not in r["prompt_text"] for r in rows)
    meta = read_prediction_meta(tmp_path / "run" / "p.parquet")
    assert meta["server"]["engine"] == "sglang"
    assert meta["server"]["processor"].startswith("qwen@")
    for path in (tmp_path / "run").rglob("*"):
        if path.is_file():
            assert str(processor).encode() not in path.read_bytes(), path
