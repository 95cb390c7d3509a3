"""The lmms-eval bridge: a built dataset as an lmms-eval task folder (export),
the task's texts, and lmms-eval's logged samples back as predictions (import)."""
