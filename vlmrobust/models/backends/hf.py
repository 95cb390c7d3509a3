"""The ``hf`` backend: a transformers image-text-to-text model in this process
(LLaVA-style, SmolVLM / Idefics3, Qwen2-VL, ...), behind every primitive.

Answers are read as the tokens the answer-token rule gives
(vlmrobust.models.backends.answer_tokens: ``"A"`` after a prompt ending in
whitespace, ``" A"`` after a visible character).

- next_token_logprobs: one forward of the left-padded batch; log-softmax over
  the vocabulary at the last position, read at each candidate's first token
  (each must be one token, distinct from the others).
- continuation_logprobs: per prompt, one forward of image + prompt with the
  KV cache kept; the cache is repeated over a chunk of continuations, which
  run in one forward (right-padded: padding comes after every real token, so
  causal attention never sees it). A continuation's first token is read from
  the prefix forward itself.
- generate: greedy, left-padded batches, cut at the first stop string.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from vlmrobust.core.errors import VlmrobustError
from vlmrobust.models.backends.answer_tokens import (  # noqa: F401 (re-exported)
    answer_separator,
    answer_token_ids,
    single_token_ids,
)
from vlmrobust.models.backends.base import (
    PRIMITIVES,
    BackendFamily,
    GenerationConfig,
    Prompt,
)
from vlmrobust.models.backends.hf_load import HfLoadOptions, load_model
from vlmrobust.models.runtime import to_pil

# A chunk of continuations holds at most this many logits (tokens x vocabulary):
# 1,000 class names over a 150k vocabulary would otherwise need gigabytes at once.
MAX_CHUNK_LOGITS = 1 << 26
MAX_CHUNK = 256
MAX_IDS_CACHE = 64


def chat_prompt(processor: Any, text: str, image: bool) -> str:
    """One user turn (the image first, as the processors expect) rendered by the
    processor's chat template, with the assistant's generation prompt; also the
    prompt the endpoint's SGLang path sends (endpoint/sglang.py)."""
    content: list[dict[str, str]] = [{"type": "image"}] if image else []
    content.append({"type": "text", "text": text})
    out: str = processor.apply_chat_template(
        [{"role": "user", "content": content}], add_generation_prompt=True, tokenize=False)
    return out


def _reset_rope_state(model: Any) -> None:
    """Qwen2-VL-style models keep the last prefill's M-RoPE offset on the module
    and reuse it for any forward with a cache; a text-only prefix after an image
    one would inherit it. Cleared before every new prefix."""
    for m in (model, getattr(model, "model", None)):
        if m is not None and getattr(m, "rope_deltas", None) is not None:
            m.rope_deltas = None


