"""How a reference-evaluator run produced its logits, recorded in the
predictions' metadata (``reference``): code and library versions, dtype,
device, and a sha256 per checkpoint file (or of the loaded weights when the
files are not known, e.g. weights fetched into a cache by a library)."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import sys
import types
import weakref
from collections.abc import Iterator
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from vlmrobust import __version__
from vlmrobust.core.fingerprint import file_sha256
from vlmrobust.models.base import Adapter, AdapterSpec

LIBRARIES = ("torch", "torchvision", "transformers", "open_clip_torch", "timm",
             "sentence-transformers", "numpy")
CHECKPOINT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".ckpt", ".npz", ".onnx")
# Above this, hashing a directory's weight files is left out (a 70B checkpoint);
# its path is recorded instead.
MAX_HASH_BYTES = 64 << 30

# Hashing is a per-run cost that a loaded model repeats for nothing (a ViT-B-32
# CLIP: 0.7 s per run, half of a small run's time). A file's hash is kept while
# its inode, size and mtime stay; loaded weights' while the same tensor objects
# hold them, each at its version counter (in-place writes, load_state_dict
# included, bump it).
_FILE_DIGESTS: dict[tuple[str, int, int, int], str] = {}
_WEIGHT_DIGESTS: weakref.WeakKeyDictionary[Any, tuple[list[tuple[Any, int]], str | None]] = (
    weakref.WeakKeyDictionary())


@functools.cache  # installed versions do not change under a running process
def _lib_versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for name in LIBRARIES:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return out


def _checkpoint_files(adapter: Adapter, spec: AdapterSpec) -> list[Path]:
    """Weight files the adapter names, or those at a local path in its target."""
    named = getattr(adapter, "checkpoint_files", None)
    if named:
        return [Path(p) for p in named]
    for part in reversed(spec.target.split(":")):
        p = Path(part)
        if part and p.is_file():
            return [p]
        if part and p.is_dir():
            return sorted(f for f in p.rglob("*") if f.suffix in CHECKPOINT_SUFFIXES and f.is_file())
    return []


def _torch_modules(obj: Any, depth: int = 0) -> Iterator[Any]:
    if "torch" not in sys.modules or depth > 2:
        return
    import torch

    if isinstance(obj, torch.nn.Module):
        yield obj
        return
    for value in getattr(obj, "__dict__", {}).values():
        # an adapter keeps the torch module itself at hand: walking library
        # namespaces finds no weights and cost 10 ms per run
        if not isinstance(value, (types.ModuleType, type)):
            yield from _torch_modules(value, depth + 1)


def _checkpoint_sha256(path: Path) -> str:
    st = os.stat(path)
    key = (str(Path(path).resolve()), st.st_ino, st.st_size, st.st_mtime_ns)
    if key not in _FILE_DIGESTS:
        _FILE_DIGESTS[key] = file_sha256(path)
    return _FILE_DIGESTS[key]


def _tensors_unchanged(seen: list[tuple[Any, int]], now: list[Any]) -> bool:
    return len(seen) == len(now) and all(ref() is t and version == t._version
                                         for (ref, version), t in zip(seen, now, strict=True))


def _weights_digest(adapter: Adapter) -> str | None:
    """sha256 over every parameter and buffer of the adapter's torch modules
    (kept per adapter while the same tensors hold them, unmodified)."""
    modules = list(_torch_modules(adapter))
    if not modules:
        return None
    tensors = [t for m in modules for t in (*m.parameters(), *m.buffers())]
    try:
        cached = _WEIGHT_DIGESTS.get(adapter)
    except TypeError:  # an adapter that cannot be weakly referenced: no cache
        cached = None
    if cached is not None and _tensors_unchanged(cached[0], tensors):
        return cached[1]
    import torch

    h = hashlib.sha256()
    found = False
    for module in modules:
        for name, tensor in module.state_dict().items():
            found = True
            h.update(name.encode("utf-8"))
            flat = tensor.detach().cpu().contiguous().view(-1)
            h.update(flat.view(torch.uint8).numpy().tobytes())
    digest = h.hexdigest() if found else None
    with contextlib.suppress(TypeError):
        _WEIGHT_DIGESTS[adapter] = ([(weakref.ref(t), t._version) for t in tensors], digest)
    return digest


def _dtype_device(adapter: Adapter) -> tuple[str | None, str | None]:
    for module in _torch_modules(adapter):
        for p in module.parameters():
            return str(p.dtype).removeprefix("torch."), str(p.device)
    device = getattr(adapter, "device", None)
    return None, None if device is None else str(device)


def reference_info(adapter: Adapter, spec: AdapterSpec) -> dict[str, Any]:
    """How ``adapter`` produced its logits (see the module docstring)."""
    files = _checkpoint_files(adapter, spec)
    checkpoints: dict[str, str] | None = None
    if files and sum(f.stat().st_size for f in files) <= MAX_HASH_BYTES:
        checkpoints = {f.name if len(files) == 1 else str(f): _checkpoint_sha256(f)
                       for f in files}
    elif not files:
        digest = _weights_digest(adapter)
        checkpoints = None if digest is None else {"(loaded weights)": digest}
    dtype, device = _dtype_device(adapter)
    return {
        "code_version": __version__,
        "libraries": dict(_lib_versions()),
        "dtype": dtype,
        "device": device,
        "checkpoint_sha256": checkpoints,
    }
