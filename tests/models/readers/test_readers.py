"""The hf backend's primitives and the readers on tiny random Qwen2-VL and LLaVA
models, against independent computations straight from transformers: one
full forward per option (no KV cache), the old adapter's letter reading, and
classifier-free guidance in numpy."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import skimage.data
import torch
from PIL import Image

from tests.fixtures import vlm as vlm_fixtures
from vlmrobust.core.errors import VlmrobustError
from vlmrobust.models import load_adapter
from vlmrobust.models.backends import hf as hf_mod
from vlmrobust.models.backends.base import NEXT_TOKEN, Backend, Prompt
from vlmrobust.models.readers import parse_mode
from vlmrobust.models.readers.likelihood import cfg_logit, cfg_mode
from vlmrobust.models.vlm import VlmAdapter

BUILDERS = {"qwen2vl": vlm_fixtures.make_qwen2vl, "llava": vlm_fixtures.make_llava}
# what separates the generation prompt from the answer (hf backend's rule)
SEPARATOR = {"qwen2vl": "", "llava": " "}


@pytest.fixture(scope="module", params=list(BUILDERS))
def model_dir(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
              ) -> tuple[str, Path]:
    return request.param, BUILDERS[request.param](tmp_path_factory.mktemp(request.param) / "m")


@pytest.fixture(scope="module")
def adapter(model_dir: tuple[str, Path]) -> VlmAdapter:
    a = load_adapter(f"vlm:{model_dir[1]}", device="cpu")
    assert isinstance(a, VlmAdapter) and a.mode == "letter"
    return a


@pytest.fixture(scope="module")
def rows() -> list[dict[str, Any]]:
    cat = Image.fromarray(skimage.data.chelsea())
    coffee = Image.fromarray(skimage.data.coffee())
    return [
        {"id": "q0", "image": cat, "question": "What is in this image?",
         "options": ["tabby cat", "espresso", "space shuttle rocket", "goldfish"]},
        {"id": "q1", "image": coffee, "question": "What?", "options": ["espresso", "cup"]},
    ]


def full_forward_logprobs(a: VlmAdapter, kind: str, prompt_text: str, answer: str,
                          image: Any) -> np.ndarray:
    """log p of ``answer``'s tokens after ``prompt_text``: one forward of the
    whole text (prompt + answer), no cache, read at the answer's positions."""
    text = prompt_text + SEPARATOR[kind] + answer
    tok = a.tokenizer
    n = len(tok.encode(text, add_special_tokens=False)) - len(
        tok.encode(prompt_text, add_special_tokens=False))
    inputs = a.processor(text=[text], images=None if image is None else [image],
                         return_tensors="pt")
    with torch.no_grad():
        logits = a.model(**inputs).logits[0].float()
    ids = inputs["input_ids"][0]
    lp = torch.log_softmax(logits[-n - 1:-1], dim=-1)
    return lp.gather(1, ids[-n:, None])[:, 0].numpy()


def chat_text(a: VlmAdapter, question: str, image: bool) -> str:
    content: list[dict[str, str]] = [{"type": "image"}] if image else []
    content.append({"type": "text", "text": question})
    out: str = a.processor.apply_chat_template([{"role": "user", "content": content}],
                                               add_generation_prompt=True, tokenize=False)
    return out


