"""Seed 004's failure-discovery metrics and its reward."""
