"""CLI contract: subcommands exist, failures are one line on stderr with exit 1."""

from __future__ import annotations

from pathlib import Path

import pytest

from vlmrobust.cli.main import COMMAND_MODULES, main, make_parser
from vlmrobust.core.registry import Registry


def test_every_public_subcommand_is_registered() -> None:
    parser = make_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    assert {"build", "predict", "validate", "score", "leaderboard", "demo"} <= set(sub.choices)
    assert {m.rstrip("_") for m in COMMAND_MODULES} == set(sub.choices)  # import_ -> import


def test_unknown_spec_suggests_closest(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["build", "imagenet-mqc", "--sample", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert rc == 1
    assert err.startswith("error: unknown benchmark spec 'imagenet-mqc'")
    assert "did you mean 'imagenet-mcq'" in err
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()


def test_spec_file_without_family(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "bad.yaml"
    spec.write_text("name: x\nversion: '1'\n")
    rc = main(["build", str(spec), "--sample", "--out", str(tmp_path / "o")])
    assert rc == 1
    assert "missing required key 'family'" in capsys.readouterr().err


def test_unknown_family(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "bad.yaml"
    spec.write_text("family: imagenet-mcx\nname: x\nversion: '1'\n")
    rc = main(["build", str(spec), "--sample", "--out", str(tmp_path / "o")])
    assert rc == 1
    assert "did you mean 'imagenet-mcq'" in capsys.readouterr().err


def test_missing_source_root(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["build", "imagenet-mcq", "--source-root", str(tmp_path / "nope"),
               "--out", str(tmp_path / "o")])
    assert rc == 1
    assert "is not a directory" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_sample_and_source_root_are_exclusive(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["build", "imagenet-mcq", "--sample", "--source-root", str(tmp_path), "--out", "x"])
    assert exc.value.code == 2


def test_registry_rejects_duplicates() -> None:
    r: Registry[int] = Registry("thing")
    r.add("a", 1)
    with pytest.raises(ValueError, match="already registered"):
        r.add("a", 2)
    assert list(r) == ["a"] and "a" in r and len(r) == 1
