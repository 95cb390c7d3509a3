"""Per-row records of a scored dataset: the results written beside scores.json and the details rows."""
