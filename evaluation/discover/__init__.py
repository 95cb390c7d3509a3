"""Seed 004's failure-mode discovery: questioner, answerer and verifier roles,
``discover sample`` / ``evaluate`` / ``train`` / ``taxonomy`` (docs/discover.md)."""