def test_letter_equals_old_adapter_reading(adapter: VlmAdapter, rows: list[dict[str, Any]],
                                           model_dir: tuple[str, Path]) -> None:
    """The old adapter's batched, left-padded raw letter logits, shifted by each
    row's log-sum-exp over the vocabulary, are the letter reader's log-probs."""
    kind = model_dir[0]
    texts = [adapter.prompt_for(r) for r in rows]
    assert texts[0] == chat_text(adapter, (
        "What is in this image?\nA. tabby cat\nB. espresso\nC. space shuttle rocket\n"
        "D. goldfish\nAnswer with the option's letter from the given choices directly."), True)
    proc = adapter.processor
    proc.tokenizer.padding_side = "left"
    inputs = proc(text=texts, images=[r["image"] for r in rows], padding=True,
                  return_tensors="pt")
    with torch.no_grad():
        raw = adapter.model(**inputs).logits[:, -1, :].float()
    letter = ("Ġ" if SEPARATOR[kind] else "") + "{}"
    ids = adapter.tokenizer.convert_tokens_to_ids([letter.format(c) for c in "ABCD"])
    expected = (raw[:, ids] - torch.logsumexp(raw, dim=-1, keepdim=True)).numpy()
    got = adapter.option_logits(rows)
    np.testing.assert_allclose(got[0], expected[0], rtol=0, atol=2e-6)
    np.testing.assert_allclose(got[1, :2], expected[1, :2], rtol=0, atol=2e-6)
    assert np.isnan(got[1, 2:]).all()
    # every probability over the options is the old one
    old = torch.softmax(raw[0, ids], 0).numpy()
    np.testing.assert_allclose(np.exp(got[0]) / np.exp(got[0]).sum(), old, atol=1e-6)


@pytest.mark.parametrize("mode", ["likelihood:sum", "likelihood:avg"])
def test_likelihood_equals_one_forward_per_option(model_dir: tuple[str, Path], mode: str,
                                                  rows: list[dict[str, Any]]) -> None:
    kind, folder = model_dir
    a = load_adapter(f"vlm:{folder}", device="cpu", mode=mode)
    assert isinstance(a, VlmAdapter)
    readings = a.read(rows)
    for row, reading in zip(rows, readings, strict=True):
        assert reading.prompt_text == chat_text(a, row["question"], True)
        ref = [full_forward_logprobs(a, kind, reading.prompt_text, o, row["image"])
               for o in row["options"]]
        agg = [r.sum() if mode.endswith("sum") else r.mean() for r in ref]
        assert reading.logits is not None
        np.testing.assert_allclose(reading.logits, agg, rtol=0, atol=1e-4)
    # multi-token options are what the cache is reused for
    assert max(len(full_forward_logprobs(a, kind, readings[0].prompt_text, o, rows[0]["image"]))
               for o in rows[0]["options"]) > 2


