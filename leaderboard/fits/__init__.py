"""Effective-robustness lines, their bootstrap and the paired tests between models."""
