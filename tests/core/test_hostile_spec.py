"""Hostile spec files (`vlmrobust build SPEC.yaml`): bytes that are not UTF-8,
YAML nested past Python's recursion limit and an alias bomb are one line naming
the spec, before anything is built or written."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fixtures.trust import one_line_error, run_cli

BOMB = "".join(f"{k}: &{k} [{', '.join([f'*{p}'] * 9) if p else ', '.join(['x'] * 9)}]\n"
               for p, k in zip(("", "a", "b", "c", "d", "e", "f"), "abcdefg", strict=True))
SPECS = {
    "not-utf8": (b"family: ood\nname: \xff\xfe\nversion: 1.0.0\n", "not UTF-8 text"),
    "deep": (b"family: ood\nname: x\nversion: 1.0.0\nx: " + b"[" * 100_000 + b"]" * 100_000,
             "nested deeper than"),
    "bomb": (b"family: ood\nname: x\nversion: 1.0.0\n" + BOMB.encode(), "more than"),
}


@pytest.mark.parametrize("name", sorted(SPECS))
def test_hostile_spec_is_one_line_and_builds_nothing(tmp_path: Path, name: str,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    content, match = SPECS[name]
    spec = tmp_path / "spec.yaml"
    spec.write_bytes(content)
    out = tmp_path / "out"
    rc, err = run_cli(["build", str(spec), "--sample", "--out", str(out)], capsys)
    assert rc != 0
    one_line_error(err)
    assert str(spec) in err and match in err, err
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["spec.yaml"]
