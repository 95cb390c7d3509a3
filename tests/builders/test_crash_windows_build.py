"""Issue #40 hostile items 7-8: a file that appears in a target while a
command writes it is never lost (build, submit, leaderboard build, export
lmms-eval), and a build killed before its swap leaves nothing that the next
command of any kind does not clean; a folder that only looks like a leftover
(no marker inside) is never removed."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fixtures.hostile import snapshot
from tests.fixtures.score import write_bench_c, write_mcq
from tests.fixtures.trust import perfect_predictions, run_cli
from vlmrobust.core.files import atomic, swap

REPO = Path(__file__).resolve().parents[2]

# argv: N OUT QUESTIONS; killed right after the N-th rename into the scratch folder
CHILD = textwrap.dedent("""
    import os, signal, sys
    from pathlib import Path

    n, out, questions = int(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
    seen = [0]
    for name in ("rename", "replace"):
        real = getattr(os, name)
        def patched(src, dst, *a, _real=real, **k):
            _real(src, dst, *a, **k)
            if ".building-" in os.fspath(dst):
                seen[0] += 1
                if seen[0] == n:
                    os.kill(os.getpid(), signal.SIGKILL)
        setattr(os, name, patched)
    from tests.fixtures.score import write_bench_c
    write_bench_c(out, n_questions=questions)
    sys.exit(3)  # the kill point was never reached
""")


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "state"
    monkeypatch.setenv("VLMROBUST_STATE_DIR", str(d))
    return d


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if ".old-" in p.name or ".building-" in p.name)


def _dead_pid() -> int:
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    return int(proc.stdout)


# -- 8. a build killed before its swap ----------------------------------------------------


@pytest.mark.parametrize("n", [1, 2])
def test_build_killed_inside_its_scratch_folder_is_cleaned_by_any_command(
        tmp_path: Path, state: Path, capsys: pytest.CaptureFixture[str], n: int) -> None:
    out = write_bench_c(tmp_path / "out", n_questions=2)
    before = snapshot(out)
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-c", CHILD, str(n), str(out), "3"], cwd=REPO,
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == -9, proc.stderr[-2000:]
    assert _leftovers(tmp_path)  # the kill left a scratch folder
    rc, err = run_cli(["prompts"], capsys)  # touches none of these folders
    assert rc == 0, err
    assert not _leftovers(tmp_path) and snapshot(out) == before
    assert not list((state / "swaps").glob("*"))


def test_a_folder_that_only_looks_like_a_leftover_is_never_removed(
        tmp_path: Path, state: Path) -> None:
    pid = _dead_pid()
    out = write_bench_c(tmp_path / "out", n_questions=2)
    lookalikes = [tmp_path / f".out.building-{pid}-mine", tmp_path / f".out.old-{pid}"]
    for p in lookalikes:
        p.mkdir()
        (p / "thesis.tex").write_text("mine\n")
    write_bench_c(out, n_questions=3)  # a build into the same target recovers first
    swap.recover_children(tmp_path)
    for p in lookalikes:
        assert (p / "thesis.tex").read_text() == "mine\n"


# -- 7. a file that appears during the run ---------------------------------------------------


@pytest.fixture
def late_file(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Path]]:
    """Each swap of a target first gets a user's file put into that target."""
    targets: list[Path] = []
    real = atomic.swap_in

    def swap_in(new: Path, target: Path, *a: object, **k: object) -> None:
        if target.is_dir():
            (target / "late-notes.txt").write_text("written during the run\n")
            targets.append(target)
        real(new, target, *a, **k)  # type: ignore[arg-type]
    monkeypatch.setattr(atomic, "swap_in", swap_in)
    yield targets


def _kept(targets: list[Path]) -> None:
    assert targets
    for t in targets:
        assert (t / "late-notes.txt").read_text() == "written during the run\n", t


def test_a_rebuild_keeps_a_file_that_appears_in_the_dataset(tmp_path: Path,
                                                            late_file: list[Path]) -> None:
    out = write_bench_c(tmp_path / "out", n_questions=2)
    write_bench_c(out, n_questions=3)
    _kept(late_file)
    assert (out / "manifest.json").is_file()


def test_submit_publish_and_export_keep_a_file_that_appears(
        tmp_path: Path, late_file: list[Path], capsys: pytest.CaptureFixture[str]) -> None:
    from vlmrobust.evaluation.submissions import add_submission
    from vlmrobust.leaderboard.site.publish import build_site

    mcq = write_mcq(tmp_path / "mcq")
    pm = perfect_predictions(mcq, tmp_path / "pm.parquet")
    subs = tmp_path / "subs"
    add_submission(subs, "m", mcq, pm)
    assert not late_file  # a new folder: nothing to race with
    add_submission(subs, "m", mcq, pm)
    build_site(subs, tmp_path / "site", datasets=[mcq])
    build_site(subs, tmp_path / "site", datasets=[mcq])
    argv = ["export", "lmms-eval", str(mcq), "--out", str(tmp_path / "tasks")]
    assert run_cli(argv, capsys)[0] == 0
    assert run_cli(argv, capsys)[0] == 0
    assert {t.name for t in late_file} >= {"m", "site", "tasks"}
    _kept(late_file)
