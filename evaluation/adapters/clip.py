"""clip adapter (in progress)."""
