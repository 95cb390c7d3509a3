"""imagewikiqa spec validation: the shipped YAML's defaults and one-line errors
naming the file."""

from __future__ import annotations

from pathlib import Path

import pytest

from vlmrobust.builders.imagewikiqa.spec import parse_spec
from vlmrobust.core.errors import SpecError


def test_spec_defaults_from_the_shipped_yaml(repo_root: Path) -> None:
    import yaml

    path = repo_root / "benchmarks" / "imagewikiqa.yaml"
    spec = parse_spec(yaml.safe_load(path.read_text()), path)
    assert (spec.num_questions, spec.images_per_question, spec.question_repeat_cap) == (2000, 3, 3)
    assert spec.max_naming_share == 0.10 and spec.prompt == "paper-v1"
    assert spec.max_text_share == 0.0075  # the authors' release: no text above 0.75%
    assert spec.generator == "offline" and spec.answerer == "minilm"


@pytest.mark.parametrize("patch, message", [
    ({"num_questions": 0}, "num_questions"),
    ({"generator": {"kind": "gpt"}}, "generator.kind"),
    ({"generator": {"kind": "llm"}}, "text_source"),
    ({"text_source": {"kind": "wikipedia"}}, "text_source.path"),
    ({"generator": {"prompt": "v0"}}, "generator.prompt"),
    ({"max_naming_share": 1.5}, "max_naming_share"),
    ({"max_text_share": 0}, "max_text_share"),
    ({"filter": {"dedup_threshold": 1.5}}, "dedup_threshold"),
    ({"generator": {"llm": {"max_retries": -1}}}, "max_retries"),
    ({"classes": "some"}, "classes"),
])
def test_spec_errors_name_the_file(tmp_path: Path, patch: dict, message: str) -> None:
    raw = {"family": "imagewikiqa", "name": "imagewikiqa", "version": "1", **patch}
    with pytest.raises(SpecError, match=message) as info:
        parse_spec(raw, tmp_path / "spec.yaml")
    assert str(tmp_path / "spec.yaml") in str(info.value)
    assert "\n" not in str(info.value)


