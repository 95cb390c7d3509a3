"""VLMs seen through the benchmark: a backend (vlmrobust.models.backends: ``hf``
in process for ``vlm:<hub id or folder>``) read in one answer mode
(vlmrobust.models.readers: ``letter`` by default, ``likelihood:*``,
``generate``, ``open-world``).

``letter`` is the reading this adapter always made: the question and lettered
options through the model's chat template, one forward pass of the
left-padded batch, the option letters' next-token scores at the answer
position. They are log-probabilities (log-softmax over the vocabulary), which
differ from the raw logits by one constant per row: every probability over
the options, and so every metric, is unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from vlmrobust.core.errors import VlmrobustError
from vlmrobust.core.label_space import LabelSpace
from vlmrobust.models.backends.base import Backend
from vlmrobust.models.backends.hf import answer_separator
from vlmrobust.models.base import (
    ADAPTER_FAMILIES,
    AdapterFamily,
    AdapterSpec,
    pad_rows,
)
from vlmrobust.models.label_space_prompts import resolve_vlm_prompt
from vlmrobust.models.prompts import DEFAULT_VLM_PROMPT, VLM_INSTRUCTIONS
from vlmrobust.models.readers.base import (
    LETTERS,
    Reader,
    Reading,
    ReadOptions,
    format_question,
    refuse_missing,
    row_where,
)
from vlmrobust.models.readers.label_space import DEFAULT_CLASS_ORDER, LabelSpaceReads
from vlmrobust.models.readers.modes import parse_mode

DEFAULT_PROMPT = DEFAULT_VLM_PROMPT
# kept for callers of the former names
VLM_PROMPTS = VLM_INSTRUCTIONS
answer_prefix = answer_separator
__all__ = ["LETTERS", "VlmAdapter", "answer_prefix", "format_question", "letter_token_ids"]


def letter_token_ids(tokenizer: Any, generation_prompt: str, n: int = len(LETTERS)) -> list[int]:
    """Token ids of the answer letters A, B, ... after ``generation_prompt`` (the
    hf backend's answer-token rule), for the longest run of letters that have a
    distinct single token (at most ``n``)."""
    from vlmrobust.models.backends.hf import answer_token_ids

    ids: list[int] = []
    for letter in LETTERS[:n]:
        new = answer_token_ids(tokenizer, generation_prompt, [letter])[0]
        if tokenizer.decode([new[0]]).strip() != letter or new[0] in ids:
            break
        ids.append(int(new[0]))
    if len(ids) < 2:
        sep = answer_separator(generation_prompt)
        raise VlmrobustError(
            f"the tokenizer has no distinct single tokens for answers {sep + 'A'!r}, "
            f"{sep + 'B'!r} after {generation_prompt[-20:]!r}; "
            "this model cannot be scored by letter logits"
        )
    return ids


class VlmAdapter:
    """A backend read in one answer mode (see the module doc)."""

    family = "vlm"

    def __init__(self, name: str, backend: Backend, reader: Reader | None = None,
                 prompt: str | None = None, backend_kind: str = "hf",
                 class_order: str | None = None) -> None:
        self.name = name
        self.backend = backend
        self.reader = reader if reader is not None else parse_mode(None)
        refuse_missing(backend, self.reader)
        self.prompt_id = resolve_vlm_prompt(prompt)
        # over a label space the prompt is a LABEL_SPACE_PROMPTS entry (None: the default)
        self.requested_prompt = prompt
        self.mode = self.reader.mode
        self.backend_kind = backend_kind
        self.max_options = self.reader.max_options
        self.params = getattr(backend, "params", None)
        self.vision_encoder = getattr(backend, "vision_encoder", None)
        self.device = getattr(backend, "device", None)
        # closed-world generation over a label space lists the classes in this order
        self.class_order = class_order
        self._labels: LabelSpaceReads | None = None

    def _label_reads(self) -> LabelSpaceReads:
        if self._labels is None:
            self._labels = LabelSpaceReads(self.reader, self.backend, self.requested_prompt,
                                           self.class_order or DEFAULT_CLASS_ORDER,
                                           getattr(self.reader, "options", None))
        return self._labels

    @property
    def label_prompt_id(self) -> str:
        """The label-space prompt every call over a label space is rendered from."""
        return self._label_reads().prompt_id

    def check_label_space(self) -> None:
        """What refuses a label-space run before any row is read."""
        self._label_reads()  # a prompt that cannot ask over a label space
        options = getattr(self.reader, "options", None)
        if self.mode == "generate" and getattr(options, "answer_cue", None) is not None:
            raise VlmrobustError("--answer-cue reads option letters; closed-world generation "
                                 "over a label space lists class names without letters")
        if self.class_order is not None and self.mode != "generate":
            raise VlmrobustError(f"--class-order applies to --mode generate (closed world), "
                                 f"not {self.mode}")

    def preflight(self, rows: Sequence[Mapping[str, Any]], space: LabelSpace) -> None:
        """The context-limit check on ``rows`` (predict runs it on each config's
        first row before the journal starts)."""
        reads = self._label_reads()
        reads.check_context(rows, space, [row_where(r, i) for i, r in enumerate(rows)])

    def read_labels(self, rows: Sequence[Mapping[str, Any]], space: LabelSpace) -> list[Reading]:
        """Per row, a reading over ``space`` (or the row's candidates):
        :mod:`vlmrobust.models.readers.label_space`."""
        return self._label_reads().read(rows, space)

    def prompt_for(self, row: Mapping[str, Any], where: str = "row") -> str:
        """The exact text the model receives for ``row``'s main call."""
        return self.backend.render(self.reader.prompt(row, self.prompt_id, where))

    def read(self, rows: Sequence[Mapping[str, Any]]) -> list[Reading]:
        too_many = [r for r in rows if self.max_options is not None
                    and len(r.get("options") or ()) > self.max_options]
        if too_many:
            raise VlmrobustError(
                f"{row_where(too_many[0], 0)}: {len(too_many[0]['options'])} options, but "
                f"--mode {self.mode} reads at most {self.max_options}"
            )
        return self.reader.read(self.backend, rows, self.prompt_id)

    def option_logits(self, rows: Sequence[Mapping[str, Any]]) -> np.ndarray:
        readings = self.read(rows)
        if any(r.logits is None for r in readings):
            raise VlmrobustError(f"--mode {self.mode} gives no option logits without "
                                 "--answer-cue; use vlmrobust predict, which keeps its answers")
        return pad_rows([np.asarray(r.logits, dtype=np.float32) for r in readings])

    def embed_images(self, images: Sequence[Any]) -> np.ndarray:
        embed = getattr(self.backend, "embed_images", None)
        if embed is None:
            raise VlmrobustError(f"{self.name}: image embeddings are not supported by "
                                 f"backend {self.backend.name!r}")
        out: np.ndarray = embed(images)
        return out

    # the hf backend's model and processor, for callers that inspect them
    @property
    def model(self) -> Any:
        return getattr(self.backend, "model", None)

    @property
    def processor(self) -> Any:
        return getattr(self.backend, "processor", None)

    @property
    def tokenizer(self) -> Any:
        return getattr(self.backend, "tokenizer", None)


def _parse(name: str, target: str) -> AdapterSpec:
    path = Path(target)
    if path.exists():
        if not (path / "config.json").is_file():
            raise VlmrobustError(f"{name}: {path}/config.json not found; "
                                 "point vlm: at a saved transformers model folder")
    elif target.startswith((".", "/", "~")) or target.count("/") != 1:
        raise VlmrobustError(f"{name}: {target!r} is neither a model folder nor a hub id "
                             "(OWNER/NAME)")
    return AdapterSpec(name=name, family="vlm", target=target, max_options=len(LETTERS))


def _load(spec: AdapterSpec, device: str | None, prompt: str | None = None,
          trust_remote_code: bool = False, mode: str | None = None,
          read_options: ReadOptions | None = None, device_map: str | None = None,
          class_order: str | None = None, **opts: Any) -> VlmAdapter:
    """``trust_remote_code`` lets transformers run the modelling code that ships
    with a checkpoint (``auto_map`` in its config.json: MoonDream2 and the
    original Ovis2 / InternVL releases); off unless the spec or
    ``--trust-remote-code`` turns it on. ``device_map`` shards the model over
    the visible devices (accelerate)."""
    if opts:
        raise VlmrobustError(f"{spec.name}: unexpected options {sorted(opts)}")
    resolve_vlm_prompt(prompt)
    reader = parse_mode(mode, read_options)  # a bad mode fails before the model loads
    from vlmrobust.models.backends.hf import load_hf

    backend = load_hf(spec.target, {"name": spec.name, "device": device,
                                    "device_map": device_map,
                                    "trust_remote_code": trust_remote_code})
    return VlmAdapter(spec.name, backend, reader, prompt=prompt, backend_kind="hf",
                      class_order=class_order)


ADAPTER_FAMILIES.add("vlm", AdapterFamily("vlm", _parse, _load,
                                          help="transformers image-text-to-text"))
