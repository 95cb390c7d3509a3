"""The questioner behind ``discover sample``: a local model folder (sampled,
the same prompt format GRPO trains on) or any backend model (greedy, e.g. an
API model as a zero-shot baseline), with two strategies:

- ``zero-shot`` / ``rl``: one turn, :func:`.prompts.questioner_prompt`;
- ``conme``: ConMe-style two turns: the model first describes the image, then
  asks k questions grounded in its description (:func:`.prompts.conme_ask_prompt`).

A local folder holding a causal LM (no vision config, e.g. the tiny planted
questioner) is prompted with the plain prompt text and never sees the image;
an image-text-to-text folder gets the image and the prompt as one user turn
through its chat template, as TRL's GRPO trainer renders it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from vlmrobust.core.errors import VlmrobustError
from vlmrobust.evaluation.discover.prompts import conme_ask_prompt, questioner_prompt
from vlmrobust.models.backends.base import Backend, GenerationConfig, Prompt

STRATEGIES = ("zero-shot", "conme")
# What ``discover train`` writes beside the trained questioner: not part of the
# model (its id leaves them out). Named here, below the trainer that imports them.
RUN_RECORD = "discover_run.json"
JOURNAL = "journal.jsonl"


class TextGenerator(Protocol):
    name: str

    def generate(self, prompts: Sequence[tuple[str, Any]], seeds: Sequence[int]) -> list[str]:
        """One completion per (prompt text, PIL image) pair; ``seeds`` per item."""
        ...


def local_questioner_id(folder: Path) -> str:
    """``local:<folder name>@<12 hex>``: the hash of the model the folder holds
    (its top-level files, by content; not the path, so the same weights in two
    folders share an id, and a rerun's records match). A ``discover train``
    folder's run record and journal are not the model: left out, since the
    record holds timestamps and the journal names this very id."""
    from vlmrobust.core.fingerprint import tree_fingerprint
    from vlmrobust.core.text.public_names import public_name

    files = [p for p in folder.iterdir() if p.is_file() and p.name not in (RUN_RECORD, JOURNAL)]
    return public_name(f"local:{folder}", tree_fingerprint(files, folder),
                       lambda part: part == str(folder))[0]


def is_vision_folder(folder: Path) -> bool:
    from transformers import AutoConfig

    cfg = AutoConfig.from_pretrained(folder)
    return getattr(cfg, "vision_config", None) is not None


class LocalGenerator:
    """A model folder (causal LM or image-text-to-text), sampled with
    ``temperature`` / ``top_p``; item i is generated under its own seed."""

    def __init__(self, folder: Path, name: str, max_new_tokens: int = 128,
                 temperature: float = 1.0, top_p: float = 1.0, device: str | None = None) -> None:
        import torch
        from transformers import (
            AutoModelForCausalLM,
            AutoModelForImageTextToText,
            AutoProcessor,
            AutoTokenizer,
        )

        from vlmrobust.models.runtime import resolve_device

        if temperature <= 0 or not 0 < top_p <= 1:
            raise VlmrobustError("--temperature must be > 0 and --top-p in (0, 1]")
        self._torch = torch
        self.name = name
        self.device = resolve_device(device)
        try:
            self.vision = is_vision_folder(folder)
            if self.vision:
                self.processor = AutoProcessor.from_pretrained(folder)
                self.tokenizer = self.processor.tokenizer
                self.model = AutoModelForImageTextToText.from_pretrained(folder)
            else:
                self.tokenizer = AutoTokenizer.from_pretrained(folder)
                self.processor = self.tokenizer
                self.model = AutoModelForCausalLM.from_pretrained(folder)
        except (OSError, ValueError, KeyError) as exc:
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise VlmrobustError(f"{folder}: could not load the questioner ({first})") from None
        self.model.to(self.device).eval()
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.tokenizer.padding_side = "left"
        self.kwargs = {"max_new_tokens": max_new_tokens, "do_sample": True,
                       "temperature": temperature, "top_p": top_p,
                       "pad_token_id": self.tokenizer.pad_token_id}

    def _inputs(self, text: str, image: Any) -> Any:
        if self.vision:
            chat = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": text}]}]
            rendered = self.processor.apply_chat_template(chat, add_generation_prompt=True,
                                                          tokenize=False)
            batch = self.processor(text=[rendered], images=[image], return_tensors="pt")
        else:
            batch = self.tokenizer([text], return_tensors="pt")
        return {k: v.to(self.device) for k, v in batch.items() if hasattr(v, "to")}

    def generate(self, prompts: Sequence[tuple[str, Any]], seeds: Sequence[int]) -> list[str]:
        torch = self._torch
        out = []
        for (text, image), seed in zip(prompts, seeds, strict=True):
            inputs = self._inputs(text, image)
            # a seed per item: the same image gets the same questions in any batch order
            devices = [self.device] if self.device.type == "cuda" else []
            with torch.random.fork_rng(devices=devices), torch.inference_mode():
                torch.manual_seed(seed)
                seq = self.model.generate(**inputs, **self.kwargs)
            new = seq[0, inputs["input_ids"].shape[1]:]
            out.append(self.tokenizer.decode(new, skip_special_tokens=True))
        return out


class BackendGenerator:
    """Any backend (``vlm:``, ``endpoint:``): greedy, so seeds are not used."""

    def __init__(self, backend: Backend, max_new_tokens: int = 256) -> None:
        self.backend = backend
        self.name = backend.name
        self.config = GenerationConfig(max_new_tokens=max_new_tokens)

    def generate(self, prompts: Sequence[tuple[str, Any]], seeds: Sequence[int]) -> list[str]:
        return self.backend.generate([Prompt(text=t, image=im) for t, im in prompts], self.config)


class Questioner:
    """k questions per image in one completion (``strategy`` zero-shot or conme);
    the rendered prompts are kept in ``last_prompts`` for the run record."""

    def __init__(self, generator: TextGenerator, k: int, strategy: str = "zero-shot",
                 template: str | None = None) -> None:
        if strategy not in STRATEGIES:
            raise VlmrobustError(f"--strategy {strategy!r}: use one of {list(STRATEGIES)}")
        self.generator = generator
        self.name = generator.name
        self.k = k
        self.strategy = strategy
        self.prompt = questioner_prompt(k) if template is None else questioner_prompt(k, template)

    def complete(self, images: Sequence[Any], seeds: Sequence[int]) -> list[str]:
        """One completion per image (the k questions are parsed downstream)."""
        if self.strategy == "zero-shot":
            return self.generator.generate([(self.prompt, im) for im in images], seeds)
        from vlmrobust.evaluation.discover.prompts import CONME_DESCRIBE

        descriptions = self.generator.generate([(CONME_DESCRIBE, im) for im in images], seeds)
        asks = [(conme_ask_prompt(self.k, d), im) for d, im in zip(descriptions, images,
                                                                    strict=True)]
        return self.generator.generate(asks, [s + 1 for s in seeds])


def make_questioner(spec: str, k: int, strategy: str, *, temperature: float = 1.0,
                    top_p: float = 1.0, max_new_tokens: int = 128, device: str | None = None,
                    **backend_opts: Any) -> Questioner:
    """``spec``: a local model folder (sampled) or ``vlm:ID`` / ``endpoint:NAME``."""
    from vlmrobust.evaluation.discover.roles import load_backend

    if spec.startswith(("vlm:", "endpoint:")):
        gen: TextGenerator = BackendGenerator(load_backend(spec, device=device, **backend_opts),
                                              max_new_tokens)
    else:
        folder = Path(spec)
        if not folder.is_dir():
            raise VlmrobustError(f"--questioner {spec}: not a model folder; give a folder, "
                                 "vlm:HUB_ID or endpoint:NAME")
        gen = LocalGenerator(folder, local_questioner_id(folder), max_new_tokens, temperature,
                             top_p, device)
    return Questioner(gen, k, strategy)
