"""Seed 001's other axes: OOD detection, shape bias, retrieval Recall@K and the
3D corruptions."""
