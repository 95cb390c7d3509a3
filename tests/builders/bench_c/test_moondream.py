"""MoonDream2, one of the Bench-C paper's three selectors, ships its modelling
code with the checkpoint and registers it as a causal LM only (``auto_map``:
AutoConfig and AutoModelForCausalLM). A remote-code VLM with that layout loads
through the vlm adapter (the causal-LM fallback of ``vlm._auto_model``); the
real MoonDream2 has no processor and answers through ``query()``, so the shipped
spec names it as ``moondream:`` and a tiny stand-in of that code path
(tests/fixtures/moondream.py) serves as a selector of a real Bench-C build."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from tests.fixtures import vlm as vlm_fixtures
from tests.fixtures.bench_c import FakeSelector, raw_spec, text_embed, write_source
from vlmrobust.builders.bench_c.build import build_dataset, default_loader
from vlmrobust.builders.bench_c.sources import load_source
from vlmrobust.builders.bench_c.spec import parse_spec
from vlmrobust.builders.families import BuildOptions
from vlmrobust.core.errors import VlmrobustError
from vlmrobust.models import load_adapter


@pytest.fixture(scope="module")
def moondream_like(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = vlm_fixtures.make_remote_code_vlm(
        tmp_path_factory.mktemp("md") / "model", auto_class="AutoModelForCausalLM")
    auto_map = json.loads((folder / "config.json").read_text())["auto_map"]
    assert set(auto_map) == {"AutoConfig", "AutoModelForCausalLM"}  # MoonDream2's layout
    return folder


def test_causal_lm_only_remote_code_loads_when_trusted(moondream_like: Path) -> None:
    with pytest.raises(VlmrobustError, match="--trust-remote-code"):
        load_adapter(f"vlm:{moondream_like}", device="cpu")
    adapter = load_adapter(f"vlm:{moondream_like}", device="cpu", trust_remote_code=True)
    cls = type(adapter.model)
    assert cls.__name__ == "TinyRemoteVlmForConditionalGeneration"
    assert cls.__module__.startswith("transformers_modules")  # the folder's own code ran
    rows = [{"id": "a", "image": Image.new("RGB", (32, 32), (200, 30, 30)),
             "question": "What is shown?", "options": ["cat", "cup", "rocket"]}]
    logits = adapter.option_logits(rows)
    assert logits.shape == (1, 3) and np.isfinite(logits).all()


def test_moondream_selector_in_a_bench_c_build(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    from tests.fixtures.moondream import make_moondream_like

    write_source(tmp_path)
    name = f"moondream:{make_moondream_like(tmp_path / 'md')}"
    raw = raw_spec(selectors=[name, "other:bright"], pool_per_category=1,
                   trust_remote_code=True)
    raw["corruptions"] = ["gaussian_noise", "brightness"]
    spec = parse_spec(raw, tmp_path / "bench-c.yaml")
    out = tmp_path / "out"
    src = load_source(spec.sources[0], tmp_path)
    fakes = {"other:bright": FakeSelector("b", None), "other:emb": FakeSelector("e", None)}
    real = default_loader("cpu", spec.selection.trust_remote_code)
    loaded: list[str] = []

    def loader(n: str) -> Any:
        loaded.append(n)
        return fakes[n] if n in fakes else real(n)

    manifest = build_dataset(spec, spec.selection, [src],
                             options=BuildOptions(out=out, progress=False), loader=loader,
                             text_embedder=text_embed)
    assert name in loaded and manifest["selection"]["selectors"] == [name, "other:bright"]
    audit = pq.read_table(out / "selection.parquet").to_pylist()
    assert len(audit) == 2  # one per (source, category)
    for row in audit:  # the stand-in answered every copy of every candidate
        answers = row[f"answers:{name}"]
        assert len(answers) == 1 + 2 * 5 and all(0 <= a < 4 for a in answers)
    assert manifest["num_rows"] == len(manifest["selection"]["kept"]) * (1 + 2 * 5) > 0


def test_shipped_spec_loads_moondream2_through_its_own_family() -> None:
    from vlmrobust.benchmarks import load_spec_yaml, resolve_spec
    from vlmrobust.models.registration import parse_adapter_name

    path = resolve_spec("bench-c")
    selectors = parse_spec(load_spec_yaml(path), path).selection.selectors
    assert selectors[0] == "moondream:vikhyatk/moondream2"
    assert all(parse_adapter_name(s).family == "vlm" for s in selectors)
