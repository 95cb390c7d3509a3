"""`vlmrobust prompts`: the prompt names `vlmrobust predict --prompt` accepts."""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Mapping
from typing import Any


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("prompts", help="list the prompt names predict accepts",
                       description="List the named prompts of `vlmrobust predict --prompt` "
                       "(clip templates, vlm instructions, vlm prompts over a label space); "
                       "clip also takes a literal "
                       "template containing {option}.")
    p.set_defaults(func=run)


def _entries(registry: Any) -> list[tuple[str, Any]]:
    """(name, value) of a dict or a vlmrobust Registry, whichever the module exposes."""
    if isinstance(registry, Mapping):
        return [(str(k), v) for k, v in registry.items()]
    return [(str(name), registry.get(name)) for name in registry]


def _describe(value: Any) -> str:
    if callable(getattr(value, "describe", None)):
        return str(value.describe())
    for attr in ("templates", "text", "template"):
        if hasattr(value, attr):
            value = getattr(value, attr)
            break
    if isinstance(value, str):
        return value
    if isinstance(value, Iterable):
        items = [str(v) for v in value]
        shown = " | ".join(items[:3])
        return shown + (f" | … ({len(items)} templates)" if len(items) > 3 else "")
    return str(value)


def _registries() -> list[tuple[str, Any, str | None]]:
    """(title, registry, default) for every prompt registry the models expose."""
    from vlmrobust.models import label_space_prompts, prompts, vlm

    out: list[tuple[str, Any, str | None]] = []
    # the label-space registry lives beside prompts and imports its SEED_PROMPTS:
    # one listing by name, each registry under the module that defines it
    for family, modules in (("clip", (prompts, label_space_prompts)), ("vlm", (vlm,))):
        found: dict[str, Any] = {}
        for module in modules:
            for attr, value in vars(module).items():
                if attr.isupper() and attr.endswith("PROMPTS") \
                        and not isinstance(value, (str, bytes)):
                    found.setdefault(attr, module)
        for attr in sorted(found):
            module = found[attr]
            value = getattr(module, attr)
            where = f"{module.__name__}.{attr}"
            default = getattr(module, "DEFAULT_PROMPT", None)
            if attr == "SEED_PROMPTS":
                title = f"seed paper A.4, every family: classifier, clip, vlm ({where})"
            elif attr == "LABEL_SPACE_PROMPTS":
                title = (f"vlm over a label space, kinds classification and ood; every mode "
                         f"unless said ({where})")
                default = label_space_prompts.DEFAULT_LABEL_SPACE_PROMPT
            else:
                title = f"{family} ({where})"
            out.append((title, value, default))
    return out


def run(args: argparse.Namespace) -> int:
    from vlmrobust.models.prompts import CLIP_LABEL_SPACE_PROMPT, PROMPT_NOTES, PROMPTS

    for title, registry, default in _registries():
        entries = _entries(registry)
        print(f"{title}:")
        width = max((len(n) for n, _ in entries), default=0)
        for name, value in entries:
            mark = " (default)" if name == default else ""
            if registry is PROMPTS and name == CLIP_LABEL_SPACE_PROMPT:
                mark += " (default over a label space: classification, ood)"
            if registry is PROMPTS and name in PROMPT_NOTES:
                mark += f" [{PROMPT_NOTES[name]}]"
            print(f"  {name:<{width}}  {_describe(value)}{mark}")
        print()
    print("clip also accepts a literal template, e.g. --prompt 'a photo of a {option}.'")
    return 0
