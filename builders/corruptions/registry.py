"""The 19 corruptions of Bench-C / ImageNet-C by name, with their groups: the
five categories of the Bench-C paper, which takes photometric changes
(brightness, contrast, saturate) out of ImageNet-C's "digital" group."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from vlmrobust.builders.corruptions import blur, digital, glass, noise, weather
from vlmrobust.builders.corruptions.draws import Draws
from vlmrobust.core.errors import VlmrobustError
from vlmrobust.core.registry import Registry

Corruption = Callable[[np.ndarray, int, Draws], Any]

GROUPS: dict[str, tuple[str, ...]] = {
    "noise": ("gaussian_noise", "shot_noise", "impulse_noise", "speckle_noise"),
    "blur": ("defocus_blur", "gaussian_blur", "glass_blur", "motion_blur", "zoom_blur"),
    "weather": ("fog", "frost", "snow", "spatter"),
    "photometric": ("brightness", "contrast", "saturate"),
    "digital": ("jpeg_compression", "pixelate", "elastic_transform"),
}
SEVERITIES: tuple[int, ...] = (1, 2, 3, 4, 5)

_FUNCTIONS: dict[str, Corruption] = {
    "gaussian_noise": noise.gaussian_noise,
    "shot_noise": noise.shot_noise,
    "impulse_noise": noise.impulse_noise,
    "speckle_noise": noise.speckle_noise,
    "defocus_blur": blur.defocus_blur,
    "gaussian_blur": blur.gaussian_blur,
    "glass_blur": glass.glass_blur,
    "motion_blur": blur.motion_blur,
    "zoom_blur": blur.zoom_blur,
    "fog": weather.fog,
    "frost": weather.frost,
    "snow": weather.snow,
    "spatter": weather.spatter,
    "brightness": digital.brightness,
    "contrast": digital.contrast,
    "saturate": digital.saturate,
    "jpeg_compression": digital.jpeg_compression,
    "pixelate": digital.pixelate,
    "elastic_transform": digital.elastic_transform,
}

CORRUPTIONS: Registry[Corruption] = Registry("corruption")
for _group in GROUPS.values():
    for _name in _group:
        CORRUPTIONS.add(_name, _FUNCTIONS[_name])

ALL_CORRUPTIONS: tuple[str, ...] = tuple(n for g in GROUPS.values() for n in g)
GROUP_OF: dict[str, str] = {n: g for g, names in GROUPS.items() for n in names}


def get_corruption(name: str) -> Corruption:
    """The corruption function for ``name``; an unknown name suggests the closest.

    >>> get_corruption("fog").__name__
    'fog'
    >>> get_corruption("glass_blurr")
    Traceback (most recent call last):
    ...
    vlmrobust.core.errors.VlmrobustError: unknown corruption 'glass_blurr'; did you mean 'glass_blur'? ...
    """
    return CORRUPTIONS.get(name)


def check_severity(severity: object) -> int:
    """``severity`` as an int in 1..5, or a VlmrobustError saying so."""
    if isinstance(severity, bool) or not isinstance(severity, (int, np.integer)) or not (
        1 <= int(severity) <= 5
    ):
        raise VlmrobustError(f"severity must be an integer in 1..5, got {severity!r}")
    return int(severity)


def check_corruptions(names: Iterable[str]) -> tuple[str, ...]:
    """Validate a list of names (each known, no repeats) before any work starts."""
    out: list[str] = []
    for name in names:
        get_corruption(name)
        if name in out:
            raise VlmrobustError(f"corruption {name!r} is listed twice; list each once")
        out.append(name)
    if not out:
        raise VlmrobustError("the corruption list is empty; list at least one corruption")
    return tuple(out)
