"""Bench-C's metrics: RAS and its pair metrics, κ, κ-weighted aggregation and
seed 003's sensitivity test."""
