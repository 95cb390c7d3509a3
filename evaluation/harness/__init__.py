"""Bridges to other harnesses: lmms-eval (export and import) and VLMEvalKit."""
