"""The ``bench_c`` block of scores.json: per-cell statistics, seed 003's sensitivity test and the intervals."""