def test_likelihood_chunks_equal_one_chunk(model_dir: tuple[str, Path], rows: list[dict[str, Any]],
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    a = load_adapter(f"vlm:{model_dir[1]}", device="cpu", mode="likelihood:sum")
    assert isinstance(a, VlmAdapter)
    whole = a.option_logits(rows)
    monkeypatch.setattr(hf_mod, "MAX_CHUNK", 1)
    np.testing.assert_allclose(a.option_logits(rows), whole, rtol=0, atol=1e-5)


@pytest.mark.parametrize("mode", ["likelihood:cfg=2", "likelihood:cfg-avg=2"])
def test_cfg_equals_numpy_guidance(model_dir: tuple[str, Path], rows: list[dict[str, Any]],
                                   mode: str) -> None:
    """Issue 33 item 1's done-when: CFG at t = 2 is t·log p(c | image, prompt) +
    (1 − t)·log p(c | prompt) in numpy, from one full forward per option, on the
    summed (cfg) and the mean (cfg-avg) token log-probs; both terms are kept."""
    kind, folder = model_dir
    t = 2.0
    a = load_adapter(f"vlm:{folder}", device="cpu", mode=mode)
    assert isinstance(a, VlmAdapter) and a.mode == mode
    reduce = np.mean if "avg" in mode else np.sum
    readings = a.read(rows)
    for row, reading in zip(rows, readings, strict=True):
        blind = chat_text(a, row["question"], False)
        assert "<image>" not in blind and "image_pad" not in blind
        cond = np.array([reduce(full_forward_logprobs(a, kind, reading.prompt_text, o,
                                                      row["image"])) for o in row["options"]])
        uncond = np.array([reduce(full_forward_logprobs(a, kind, blind, o, None))
                           for o in row["options"]])
        np.testing.assert_allclose(reading.logits, t * cond + (1 - t) * uncond, rtol=0, atol=2e-4)
        np.testing.assert_allclose(reading.logp_with_image, cond, rtol=0, atol=1e-4)
        np.testing.assert_allclose(reading.logp_without_image, uncond, rtol=0, atol=1e-4)
        # guidance is not a mixture: the score leaves the range of the two terms
        assert reading.logits is not None and not np.allclose(cond, uncond)


def test_cfg_logit_closed_form() -> None:
    rng = np.random.default_rng(21)
    a, b = rng.uniform(-30, 0, 50), rng.uniform(-30, 0, 50)
    for t in (0.0, 0.25, 1.0, 1.5, 2.0, 5.0):
        np.testing.assert_allclose(cfg_logit(a, b, t), t * a + (1 - t) * b, rtol=1e-12)
    np.testing.assert_array_equal(cfg_logit(a, b, 1.0), a)
    np.testing.assert_array_equal(cfg_logit(a, b, 0.0), b)
    for bad in (-0.5, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="t must be"):
            cfg_logit(a, b, bad)


@pytest.mark.parametrize(("mode", "recorded"), [
    ("likelihood:cfg=2", ("sum", 2.0)), ("likelihood:cfg-avg=1.5", ("avg", 1.5)),
    ("likelihood:cfg=0.1", ("sum", 0.1)), ("likelihood:cfg=7.25", ("sum", 7.25))])
def test_cfg_modes_record_t_exactly(mode: str, recorded: tuple[str, float]) -> None:
    reader = parse_mode(mode)
    assert reader.mode == mode and cfg_mode(reader.mode) == recorded


@pytest.mark.parametrize("mode", ["likelihood:cfg=-1", "likelihood:cfg=x", "likelihood:cfg-avg=nan",
                                  "likelihood:cfg-max=2", "likelihood:max",
                                  "likelihood", "letter:x", "lettre"])
def test_bad_modes_are_one_line(mode: str) -> None:
    with pytest.raises(VlmrobustError) as exc:
        parse_mode(mode)
    assert "\n" not in str(exc.value) and "--mode" in str(exc.value)


class _NoContinuations:
    """A real hf backend with its continuation primitive withheld (failure injection)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.name = inner.name
        self.capabilities = frozenset({NEXT_TOKEN})

    def __getattr__(self, item: str) -> Any:
        return getattr(self._inner, item)


def test_missing_primitive_refuses_the_reader_in_one_line(adapter: VlmAdapter) -> None:
    backend = _NoContinuations(adapter.backend)
    assert isinstance(backend, Backend)
    with pytest.raises(VlmrobustError) as exc:
        VlmAdapter("x", backend, parse_mode("likelihood:sum"))
    msg = str(exc.value)
    assert "\n" not in msg and "continuation_logprobs" in msg and "likelihood:sum" in msg
    VlmAdapter("x", backend, parse_mode("letter"))  # the letter reader needs only next-token


def test_first_token_ids_refuse_multi_token_candidates(adapter: VlmAdapter) -> None:
    backend = adapter.backend
    assert isinstance(backend, hf_mod.HfBackend)
    with pytest.raises(VlmrobustError, match="not one token"):
        backend.next_token_logprobs([Prompt("q", image=None)], ["A", "tabby cat espresso"])


def test_answer_tokens_after_the_prompt(adapter: VlmAdapter, model_dir: tuple[str, Path]) -> None:
    kind = model_dir[0]
    tok = adapter.tokenizer
    rendered = adapter.prompt_for({"question": "q", "options": ["a", "b"]})
    ids = hf_mod.answer_token_ids(tok, rendered, ["goldfish", "A"])
    assert tok.decode(ids[1]) == SEPARATOR[kind] + "A"
    assert tok.decode(ids[0]) == SEPARATOR[kind] + "goldfish"
