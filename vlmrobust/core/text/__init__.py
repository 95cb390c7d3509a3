"""Text rules: the answer matchers (options and label-space classes), text that is
safe to display, and model names that are safe to publish."""
