"""Question generators: offline (the embedded default) and through an LLM chat API."""
