"""Embedders for the builders: image encoders, the embedding hook and MiniLM text embeddings."""
