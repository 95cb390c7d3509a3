"""`vlmrobust build SPEC`: SPEC is a registered name or a YAML path. A folder of
the working directory that shares a registered name (an ``ood`` folder, say the
output of an earlier build) is not a spec path: the name wins. Files keep the
explicit-path behaviour; a directory is never a spec."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from vlmrobust.benchmarks import SPEC_DIR, resolve_spec
from vlmrobust.cli.main import main
from vlmrobust.core.errors import SpecError


def test_a_folder_named_like_a_registered_spec_resolves_to_the_spec(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "ood").mkdir()
    (tmp_path / "bench-c").write_text("family: not-a-spec\n")  # a stray file of that name, too
    monkeypatch.chdir(tmp_path)
    assert resolve_spec("ood") == SPEC_DIR / "ood.yaml"
    assert resolve_spec("bench-c") == SPEC_DIR / "bench-c.yaml"


def test_files_keep_the_explicit_path_behaviour(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine.yaml").write_text("family: ood\nname: ood\nversion: '1'\n")
    (tmp_path / "plain").write_text("family: ood\nname: ood\nversion: '1'\n")
    assert resolve_spec("mine.yaml") == Path("mine.yaml")
    assert resolve_spec(str(tmp_path / "mine.yaml")) == tmp_path / "mine.yaml"
    assert resolve_spec("plain") == Path("plain")  # not registered: the file itself
    with pytest.raises(SpecError, match=r"spec file missing\.yaml does not exist"):
        resolve_spec("missing.yaml")


def test_a_directory_is_never_a_spec(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "dir.yaml").mkdir()
    (tmp_path / "mydata").mkdir()
    with pytest.raises(SpecError, match=r"dir\.yaml is a directory, not a YAML file") as exc:
        resolve_spec("dir.yaml")
    assert "\n" not in str(exc.value)
    with pytest.raises(SpecError, match="'mydata' is a directory, not a spec file, and no "
                                        "registered spec has that name") as exc:
        resolve_spec("mydata")
    assert "\n" not in str(exc.value) and "known: bench-c" in str(exc.value)


def test_build_ood_from_a_folder_holding_an_ood_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """The reported failure: `vlmrobust build ood` from a folder with `ood/` in it
    said "spec file ood does not exist"."""
    (tmp_path / "ood").mkdir()
    monkeypatch.chdir(tmp_path)
    rc = main(["build", "ood", "--sample", "--out", "built", "--no-progress", "--threads", "1"])
    assert rc == 0, capsys.readouterr().err
    manifest = json.loads((tmp_path / "built" / "manifest.json").read_text())
    assert manifest["spec"]["name"] == "ood" and manifest["kind"] == "ood"
    assert list((tmp_path / "ood").iterdir()) == []  # the folder was not read nor written


@pytest.mark.parametrize("name", ["some.yaml", "some"])
def test_a_fifo_is_named_as_not_a_regular_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               name: str,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    os.mkfifo(name)
    with pytest.raises(SpecError, match=rf"spec {name} is a FIFO, not a regular file"):
        resolve_spec(name)
    rc = main(["build", name, "--sample", "--out", str(tmp_path / "out"), "--no-progress"])
    assert rc != 0  # and it returned: the FIFO was never opened
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "FIFO, not a regular file" in err, err
    assert "does not exist" not in err and "unknown benchmark spec" not in err
    assert not (tmp_path / "out").exists()
