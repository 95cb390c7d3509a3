"""Builders: turn a benchmark spec (benchmarks/*.yaml) plus sources into a
Hugging Face dataset directory (parquet + README card + manifest.json)."""
