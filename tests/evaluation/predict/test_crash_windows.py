"""Issue #28 items 6-9: a SIGKILL injected exactly inside a swap.

A child process runs a real command with the kill wired into the swap: right
after the first of the two renames (a filesystem without RENAME_EXCHANGE,
forced), or right after the one atomic exchange (the default on Linux), or,
for JSONL predictions, right after the sidecar's rename. Then the next command
of ANY kind must restore a consistent state; a publish in the window never
drops a model; no ``.X.old-PID`` or scratch folder stays behind."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.fixtures.hostile import snapshot
from tests.fixtures.score import write_bench_c, write_mcq
from tests.fixtures.trust import one_line_error, perfect_predictions, run_cli
from vlmrobust.core.files import swap
from vlmrobust.evaluation.submissions import add_submission

REPO = Path(__file__).resolve().parents[3]

# argv: MODE WHAT ARGS...; MODE: two-renames | exchange | after-sidecar
CHILD = textwrap.dedent("""
    import os, signal, sys
    from pathlib import Path
    from vlmrobust.core.files import swap

    mode, what, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    only = os.environ.get("KILL_ONLY")  # the one target whose swap is cut (default: the first)
    def die():
        os.kill(os.getpid(), signal.SIGKILL)
    if mode == "two-renames":
        swap.exchange = lambda a, b: False  # a filesystem without RENAME_EXCHANGE
        real_rename = os.rename
        def rename(src, dst, *a, **k):
            real_rename(src, dst, *a, **k)
            name = os.path.basename(os.fspath(dst))
            if ".old-" in name and (only is None or name.startswith(f".{only}.old-")):
                die()  # the target is moved aside, the new folder not yet in place
        os.rename = rename
    elif mode == "exchange":
        real_exchange = swap.exchange
        def exchange(a, b):
            assert real_exchange(a, b)
            if only is None or only in (Path(a).name, Path(b).name):
                die()  # swapped; the previous content not yet removed
        swap.exchange = exchange
    elif mode == "after-sidecar":
        real_replace = os.replace
        def replace(src, dst, *a, **k):
            real_replace(src, dst, *a, **k)
            if os.fspath(dst).endswith(".meta.yaml"):
                die()  # the new sidecar is in place, the rows are still the old ones
        os.replace = replace
    if what == "cli":
        from vlmrobust.cli.main import main
        sys.exit(main(args))
    elif what == "write-bench-c":
        from tests.fixtures.score import write_bench_c
        write_bench_c(Path(args[0]), n_questions=int(args[1]))
    elif what == "predictions":
        from tests.fixtures.submission import predictions_for
        predictions_for(Path(args[0]), Path(args[1]), 0.5, int(args[3]), model=args[2])
    sys.exit(0)
