"""Scoring: a validated predictions file -> ``scores.json``, one module per
question kind or family block."""
