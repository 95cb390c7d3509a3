"""Model names that are safe to publish.

A model run from a local folder (``clip:/home/me/ckpt``, ``vlm:./runs/tiny``)
would otherwise carry the folder's path into the predictions' metadata and from
there onto the leaderboard as the model's name and vision encoder. Every local
path inside a name is replaced by the folder's base name and a content hash
(``clip:ckpt@3fa2b1c4d5e6``): two different checkpoints in folders of the same
name stay apart, and no directory layout of the submitter's machine is
published. Only an explicit ``--name`` chooses another public name.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Mapping
from pathlib import PurePosixPath, PureWindowsPath
from typing import Any

# Separators of adapter names: "family:target", "clip:ARCH:PRETRAINED",
# "pipeline:A+B", "clip:local-dir:/path".
_SPLIT = re.compile(r"([:+])")
_WINDOWS = re.compile(r"^[A-Za-z]:[\\/]")
HASH_CHARS = 12


def looks_like_path(part: str) -> bool:
    """Whether ``part`` is written as a filesystem path (absolute, home- or
    dot-relative, or Windows-style), whatever exists on this machine.

    >>> [looks_like_path(p) for p in ("/home/me/ckpt", "~/w", "./tiny", "org/name", "ViT-B-32")]
    [True, True, True, False, False]
    """
    return (part.startswith(("/", "~", "./", "../", "\\\\")) or part in (".", "..")
            or _WINDOWS.match(part) is not None)


def _basename(path: str) -> str:
    pure = PureWindowsPath(path) if ("\\" in path or _WINDOWS.match(path)) else PurePosixPath(path)
    name = pure.name or "local"
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)[:80] or "local"


def _join_windows_drives(parts: list[str]) -> list[str]:
    # "C" ":" "\\ckpt" was split at the drive's colon: glue it back
    out: list[str] = []
    for p in parts:
        if len(out) >= 2 and out[-1] == ":" and len(out[-2]) == 1 and out[-2].isalpha() \
                and p.startswith(("\\", "/")):
            out[-2:] = [out[-2] + ":" + p]
        else:
            out.append(p)
    return out


def public_name(name: str, digest: str | None,
                is_local: Callable[[str], bool] = looks_like_path) -> tuple[str, list[str]]:
    """``name`` with every local-path part replaced by ``<basename>@<hash>``,
    and the paths replaced. ``digest`` is a hex content hash of the checkpoint
    (its first 12 characters are used); without one, the hash of the path
    text stands in. ``is_local`` decides which parts are paths (predict also
    counts parts that exist on disk).

    >>> public_name("clip:/home/me/ckpt", "3fa2b1c4d5e6aa99")
    ('clip:ckpt@3fa2b1c4d5e6', ['/home/me/ckpt'])
    >>> public_name("clip:local-dir:/m/tiny", "ab" * 32)
    ('clip:local-dir:tiny@abababababab', ['/m/tiny'])
    >>> public_name("classifier:efficientnet-lite0", None)
    ('classifier:efficientnet-lite0', [])
    """
    if digest is not None and not re.fullmatch(r"[0-9a-f]{12,}", digest):
        raise ValueError(f"digest must be lowercase hex of at least 12 characters, got {digest!r}")
    parts = _join_windows_drives(_SPLIT.split(name))
    paths: list[str] = []
    out = []
    for part in parts:
        if part in (":", "+") or not part or not is_local(part):
            out.append(part)
            continue
        paths.append(part)
        h = digest or hashlib.sha256(part.encode("utf-8", "surrogatepass")).hexdigest()
        out.append(f"{_basename(part)}@{h[:HASH_CHARS]}")
    return "".join(out), paths


def checkpoint_digest(checkpoints: Mapping[str, str] | None) -> str | None:
    """One hex digest over a run's ``{file: sha256}`` checkpoint hashes (file
    names are left out: the same weights in another folder hash the same).

    >>> checkpoint_digest({"/a/model.safetensors": "0" * 64}) == checkpoint_digest({"m.bin": "0" * 64})
    True
    >>> checkpoint_digest(None) is None
    True
    """
    if not checkpoints:
        return None
    return hashlib.sha256("\n".join(sorted(checkpoints.values())).encode()).hexdigest()


def _relative_keys(checkpoints: Mapping[str, str]) -> dict[str, str]:
    keys = list(checkpoints)
    if not any(looks_like_path(k) for k in keys):
        return dict(checkpoints)
    if len(keys) == 1:
        return {_basename(keys[0]): checkpoints[keys[0]]}
    try:
        root = os.path.commonpath(keys)
    except ValueError:
        return {_basename(k): v for k, v in checkpoints.items()}
    return {os.path.relpath(k, root): v for k, v in checkpoints.items()}


def publishable_meta(meta: Mapping[str, Any], name: str | None = None,
                     is_local: Callable[[str], bool] = looks_like_path) -> dict[str, Any]:
    """Predictions metadata with no local path in ``model``, ``adapter``,
    ``vision_encoder`` or the checkpoint file names. ``name`` (``--name``) is
    the public name, recorded as given; without it a name derived from a local
    path comes with a ``name_note`` saying so."""
    out = dict(meta)
    reference = out.get("reference")
    checkpoints = reference.get("checkpoint_sha256") if isinstance(reference, Mapping) else None
    digest = checkpoint_digest(checkpoints) if isinstance(checkpoints, Mapping) else None
    replaced: list[str] = []
    for key in ("model", "adapter", "vision_encoder"):
        if isinstance(out.get(key), str):
            out[key], paths = public_name(out[key], digest, is_local)
            replaced += paths
    if isinstance(reference, Mapping) and isinstance(checkpoints, Mapping):
        out["reference"] = {**reference, "checkpoint_sha256": _relative_keys(checkpoints)}
    if name is not None:
        if not name.strip():
            raise ValueError("--name must not be empty")
        out["name"] = name
    elif replaced:
        how = "its checkpoint's sha256" if digest else "the path text (no checkpoint hash)"
        out["name_note"] = (f"named after a local folder ({_basename(replaced[0])}) plus a hash of "
                            f"{how}; pass --name to choose the public name")
    return out
