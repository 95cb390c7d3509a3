"""The Holistic page (seed 001's other axes): its sections (3D corruptions, OOD detection, factors) and their tables."""
