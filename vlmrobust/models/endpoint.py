"""``endpoint:<served model name>``: a served VLM read in one answer mode, as
``vlm:`` reads an in-process one (the same VlmAdapter and readers, the
endpoint backend underneath). Connection settings come from predict's
``--endpoint-url``, ``--api-key-env``, ``--endpoint-concurrency``,
``--endpoint-timeout``, ``--endpoint-retries`` and ``--endpoint-cache`` as the
``endpoint`` option mapping."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vlmrobust.core.errors import VlmrobustError
from vlmrobust.models.backends.endpoint.backend import ENDPOINT_FAMILY, EndpointBackend
from vlmrobust.models.base import ADAPTER_FAMILIES, AdapterFamily, AdapterSpec
from vlmrobust.models.readers.base import LETTERS, ReadOptions
from vlmrobust.models.readers.modes import parse_mode


def parse(name: str, target: str) -> AdapterSpec:
    if not target.strip() or target != target.strip():
        raise VlmrobustError(f"{name}: give the served model name after 'endpoint:' "
                             "(as the server lists it under /v1/models)")
    return AdapterSpec(name=name, family="vlm", target=target, max_options=len(LETTERS))


def load(spec: AdapterSpec, device: str | None, prompt: str | None = None,
         mode: str | None = None, read_options: ReadOptions | None = None,
         endpoint: Mapping[str, Any] | None = None, class_order: str | None = None,
         **opts: Any) -> Any:
    """The VlmAdapter over an :class:`EndpointBackend`; ``endpoint`` holds its options."""
    from vlmrobust.models.vlm import VlmAdapter

    for flag, key in (("--device", "device"), ("--device-map", "device_map"),
                      ("--trust-remote-code", "trust_remote_code")):
        if (device if key == "device" else opts.pop(key, None)):
            raise VlmrobustError(f"{spec.name}: {flag} does not apply to a served model "
                                 "(the server places and runs it)")
    if opts:
        raise VlmrobustError(f"{spec.name}: unexpected options {sorted(opts)}")
    reader = parse_mode(mode, read_options)  # a bad mode fails before any request
    # ask the server only about what this mode needs
    backend = ENDPOINT_FAMILY.load(spec.target, {**(endpoint or {}), "probe": reader.needs})
    assert isinstance(backend, EndpointBackend)
    backend.check_reader(reader.needs, f"--mode {reader.mode}")
    return VlmAdapter(spec.name, backend, reader, prompt=prompt, backend_kind="endpoint",
                      class_order=class_order)


ADAPTER_FAMILIES.add("endpoint", AdapterFamily(
    "endpoint", parse, load,
    help="a model behind an OpenAI-compatible server at --endpoint-url"))
