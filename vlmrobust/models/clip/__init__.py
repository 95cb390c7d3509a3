"""CLIP-style zero-shot encoders: open_clip, transformers CLIP and their model groups."""
