"""The predictions file format: reading (parquet, JSONL), writing, metadata,
alignment to the dataset, retrieval predictions and the public ``write_predictions``."""
