"""Model adapters, the reference evaluator (predict), metrics, scoring and the
submission schema. Heavy libraries (torch, open_clip, transformers) are imported
lazily inside the adapters so that scoring stays CPU-light."""
