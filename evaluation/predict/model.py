"""The model of a prediction run: its parsed name and answer reader (settled,
and a bad prompt, mode or option refused, before anything loads), the names it
is recorded under, and loading it with the run's options."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from vlmrobust.core.errors import VlmrobustError
from vlmrobust.core.text.public_names import looks_like_path
from vlmrobust.evaluation.predict.spec import ReaderOptions, RunSpec
from vlmrobust.models import load_adapter, parse_adapter_name
from vlmrobust.models.base import Adapter, AdapterSpec
from vlmrobust.models.readers import Reader, ReadOptions, parse_mode
from vlmrobust.models.readers.base import CLASS_LOGITS, EMBEDDING

# how the adapters that are not read through a backend turn a row into logits
FIXED_MODES = {"classifier": CLASS_LOGITS, "other": CLASS_LOGITS, "clip": EMBEDDING}


def adapter_spec(model: str | Adapter, opts: ReaderOptions) -> tuple[AdapterSpec, Reader | None]:
    """The adapter spec and, for a vlm, its reader; a bad prompt, mode or
    option fails here, before any model loads."""
    if isinstance(model, str):
        spec = parse_adapter_name(model)
    else:
        from vlmrobust.models.classifiers.adapter import CLASSIFIER_COLUMNS

        cols = CLASSIFIER_COLUMNS if model.family == "classifier" else AdapterSpec.required_columns
        spec = AdapterSpec(model.name, model.family, model.name, required_columns=cols,
                           max_options=getattr(model, "max_options", None))
    if spec.family == "classifier":
        from vlmrobust.models.prompts import resolve_classifier_prompt

        resolve_classifier_prompt(opts.prompt)  # a typo fails before the model loads
    reader: Reader | None = None
    mode = opts.mode
    if spec.family == "vlm":
        loaded = None if isinstance(model, str) else getattr(model, "reader", None)
        if loaded is not None and mode is not None and mode != loaded.mode:
            raise VlmrobustError(f"--mode {mode}: the loaded adapter reads {loaded.mode}")
        reader = loaded if loaded is not None else parse_mode(mode, opts.read_options)
        if isinstance(model, str):
            spec = dataclasses.replace(spec, max_options=reader.max_options)
    elif mode is not None and mode != FIXED_MODES.get(spec.family):
        fixed = FIXED_MODES.get(spec.family, "its own reading")
        raise VlmrobustError(f"--mode {mode}: answer modes apply to vlm models; {spec.name} "
                             f"is read by {fixed}")
    elif opts.read_options is not None and opts.read_options != ReadOptions():
        raise VlmrobustError("--max-new-tokens, --stop and --answer-cue apply to vlm models")
    return spec, reader


def mode_id(spec: AdapterSpec, reader: Reader | None, model: str | Adapter) -> str | None:
    """The answer mode recorded for the run (a vlm's reader, else the family's fixed one)."""
    if reader is not None:
        return reader.mode
    return getattr(model, "mode", None) or FIXED_MODES.get(spec.family)


def backend_of(spec: AdapterSpec) -> str | None:
    """The backend a vlm name runs on (``vlm:`` in process: hf; ``endpoint:``)."""
    if spec.family != "vlm":
        return None
    prefix = spec.name.partition(":")[0]
    return "hf" if prefix == "vlm" else prefix


def read_record(reader: Reader | None) -> dict[str, Any] | None:
    """The generating readers' limits, which change their answers."""
    options = getattr(reader, "options", None)
    return options.record() if isinstance(options, ReadOptions) else None


def load_model(run: RunSpec, spec: AdapterSpec, reader: Reader | None,
               prompt: str | None) -> Adapter:
    """Load ``run.model`` (a name) with the run's options; ``prompt`` is the one
    the run settled on (a label space's, CLIP's default template, or the
    user's). An option the model's family does not take is refused."""
    backend = run.backend
    opts: dict[str, Any] = {"prompt": prompt} if prompt is not None else {}
    if run.reader.class_order is not None:
        if spec.family != "vlm":
            raise VlmrobustError(f"--class-order applies to vlm models, not {spec.name}")
        opts["class_order"] = run.reader.class_order
    if spec.name.startswith("endpoint:"):
        opts["endpoint"] = dict(backend.endpoint or {})
    elif backend.endpoint:
        raise VlmrobustError(f"--endpoint-* options apply to endpoint: models, not {spec.name}")
    if backend.trust_remote_code:
        if spec.family != "vlm":
            raise VlmrobustError(f"--trust-remote-code applies to vlm models, not {spec.name}")
        opts["trust_remote_code"] = True
    if backend.device_map is not None:
        if spec.family != "vlm":
            raise VlmrobustError(f"--device-map applies to vlm models, not {spec.name}")
        opts["device_map"] = backend.device_map
    if reader is not None:
        opts.update(mode=reader.mode, read_options=run.reader.read_options)
    return load_adapter(spec.name, device=backend.device, **opts)


def is_local_path(part: str) -> bool:
    """Whether a model name's part names a local file or folder (kept out of
    the metadata: :func:`vlmrobust.core.text.public_names.publishable_meta`)."""
    # "vlm:runs/tiny" loads a folder when one exists there, as transformers does
    return looks_like_path(part) or ("/" in part and Path(part).expanduser().exists())
