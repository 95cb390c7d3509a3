"""A submitted model's metadata (``meta.yaml``): :class:`ModelMeta`, built from
the predictions' own metadata (public names only) and merged deliberately
across a model's datasets on every submit; model ids and links checked."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from vlmrobust import __version__
from vlmrobust.core.errors import SubmissionError
from vlmrobust.core.files.bounded import read_bytes_bounded
from vlmrobust.core.text.display import check_text_fields, short_repr
from vlmrobust.core.text.public_names import publishable_meta
from vlmrobust.evaluation.model_groups import GROUP_FIELDS, group_problems, training_size_of

META_NAME = "meta.yaml"
# Folders of the submissions tree that are not models: the published JSON
# Schemas, and dataset directories shipped with the submissions (searched by
# fingerprint when the leaderboard re-scores them).
RESERVED = frozenset({"schemas", "datasets"})

# Matched whole (re.fullmatch): "abc\n" must fail, which "^...$" with re.match lets through.
MODEL_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
MODEL_FAMILIES = ("vlm", "clip", "classifier", "other")
LINK_FIELDS = ("paper_url", "code_url", "weights_url")
MAX_BIBTEX = 20_000
_LINK_RE = re.compile(r"^https?://[^\s/?#]+[^\s]*$", re.IGNORECASE)
# A parameter count beyond this is a typo or an attack (formatting it overflowed
# a float: issue 28.14); the largest published models have ~2e12.
MAX_PARAMS = 10 ** 15
# Text shown on pages and charts: no control characters (vlmrobust.core.text.display).
TEXT_FIELDS = ("name", "vision_encoder", "prompt_id", "date", "tool_version", "adapter", "bibtex")


def is_model_id(model_id: object) -> bool:
    r"""Whether ``model_id`` is a safe folder name (full-string match).

    >>> is_model_id("efficientnet-lite0"), is_model_id("x\n"), is_model_id("a..b")
    (True, False, False)
    """
    return (isinstance(model_id, str) and MODEL_ID_RE.fullmatch(model_id) is not None
            and ".." not in model_id and model_id not in RESERVED)


def validate_model_id(model_id: str) -> str:
    """Return ``model_id`` if it is a safe folder name, else raise SubmissionError.

    >>> validate_model_id("efficientnet-lite0")
    'efficientnet-lite0'
    >>> validate_model_id("../etc")
    Traceback (most recent call last):
    ...
    vlmrobust.core.errors.SubmissionError: invalid model id '../etc': use 1-100 characters from A-Z a-z 0-9 . _ -, starting with a letter or digit, without '..'
    """
    if not is_model_id(model_id):
        raise SubmissionError(
            f"invalid model id {model_id!r}: use 1-100 characters from A-Z a-z 0-9 . _ -, "
            "starting with a letter or digit, without '..'" + (
                f" ({model_id!r} is reserved)" if model_id in RESERVED else "")
        )
    return model_id


def check_link(url: object, where: str) -> None:
    """Links in model metadata are absolute http(s) URLs: no ``javascript:`` or
    ``data:`` scheme can reach a page through them.

    >>> check_link("https://arxiv.org/abs/2103.00020", "x")
    >>> check_link("javascript:alert(1)", "paper_url")
    Traceback (most recent call last):
    ...
    vlmrobust.core.errors.SubmissionError: paper_url: 'javascript:alert(1)' is not an http(s) URL; give e.g. https://arxiv.org/abs/...
    """
    if url is None:
        return
    if not isinstance(url, str) or len(url) > 2000 or not _LINK_RE.fullmatch(url) \
            or any(ord(c) < 0x20 or c in "<>\"'`" for c in url):
        raise SubmissionError(f"{where}: {url!r} is not an http(s) URL; give e.g. https://arxiv.org/abs/...")


@dataclass(frozen=True)
class ModelMeta:
    """submissions/<model-id>/meta.yaml."""

    model_id: str
    name: str
    family: str = "other"
    vision_encoder: str | None = None
    params: int | None = None
    prompt_id: str | None = None
    date: str | None = None
    tool_version: str | None = None
    adapter: str | None = None
    # Optional citation links shown on the model page (https/http only) and BibTeX.
    paper_url: str | None = None
    code_url: str | None = None
    weights_url: str | None = None
    bibtex: str | None = None
    # how a VLM was read (letter, likelihood:sum, generate, ...): its own leaderboard line
    mode: str | None = None
    # The prompt of each dataset the model answers (a model may be run with a
    # different prompt per dataset); prompt_id is their common value, if any.
    prompts: dict[str, str | None] | None = None
    # Model groups (seed 001's factors; evaluation/model_groups.py): optional.
    architecture: str | None = None
    training_data: str | None = None
    training_size: int | None = None
    fine_tuned_on: str | None = None
    loss: str | None = None

    def __post_init__(self) -> None:
        validate_model_id(self.model_id)
        problems = group_problems({k: getattr(self, k) for k in GROUP_FIELDS})
        if problems:
            raise SubmissionError(f"model {self.model_id}: {problems[0]}")
        if self.prompts is not None and (
                not isinstance(self.prompts, dict)
                or not all(isinstance(k, str) and (v is None or isinstance(v, str))
                           for k, v in self.prompts.items())):
            raise SubmissionError(f"model {self.model_id}: prompts must map dataset names to "
                                  "prompt ids")
        for key in LINK_FIELDS:
            check_link(getattr(self, key), f"model {self.model_id}: {key}")
        if self.bibtex is not None and (not isinstance(self.bibtex, str) or len(self.bibtex) > MAX_BIBTEX):
            raise SubmissionError(f"model {self.model_id}: bibtex must be text of at most {MAX_BIBTEX} characters")
        if not isinstance(self.name, str) or not self.name.strip():
            # a blank name showed as an empty row on the leaderboard (issue 40.15)
            raise SubmissionError(f"model {self.model_id}: name must not be empty or blank; "
                                  "give the model's display name (--name)")
        if self.family not in MODEL_FAMILIES:
            raise SubmissionError(
                f"model {self.model_id}: family {self.family!r} is not one of {', '.join(MODEL_FAMILIES)}")
        if self.params is not None and (isinstance(self.params, bool) or not isinstance(self.params, int)
                                        or not 0 <= self.params <= MAX_PARAMS):
            shown = short_repr(self.params)
            raise SubmissionError(
                f"model {self.model_id}: params must be an integer count from 0 to {MAX_PARAMS:.0e} "
                f"(the largest models have ~2e12), got {shown}")
        for key in TEXT_FIELDS:
            value = getattr(self, key)
            if value is not None and not isinstance(value, str):
                raise SubmissionError(f"model {self.model_id}: {key} must be text, got "
                                      f"{type(value).__name__}")
        check_text_fields({k: getattr(self, k) for k in TEXT_FIELDS}, f"model {self.model_id}",
                          SubmissionError, multiline=("bibtex",))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _str_or_none(v: Any) -> str | None:
    return None if v is None else str(v)


def _params(v: Any, source: str) -> int | None:
    if v is None or (isinstance(v, int) and not isinstance(v, bool)):
        return v
    try:
        f = float(str(v).replace("_", ""))
    except ValueError:
        raise SubmissionError(f"{source}: params {v!r} is not a number (give a parameter count such as 5300000)") from None
    if not f.is_integer() or f < 0:
        raise SubmissionError(f"{source}: params {v!r} is not a non-negative integer count")
    return int(f)


def model_meta_from(model_id: str, prediction_meta: Mapping[str, Any] | None,
                    overrides: Mapping[str, Any] | None = None) -> ModelMeta:
    """Model metadata from the predictions' metadata, overridden by non-None
    ``overrides`` (e.g. command-line flags or a --meta file). A local path in the
    predictions' model name or vision encoder is replaced by its folder name and
    a hash (:mod:`vlmrobust.core.text.public_names`); only an explicit name is kept as given."""
    pm = publishable_meta(prediction_meta or {})
    merged: dict[str, Any] = {
        "name": pm.get("name") or pm.get("model"),
        "family": pm.get("family"),
        "vision_encoder": pm.get("vision_encoder"),
        "params": pm.get("params"),
        "prompt_id": pm.get("prompt_id"),
        "date": pm.get("date"),
        "tool_version": pm.get("tool_version"),
        "adapter": pm.get("adapter") or pm.get("model"),
        "mode": pm.get("mode"),
        **{k: pm.get(k) for k in (*LINK_FIELDS, "bibtex", *GROUP_FIELDS)},
    }
    merged.update({k: v for k, v in (overrides or {}).items() if v is not None and k != "model_id"})
    return ModelMeta(
        model_id=model_id,
        name=str(merged["name"] or model_id),
        family=str(merged["family"] or "other"),
        vision_encoder=_str_or_none(merged["vision_encoder"]),
        params=_params(merged["params"], "model metadata"),
        prompt_id=_str_or_none(merged["prompt_id"]),
        date=_str_or_none(merged["date"]) or dt.datetime.now(dt.timezone.utc).date().isoformat(),
        tool_version=_str_or_none(merged["tool_version"]) or __version__,
        adapter=_str_or_none(merged["adapter"]),
        mode=_str_or_none(merged["mode"]),
        paper_url=_str_or_none(merged["paper_url"]),
        code_url=_str_or_none(merged["code_url"]),
        weights_url=_str_or_none(merged["weights_url"]),
        bibtex=_str_or_none(merged["bibtex"]),
        architecture=merged["architecture"],
        training_data=merged["training_data"],
        training_size=training_size_of(merged["training_size"]),
        fine_tuned_on=merged["fine_tuned_on"],
        loss=merged["loss"],
    )


def read_old_meta(path: Path) -> dict[str, Any] | None:
    if not (path.exists() or path.is_symlink()):
        return None
    from vlmrobust.core.files.bounded import MAX_META_BYTES, parse_yaml_bounded

    data = parse_yaml_bounded(read_bytes_bounded(path, MAX_META_BYTES, "meta.yaml", SubmissionError),
                              str(path), SubmissionError)
    if not isinstance(data, dict):
        raise SubmissionError(f"{path}: expected a mapping of model fields; fix or remove it")
    return data


def merge_model_meta(model_id: str, old: Mapping[str, Any] | None, dataset: str,
                     prediction_meta: Mapping[str, Any] | None,
                     overrides: Mapping[str, Any] | None = None, where: str = META_NAME,
                     ) -> ModelMeta:
    """The model's metadata after submitting ``dataset``. The first submit sets
    every field; later ones keep them (the first name wins unless ``overrides``
    gives one; an override replaces any field), fill fields still empty, and set
    this dataset's prompt in ``prompts`` only. A family or adapter other than
    the stored one is refused: those predictions come from another model."""
    ov = {k: v for k, v in (overrides or {}).items() if v is not None and k != "model_id"}
    new = model_meta_from(model_id, prediction_meta, ov)
    pm = prediction_meta or {}
    prompt = ov.get("prompt_id", pm.get("prompt_id"))
    if old is None:
        prompts = {dataset: _str_or_none(prompt)}
        return ModelMeta(**{**new.to_dict(), "prompts": prompts})
    stated_family = ov.get("family") or pm.get("family")
    if stated_family is not None and old.get("family") is not None \
            and str(stated_family) != str(old["family"]):
        raise SubmissionError(
            f"{where}: family is {old['family']!r}, these predictions are {stated_family!r}; "
            "submit them under their own --model-id")
    if new.adapter is not None and old.get("adapter") is not None and new.adapter != old["adapter"]:
        raise SubmissionError(
            f"{where}: adapter is {old['adapter']!r}, these predictions come from "
            f"{new.adapter!r}; submit them under their own --model-id")
    merged = new.to_dict()
    for key, value in old.items():
        if key in merged and key not in ("model_id", "prompts", "prompt_id") \
                and key not in ov and value is not None:
            merged[key] = value
    old_prompts = old.get("prompts")
    prompts = dict(old_prompts) if isinstance(old_prompts, dict) else {}
    prompts[dataset] = _str_or_none(prompt)
    merged["prompts"] = prompts
    values = set(prompts.values())
    merged["prompt_id"] = values.pop() if len(values) == 1 else None
    merged["params"] = _params(merged["params"], str(where))
    merged["training_size"] = training_size_of(merged["training_size"])
    return ModelMeta(**merged)