class HfBackend:
    """A loaded transformers model and processor (see the module doc)."""

    capabilities = frozenset(PRIMITIVES)

    def __init__(self, name: str, model: Any, processor: Any, device: Any) -> None:
        import torch

        self._torch = torch
        self.name = name
        self.model = model.eval()
        self.processor = processor
        self.device = device
        self.tokenizer = processor.tokenizer
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.params = int(sum(p.numel() for p in model.parameters()))
        vision = getattr(model.config, "vision_config", None)
        self.vision_encoder = getattr(vision, "model_type", None)
        # Idefics / SmolVLM / Mllama processors want one image list per sample
        proc_name = type(processor).__name__.lower()
        self._nested_images = any(k in proc_name for k in ("idefics", "smolvlm", "mllama"))
        params = inspect.signature(model.forward).parameters
        # only the last position is needed: skip the (B, T, vocab) logits where supported
        self._last_only = {"logits_to_keep": 1} if "logits_to_keep" in params else {}
        # transformers 5 names the KV cache argument `cache`, 4.x `past_key_values`
        self._cache_arg = "cache" if "cache" in params else "past_key_values"
        self._ids_cache: dict[tuple[str, tuple[str, ...]], list[int]] = {}

    # -- text ---------------------------------------------------------------
    def _chat(self, text: str, image: bool) -> str:
        return chat_prompt(self.processor, text, image)

    def render(self, prompt: Prompt) -> str:
        return self._chat(prompt.text, prompt.image is not None) + prompt.assistant_prefix

    def generation_prompt(self, image: bool = True) -> str:
        """The text the chat template appends for the assistant's turn."""
        marker = "\x00QUESTION\x00"
        with_gen = self._chat(marker, image)
        return with_gen[with_gen.rindex(marker) + len(marker):] or with_gen[-1:]

    def first_token_ids(self, prompt: Prompt, candidates: Sequence[str]) -> list[int]:
        """Each candidate's token id after ``prompt`` (one token each, all distinct).
        Only the text after the user turn decides them, so they are kept per tail."""
        tail = self.generation_prompt(prompt.image is not None) + prompt.assistant_prefix
        key = (tail, tuple(candidates))
        if prompt.assistant_prefix and len(self._ids_cache) >= MAX_IDS_CACHE:
            # a reasoning model's output makes every tail distinct: keep the cache bounded
            self._ids_cache.clear()
        if key not in self._ids_cache:
            self._ids_cache[key] = single_token_ids(self.tokenizer, tail, candidates, self.name)
        return self._ids_cache[key]

    # -- tensors ------------------------------------------------------------
    def _inputs(self, texts: Sequence[str], images: Sequence[Any] | None) -> Any:
        kwargs: dict[str, Any] = {"text": list(texts), "padding": True, "return_tensors": "pt"}
        if images is not None:
            pil = [to_pil(im) for im in images]
            kwargs["images"] = [[im] for im in pil] if self._nested_images else pil
        batch = self.processor(**kwargs)
        dtype = self.model.dtype
        return {k: (v.to(self.device, dtype=dtype) if v.is_floating_point() else v.to(self.device))
                for k, v in batch.items() if hasattr(v, "to")}

    def _groups(self, prompts: Sequence[Prompt]) -> list[list[int]]:
        """Indices of the prompts with an image, then of those without (a
        processor call takes images for all of its texts or for none)."""
        with_image = [i for i, p in enumerate(prompts) if p.image is not None]
        without = [i for i, p in enumerate(prompts) if p.image is None]
        return [g for g in (with_image, without) if g]

    def _forward(self, inputs: Mapping[str, Any], **kwargs: Any) -> Any:
        _reset_rope_state(self.model)
        with self._torch.inference_mode():
            return self.model(**inputs, **kwargs)

    # -- primitives ---------------------------------------------------------
    def next_token_logprobs(self, prompts: Sequence[Prompt],
                            candidates: Sequence[str]) -> np.ndarray:
        torch = self._torch
        out = np.full((len(prompts), len(candidates)), -np.inf, dtype=np.float32)
        for group in self._groups(prompts):
            ps = [prompts[i] for i in group]
            images = None if ps[0].image is None else [p.image for p in ps]
            ids = torch.tensor([self.first_token_ids(p, candidates) for p in ps])
            logits = self._forward(self._inputs([self.render(p) for p in ps], images),
                                   **self._last_only).logits[:, -1, :].float()
            logprobs = torch.log_softmax(logits, dim=-1).gather(1, ids.to(logits.device))
            out[group] = logprobs.cpu().numpy()
        return out

    def continuation_logprobs(self, prompts: Sequence[Prompt],
                              continuations: Sequence[Sequence[str]]) -> list[list[np.ndarray]]:
        if len(prompts) != len(continuations):
            raise ValueError("one list of continuations per prompt")
        return [self._continuations(p, list(c)) for p, c in zip(prompts, continuations,
                                                                strict=True)]

    def _continuations(self, prompt: Prompt, conts: list[str]) -> list[np.ndarray]:
        torch = self._torch
        rendered = self.render(prompt)
        ids = answer_token_ids(self.tokenizer, rendered, conts)
        images = None if prompt.image is None else [prompt.image]
        pre = self._forward(self._inputs([rendered], images), use_cache=True, **self._last_only)
        first = torch.log_softmax(pre.logits[0, -1].float(), dim=-1).cpu()
        cache = getattr(pre, self._cache_arg, None)
        if cache is None:
            cache = pre.past_key_values
        out = [np.array([first[t[0]].item()], dtype=np.float32) for t in ids]
        rest = sorted((j for j, t in enumerate(ids) if len(t) > 1), key=lambda j: len(ids[j]))
        vocab = int(pre.logits.shape[-1])
        start = 0
        while start < len(rest):
            width = len(ids[rest[min(len(rest) - 1, start + MAX_CHUNK - 1)]]) - 1
            size = max(1, min(MAX_CHUNK, MAX_CHUNK_LOGITS // max(1, width * vocab)))
            chunk = rest[start:start + size]
            start += size
            tail = self._tail_logprobs(cache, [ids[j] for j in chunk])
            for j, lp in zip(chunk, tail, strict=True):
                out[j] = np.concatenate([out[j], lp]).astype(np.float32)
        return out

    def _tail_logprobs(self, cache: Any, ids: list[list[int]]) -> list[np.ndarray]:
        """log p of tokens 1.. of each continuation: tokens 0..n-2 are fed after
        the cached prefix, repeated once per continuation."""
        torch = self._torch
        width = max(len(t) for t in ids) - 1
        pad = int(self.tokenizer.pad_token_id or 0)
        feed = torch.tensor([t[:-1] + [pad] * (width - len(t) + 1) for t in ids],
                            device=self.device)
        target = torch.tensor([t[1:] + [pad] * (width - len(t) + 1) for t in ids])
        kv = copy.deepcopy(cache)
        kv.batch_repeat_interleave(len(ids))
        logits = self._forward_cached(feed, kv).float()
        lp = (logits.gather(2, target.to(logits.device)[..., None])[..., 0]
              - torch.logsumexp(logits, dim=-1)).cpu().numpy()
        return [lp[i, : len(t) - 1] for i, t in enumerate(ids)]

    def _forward_cached(self, feed: Any, kv: Any) -> Any:
        # no _reset_rope_state: the positions continue the cached prefix's
        with self._torch.inference_mode():
            return self.model(input_ids=feed, use_cache=True, **{self._cache_arg: kv}).logits

    def generate(self, prompts: Sequence[Prompt], config: GenerationConfig) -> list[str]:
        out = [""] * len(prompts)
        for group in self._groups(prompts):
            ps = [prompts[i] for i in group]
            images = None if ps[0].image is None else [p.image for p in ps]
            inputs = self._inputs([self.render(p) for p in ps], images)
            kwargs: dict[str, Any] = {"max_new_tokens": config.max_new_tokens,
                                      "do_sample": False, "num_beams": 1,
                                      "pad_token_id": self.tokenizer.pad_token_id}
            if config.stop:
                kwargs.update(stop_strings=list(config.stop), tokenizer=self.tokenizer)
            _reset_rope_state(self.model)
            with self._torch.inference_mode():
                seqs = self.model.generate(**inputs, **kwargs)
            new = seqs[:, inputs["input_ids"].shape[1]:]
            texts = self.tokenizer.batch_decode(new, skip_special_tokens=True)
            for i, text in zip(group, texts, strict=True):
                out[i] = cut_at_stop(text, config.stop)
        return out

    # -- beyond the primitives ---------------------------------------------
    def context_limit(self) -> tuple[int, str] | None:
        """The most tokens one call may hold, and where that limit comes from:
        the language model's ``max_position_embeddings`` or the tokenizer's
        ``model_max_length``, whichever is smaller (None: neither is set)."""
        cfg = self.model.config
        text_cfg = cfg.get_text_config() if hasattr(cfg, "get_text_config") else cfg
        found = []
        mpe = getattr(text_cfg, "max_position_embeddings", None)
        if isinstance(mpe, int) and mpe > 0:
            found.append((mpe, f"max_position_embeddings {mpe}"))
        mml = getattr(self.tokenizer, "model_max_length", None)
        if isinstance(mml, int) and 0 < mml < 10**9:  # transformers' "no limit" is ~1e30
            found.append((mml, f"the tokenizer's model_max_length {mml}"))
        return min(found) if found else None

    def prompt_tokens(self, prompt: Prompt) -> int:
        """Tokens the model receives for ``prompt``, image tokens included (the
        processor's own expansion of the image placeholder)."""
        images = None if prompt.image is None else [prompt.image]
        return int(self._inputs([self.render(prompt)], images)["input_ids"].shape[1])

    def embed_images(self, images: Sequence[Any]) -> np.ndarray:
        """Mean of the vision tower's projected image tokens, L2-normalised."""
        torch = self._torch
        text = self._chat("", True)
        feats = []
        for im in images:  # one at a time: image token counts may differ between images
            inputs = self._inputs([text], [im])
            kwargs = {k: v for k, v in inputs.items() if k not in
                      ("input_ids", "attention_mask", "token_type_ids", "mm_token_type_ids")}
            with torch.inference_mode():
                try:
                    feat = self.model.get_image_features(**kwargs)
                except (AttributeError, TypeError) as exc:
                    raise VlmrobustError(
                        f"{self.name}: image embeddings are not supported ({exc})"
                    ) from None
            feats.append(_pool(feat).float())
        emb = torch.nn.functional.normalize(torch.stack(feats), dim=-1)
        return np.asarray(emb.cpu().numpy(), dtype=np.float32)


def cut_at_stop(text: str, stop: Sequence[str]) -> str:
    """``text`` up to the first occurrence of any stop string.

    >>> cut_at_stop("B. dog\\nQuestion: next", ["\\nQuestion", "###"])
    'B. dog'
    """
    cut = min((i for i in (text.find(s) for s in stop if s) if i >= 0), default=len(text))
    return text[:cut]


def _pool(out: Any) -> Any:
    """Mean over all image tokens of whatever get_image_features returned."""
    import torch

    if hasattr(out, "pooler_output") and out.pooler_output is not None:
        out = out.pooler_output
    elif hasattr(out, "last_hidden_state"):
        out = out.last_hidden_state
    if isinstance(out, (list, tuple)):
        out = torch.cat([o.reshape(-1, o.shape[-1]) for o in out])
    return out.reshape(-1, out.shape[-1]).mean(dim=0)


def load_hf(target: str, options: Mapping[str, Any]) -> HfBackend:
    """The BackendFamily loader: ``target`` is a hub id or a saved model folder."""
    name = str(options.get("name") or f"vlm:{target}")
    opts = HfLoadOptions.from_mapping(name, {k: v for k, v in options.items() if k != "name"})
    model, processor, device = load_model(name, target, opts)
    return HfBackend(name, model, processor, device)


HF_FAMILY = BackendFamily("hf", load_hf, help="transformers in process (vlm:HUB_ID_OR_DIR)")
