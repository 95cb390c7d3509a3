"""The endpoint backend: a VLM served behind an OpenAI-compatible API (vLLM,
SGLang, ``transformers serve``, OpenAI), its request protocol, client, limits,
deadlines, request pool, image encoding, response cache and server probes."""
