"""vlm adapter (in progress)."""
