"""MoonDream2 (``moondream:vikhyatk/moondream2`` or a local folder), one of the
Bench-C paper's three selectors.

MoonDream2 ships its modelling code with the checkpoint: its ``auto_map``
registers a causal-LM class only (``AutoModelForCausalLM``), with no processor
and no chat template; it answers through its own API, ``model.query(image,
question)["answer"]`` (and ``model.encode_image``). So it cannot be read by
letter logits like the ``vlm`` family: the question and lettered options go in
as text (``vlm.format_question``), and the project's answer matcher
(vlmrobust.core.text.matcher) reads the option from the answer. ``option_logits``
is then one-hot on that option (all zeros when the matcher finds none, so that
option A is taken): enough for a selector, whose κ uses top-1 answers only,
but not logits to compute calibration or RAS from.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from vlmrobust.core.errors import VlmrobustError
from vlmrobust.core.text.matcher import match_option
from vlmrobust.models.base import ADAPTER_FAMILIES, AdapterFamily, AdapterSpec, pad_rows
from vlmrobust.models.hub_access import require_target
from vlmrobust.models.label_space_prompts import resolve_vlm_prompt
from vlmrobust.models.runtime import preferred_dtype, resolve_device, to_pil
from vlmrobust.models.vlm import LETTERS, format_question


class MoondreamAdapter:
    family = "vlm"

    def __init__(self, name: str, model: Any, prompt: str | None = None) -> None:
        if not callable(getattr(model, "query", None)):
            raise VlmrobustError(f"{name}: the checkpoint's model has no query(image, question) "
                                 "method; it is not a MoonDream2 release")
        self.name = name
        self.model = model.eval() if hasattr(model, "eval") else model
        self.params = int(sum(p.numel() for p in model.parameters())) \
            if hasattr(model, "parameters") else None
        self.vision_encoder = "moondream-siglip"
        self.prompt_id = resolve_vlm_prompt(prompt)
        self.max_options = len(LETTERS)
        self.unmatched = 0  # answers the matcher could not read (counted, taken as A)

    def answer(self, row: Mapping[str, Any]) -> str:
        text = format_question(str(row.get("question") or ""), [str(o) for o in row["options"]],
                               self.prompt_id)
        out = self.model.query(to_pil(row["image"]), text)
        answer = out.get("answer") if isinstance(out, Mapping) else None
        if not isinstance(answer, str):
            raise VlmrobustError(f"{self.name}: query() returned {type(out).__name__} without "
                                 "an 'answer' string")
        return answer

    def option_logits(self, rows: Sequence[Mapping[str, Any]]) -> np.ndarray:
        out = []
        for row in rows:
            options = [str(o) for o in row["options"]]
            picked = match_option(self.answer(row), options)
            logits = np.zeros(len(options), dtype=np.float32)
            if picked is None:
                self.unmatched += 1
            else:
                logits[picked] = 1.0
            out.append(logits)
        return pad_rows(out)

    def embed_images(self, images: Sequence[Any]) -> np.ndarray:
        raise VlmrobustError(f"{self.name}: image embeddings are not supported; use a clip: "
                             "or hf: image embedder")


def _parse(name: str, target: str) -> AdapterSpec:
    path = Path(target)
    if path.exists():
        if not (path / "config.json").is_file():
            raise VlmrobustError(f"{name}: {path}/config.json not found; point moondream: at "
                                 "a saved MoonDream2 folder")
    elif target.startswith((".", "/", "~")) or target.count("/") != 1:
        raise VlmrobustError(f"{name}: {target!r} is neither a model folder nor a hub id "
                             "(OWNER/NAME)")
    return AdapterSpec(name=name, family="vlm", target=target, max_options=len(LETTERS))


def _load(spec: AdapterSpec, device: str | None, prompt: str | None = None,
          trust_remote_code: bool = False, **opts: Any) -> MoondreamAdapter:
    """MoonDream2's code comes with its checkpoint: it runs only when the user
    trusts it (``--trust-remote-code`` or ``trust_remote_code: true``)."""
    if opts:
        raise VlmrobustError(f"{spec.name}: unexpected options {sorted(opts)} (MoonDream2 "
                             "answers through its own query(); no other answer mode)")
    resolve_vlm_prompt(prompt)
    if not trust_remote_code:
        raise VlmrobustError(
            f"{spec.name}: the model's code ships with the checkpoint; if you trust it, pass "
            "--trust-remote-code (or set trust_remote_code: true in the spec)")
    require_target(spec.name, spec.target)
    from transformers import AutoModelForCausalLM

    dev = resolve_device(device)
    try:
        model = AutoModelForCausalLM.from_pretrained(spec.target, dtype=preferred_dtype(dev),
                                                     trust_remote_code=True)
    except (OSError, ValueError, KeyError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise VlmrobustError(f"{spec.name}: could not load the model ({first})") from None
    return MoondreamAdapter(spec.name, model.to(dev), prompt)


ADAPTER_FAMILIES.add("moondream", AdapterFamily(
    "moondream", _parse, _load,
    help="MoonDream2 (its own query() API; answers read by the matcher; a Bench-C selector)"))