""")


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "state"
    monkeypatch.setenv("VLMROBUST_STATE_DIR", str(d))
    return d


def _killed(mode: str, what: str, *args: str, only: str | None = None) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1",
           "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
           **({"KILL_ONLY": only} if only else {})}
    proc = subprocess.run([sys.executable, "-c", CHILD, mode, what, *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == -9, (proc.returncode, proc.stderr[-2000:])


def _any_command(capsys: pytest.CaptureFixture[str]) -> None:
    """A command that touches none of the folders: `vlmrobust prompts`."""
    rc, err = run_cli(["prompts"], capsys)
    assert rc == 0, err


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if ".old-" in p.name or ".building-" in p.name)


def _records(state: Path) -> list[Path]:
    return sorted((state / "swaps").glob("*.json")) if (state / "swaps").is_dir() else []


@pytest.fixture(scope="module")
def datasets(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("ds")
    return write_mcq(tmp / "imagenet-mcq"), write_bench_c(tmp / "bench-c")


# -- 6. submit ---------------------------------------------------------------------


def test_submit_killed_between_the_renames_is_undone_by_any_command(
        datasets: tuple[Path, Path], tmp_path: Path, state: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    mcq, bc = datasets
    subs = tmp_path / "subs"
    add_submission(subs, "m", mcq, perfect_predictions(mcq, tmp_path / "a.parquet"))
    (subs / "m" / ".notes").write_text("mine\n")
    before = snapshot(subs / "m")
    _killed("two-renames", "cli", "submit", "--submissions", str(subs), "--model-id", "m",
            "--dataset", str(bc), "--predictions",
            str(perfect_predictions(bc, tmp_path / "b.parquet")))
    assert not (subs / "m").exists() and _leftovers(subs)  # the window was hit
    assert len(_records(state)) == 1
    _any_command(capsys)
    assert snapshot(subs / "m") == before
    assert not _leftovers(subs) and not _records(state)


def test_publish_in_the_submit_window_never_drops_a_model(
        tmp_path: Path, state: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.fixtures.submission import predictions_for, real_submissions
    from vlmrobust.leaderboard.site.publish import publish_site

    subs, (mcq, bc) = real_submissions(tmp_path, 3)
    site = tmp_path / "site"
    publish_site(subs, site, datasets=[mcq, bc], version="1")
    p = predictions_for(mcq, tmp_path / "again.parquet", 0.5, 1, model="toy-0")
    _killed("two-renames", "cli", "submit", "--submissions", str(subs), "--model-id", "model-0",
            "--dataset", str(mcq), "--predictions", str(p))
    assert not (subs / "model-0").exists()
    # no record to go by (another user's state folder): the reader recovers in place
    monkeypatch.setenv("VLMROBUST_STATE_DIR", str(tmp_path / "other-state"))
    release = publish_site(subs, site, datasets=[mcq, bc], version="2")
    assert release["n_models"] == 3 and release["changes"]["removed"] == []
    assert (subs / "model-0" / "meta.yaml").is_file() and not _leftovers(subs)


# -- 7. publish ----------------------------------------------------------------------


def _published(tmp_path: Path) -> tuple[Path, Path, list[str]]:
    from tests.fixtures.submission import real_submissions
    from vlmrobust.leaderboard.site.publish import publish_site

    subs, datasets = real_submissions(tmp_path, 3)
    site = tmp_path / "site"
    publish_site(subs, site, datasets=datasets, version="1")
    (site / "CNAME").write_text("example.org\n")
    argv = ["leaderboard", "publish", "--submissions", str(subs), "--site", str(site),
            "--quiet", "--version", "2", "--datasets", *map(str, datasets)]
    return subs, site, argv


def test_publish_killed_between_the_renames_is_undone_by_any_command(
        tmp_path: Path, state: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from vlmrobust.leaderboard.site.publish import read_releases

    _, site, argv = _published(tmp_path)
    before = snapshot(site)
    _killed("two-renames", "cli", *argv, only="site")
    assert not site.exists()
    _any_command(capsys)
    assert snapshot(site) == before
    assert [r["version"] for r in read_releases(site)] == ["1"]
    assert not _leftovers(tmp_path) and not _records(state)


def test_publish_killed_right_after_the_exchange_never_leaves_the_site_missing(
        tmp_path: Path, state: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from vlmrobust.leaderboard.site.publish import read_releases

    _, site, argv = _published(tmp_path)
    _killed("exchange", "cli", *argv, only="site")
    assert (site / "index.html").is_file() and (site / "CNAME").is_file()
    assert [r["version"] for r in read_releases(site)] == ["1", "2"]  # the checked new site
    assert _leftovers(tmp_path)  # the previous version, not yet removed
    _any_command(capsys)
    assert not _leftovers(tmp_path) and not _records(state)


@pytest.mark.parametrize("mode", ["two-renames", "exchange"])
def test_publish_killed_in_the_details_swap_keeps_the_previous_release(
        tmp_path: Path, state: Path, capsys: pytest.CaptureFixture[str], mode: str) -> None:
    """The details dataset is swapped in before the site (issue 37.1): a kill there
    leaves release 1 published and the details folder whole, old or new."""
    from vlmrobust.leaderboard.site.publish import read_releases

    _, site, argv = _published(tmp_path)
    details = tmp_path / "details"
    before = snapshot(site)
    configs = sorted(p.name for p in (details / "data").iterdir())
    _killed(mode, "cli", *argv, only="details")
    _any_command(capsys)
    assert snapshot(site) == before and [r["version"] for r in read_releases(site)] == ["1"]
    assert sorted(p.name for p in (details / "data").iterdir()) == configs
    assert (details / "README.md").is_file() and (details / "manifest.json").is_file()
    assert not _leftovers(tmp_path) and not _records(state)


# -- 8. build --------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["two-renames", "exchange"])
def test_build_killed_in_the_swap_is_undone_by_any_command(
        tmp_path: Path, state: Path, capsys: pytest.CaptureFixture[str], mode: str) -> None:
    out = write_bench_c(tmp_path / "out", n_questions=2)
    before = snapshot(out)
    rows = json.loads((out / "manifest.json").read_text())["num_rows"]
    _killed(mode, "write-bench-c", str(out), "3")
    if mode == "two-renames":
        assert not out.exists()
    else:  # never missing: the new, complete build is in place
        assert json.loads((out / "manifest.json").read_text())["num_rows"] > rows
    _any_command(capsys)
    if mode == "two-renames":
        assert snapshot(out) == before
    assert not _leftovers(tmp_path) and not _records(state)
    write_bench_c(out, n_questions=2)  # and the rerun leaves nothing behind either
    assert not _leftovers(tmp_path)


def test_cli_build_killed_between_the_renames_is_undone_by_any_command(
        tmp_path: Path, state: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = write_mcq(tmp_path / "out")  # a dataset vlmrobust built: build may replace it
    before = snapshot(out)
    _killed("two-renames", "cli", "build", "imagenet-mcq", "--sample", "--limit", "1",
            "--no-progress", "--workers", "1", "--threads", "1", "--out", str(out))
    assert not out.exists() and _leftovers(tmp_path)
    _any_command(capsys)
    assert snapshot(out) == before
    assert not _leftovers(tmp_path) and not _records(state)


def test_the_same_target_recovers_without_any_record(tmp_path: Path, state: Path) -> None:
    """A reader or the next swap of the same folder puts it back even when the
    state folder was lost (or belongs to another user)."""
    out = write_bench_c(tmp_path / "out", n_questions=2)
    before = snapshot(out)
    _killed("two-renames", "write-bench-c", str(out), "3")
    shutil.rmtree(state)
    assert swap.recover(out) is True
    assert snapshot(out) == before and not _leftovers(tmp_path)


def test_live_processes_leftovers_are_never_touched(tmp_path: Path) -> None:
    target = tmp_path / "t"
    mine = tmp_path / f".t.old-{os.getpid()}"
    mine.mkdir()
    assert swap.recover(target) is False
    assert mine.is_dir() and not target.exists()


# -- 9. predict to JSONL --------------------------------------------------------------


def test_jsonl_pair_cut_apart_by_a_kill_is_refused(
        datasets: tuple[Path, Path], tmp_path: Path, state: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    from tests.fixtures.submission import predictions_for

    mcq, _ = datasets
    out = predictions_for(mcq, tmp_path / "p.jsonl", 0.5, 0, model="lite0")
    rc, err = run_cli(["validate", "--dataset", str(mcq), "--predictions", str(out)], capsys)
    assert rc == 0, err
    rows = out.read_bytes()
    _killed("after-sidecar", "predictions", str(mcq), str(out), "lite1", "1")
    assert out.read_bytes() == rows and "lite1" in (tmp_path / "p.jsonl.meta.yaml").read_text()
    for argv in (["validate", "--dataset", str(mcq), "--predictions", str(out)],
                 ["submit", "--submissions", str(tmp_path / "subs"), "--model-id", "lite1",
                  "--dataset", str(mcq), "--predictions", str(out)],
                 ["score", "--dataset", str(mcq), "--predictions", str(out), "--out",
                  str(tmp_path / "s.json")]):
        rc, err = run_cli(argv, capsys)
        assert rc == 1 and "written for other predictions" in err, err
        if argv[0] != "validate":  # validate lists every problem it finds
            one_line_error(err)
    assert not (tmp_path / "subs" / "lite1").exists() and not (tmp_path / "s.json").exists()
    # written whole again: accepted
    predictions_for(mcq, out, 0.5, 1, model="lite1")
    assert run_cli(["validate", "--dataset", str(mcq), "--predictions", str(out)], capsys)[0] == 0
