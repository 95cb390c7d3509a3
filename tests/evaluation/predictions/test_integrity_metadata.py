"""Issue 28.14-28.17: numeric metadata ranges, control characters in text
fields, the site check parsing SVG as XML, a damaged releases.json, unknown
configs, escaped paths in errors, symlinks out of the submissions tree, and no
local dataset path in predictions metadata."""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import yaml

from tests.fixtures.score import write_mcq
from tests.fixtures.submission import real_submissions
from tests.fixtures.trust import one_line_error, perfect_predictions, run_cli
from vlmrobust.core.errors import SubmissionError, VlmrobustError, printable
from vlmrobust.evaluation.model_meta import ModelMeta
from vlmrobust.evaluation.predict.rows import DatasetReader
from vlmrobust.evaluation.predictions.meta import PARQUET_META_KEY
from vlmrobust.evaluation.validate.check import validate
from vlmrobust.leaderboard.load import load_submissions
from vlmrobust.leaderboard.pages.formatting import num as fmt_num
from vlmrobust.leaderboard.pages.formatting import params as fmt_params
from vlmrobust.leaderboard.pages.formatting import signed as fmt_signed
from vlmrobust.leaderboard.site.check import SiteCheckError, check_files
from vlmrobust.leaderboard.site.publish import PublishError, build_site, publish_site
from vlmrobust.leaderboard.synthetic import synthetic_submission, write_submission

NOW = dt.datetime(2026, 5, 1, 12, 0, tzinfo=dt.timezone.utc)
HUGE = 10 ** 400  # `--params 1` followed by 400 zeros


@pytest.fixture(scope="module")
def mcq(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_mcq(tmp_path_factory.mktemp("ds") / "imagenet-mcq")


@pytest.fixture(scope="module")
def board(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two real submissions (re-scorable) under <tmp>/submissions, datasets beside."""
    subs, _ = real_submissions(tmp_path_factory.mktemp("board"), 2)
    return subs


def _copy_board(board: Path, tmp: Path) -> Path:
    shutil.copytree(board.parent, tmp / "b", symlinks=True)
    return tmp / "b" / "submissions"


def _edit_prediction_meta(p: Path, **fields: Any) -> Path:
    """Rewrite the metadata embedded in predictions ``p`` (as a hand edit would)."""
    table = pq.read_table(p)
    meta = json.loads(table.schema.metadata[PARQUET_META_KEY])
    meta.update(fields)
    pq.write_table(table.replace_schema_metadata({PARQUET_META_KEY: json.dumps(meta).encode()}), p)
    return p


def _edit_meta(subs: Path, model: str, **fields: Any) -> None:
    path = subs / model / "meta.yaml"
    meta = yaml.safe_load(path.read_text())
    meta.update(fields)
    path.write_text(yaml.safe_dump(meta, allow_unicode=True))


# 14: numeric ranges -----------------------------------------------------------------

def test_submit_refuses_absurd_params(mcq: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = perfect_predictions(mcq, tmp_path / "p.parquet")
    rc, err = run_cli(["submit", "--dataset", str(mcq), "--predictions", str(p), "--submissions",
                       str(tmp_path / "subs"), "--model-id", "m", "--params", "1" + "0" * 400], capsys)
    assert rc == 1
    one_line_error(err)
    assert "params" in err and "an integer of 401 digits" in err
    assert not (tmp_path / "subs" / "m").exists()


@pytest.mark.parametrize("name", ["   ", "\u00a0\t"])
def test_submit_refuses_a_blank_name(name: str, mcq: Path, tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 40.15: a blank --name was accepted and listed as an empty row."""
    p = perfect_predictions(mcq, tmp_path / "p.parquet")
    rc, err = run_cli(["submit", "--dataset", str(mcq), "--predictions", str(p), "--submissions",
                       str(tmp_path / "subs"), "--model-id", "m", "--name", name], capsys)
    assert rc == 1
    one_line_error(err)
    assert "name must not be empty or blank" in err
    assert not (tmp_path / "subs" / "m").exists()


def test_leaderboard_build_refuses_absurd_params(board: Path, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    subs = _copy_board(board, tmp_path)
    _edit_meta(subs, "model-1", params=HUGE)
    for argv in (["leaderboard", "build", "--submissions", str(subs), "--out", str(tmp_path / "site")],
                 ["leaderboard", "publish", "--submissions", str(subs), "--site", str(tmp_path / "site")]):
        rc, err = run_cli(argv, capsys)
        assert rc == 1
        one_line_error(err)
        assert "model-1/meta.yaml: params" in err and "OverflowError" not in err
    assert not (tmp_path / "site").exists()


def test_params_formatting_never_overflows() -> None:
    assert fmt_params(HUGE) == "—" and fmt_params(7_000_000_000) == "7B"
    assert fmt_num(HUGE) == "—" and fmt_signed(-HUGE) == "—" and fmt_num(0.5) == "0.500"


def test_predictions_metadata_params_range(mcq: Path, tmp_path: Path) -> None:
    p = _edit_prediction_meta(perfect_predictions(mcq, tmp_path / "p.parquet"), params=10 ** 16)
    with pytest.raises(SubmissionError, match="params"):
        validate(mcq, p)


# 15: control characters -------------------------------------------------------------

@pytest.mark.parametrize("flag", ["--name", "--vision-encoder"])
def test_submit_refuses_control_characters(flag: str, mcq: Path, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    p = perfect_predictions(mcq, tmp_path / "p.parquet")
    rc, err = run_cli(["submit", "--dataset", str(mcq), "--predictions", str(p), "--submissions",
                       str(tmp_path / "subs"), "--model-id", "m", flag, "Lite\x01two"], capsys)
    assert rc == 1
    one_line_error(err)
    assert "U+0001" in err
    assert not (tmp_path / "subs" / "m").exists()


@pytest.mark.parametrize("field", ["model", "prompt_id", "vision_encoder", "name"])
def test_predictions_metadata_refuses_control_characters(field: str, mcq: Path, tmp_path: Path) -> None:
    p = _edit_prediction_meta(perfect_predictions(mcq, tmp_path / "p.parquet"), **{field: "a\x1b[31mb"})
    with pytest.raises(SubmissionError, match="U\\+001B"):
        validate(mcq, p)


def test_write_predictions_refuses_control_characters(mcq: Path, tmp_path: Path) -> None:
    with pytest.raises(SubmissionError, match="model: holds the control character U\\+0007"):
        perfect_predictions(mcq, tmp_path / "p.parquet", model="bell\x07")
    assert not (tmp_path / "p.parquet").exists()


def test_leaderboard_refuses_control_characters_in_meta_yaml(board: Path, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    subs = _copy_board(board, tmp_path)
    _edit_meta(subs, "model-0", name="Lite\x01two")
    rc, err = run_cli(["leaderboard", "build", "--submissions", str(subs), "--out",
                       str(tmp_path / "site")], capsys)
    assert rc == 1
    one_line_error(err)
    assert "meta.yaml" in err and "U+0001" in err


def test_model_meta_bibtex_may_span_lines() -> None:
    ModelMeta(model_id="m", name="M", bibtex="@article{x,\n\ttitle={T}\n}")
    with pytest.raises(SubmissionError, match="bibtex"):
        ModelMeta(model_id="m", name="M", bibtex="@article{x,\x07}")


SVG_OK = '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 10 10"><g><text x="1" y="2">{}</text></g></svg>'


@pytest.mark.parametrize("text, why", [("R&D", "not well-formed XML"),
                                       ("Lite\x01two", "U\\+0001"),
                                       ("a</g><g>", "not well-formed XML")])
def test_site_check_parses_svg_as_xml(text: str, why: str) -> None:
    check_files({"plots/a.svg": SVG_OK.format("fine &amp; dandy").encode()}, scripts=(), styles=(),
                csp=None)
    with pytest.raises(SiteCheckError, match=why):
        check_files({"plots/a.svg": SVG_OK.format(text).encode()}, scripts=(), styles=(), csp=None)


def test_site_check_refuses_control_characters_in_html() -> None:
    page = "<!doctype html><html><head><title>x</title></head><body><p>{}</p></body></html>"
    check_files({"a.html": page.format("ok").encode()}, scripts=(), styles=(), csp=None)
    with pytest.raises(SiteCheckError, match="U\\+0085"):
        check_files({"a.html": page.format("bad\x85").encode()}, scripts=(), styles=(), csp=None)


# 16: damaged releases.json ----------------------------------------------------------

def _site(tmp: Path) -> tuple[Path, Path]:
    subs = tmp / "subs"
    for i in range(3):
        write_submission(subs, *synthetic_submission(i, ("classifier", "clip", "vlm")[i % 3]))
    site = tmp / "site"
    publish_site(load_submissions(subs), site, now=NOW)
    publish_site(load_submissions(subs), site, now=NOW)
    return subs, site


def _damage(site: Path, how: str) -> None:
    path = site / "releases.json"
    if how == "invalid JSON":
        path.write_text('{"schema_version": 1, "releases": [')
        return
    data = json.loads(path.read_text())
    r = data["releases"][-1]
    if how == "release not an object":
        data["releases"][0] = 7
    elif how == "missing version":
        del r["version"]
    elif how == "5000-digit version":
        r["version"] = "9" * 5000
    elif how == "baselines a list":
        r["baselines"] = [1, 2]
    elif how == "fits a string":
        r["fits"] = "none"
    elif how == "changes.added a number":
        r["changes"] = {"added": 3, "removed": [], "updated": []}
    elif how == "models a list":
        r["models"] = ["m"]
    elif how == "slope text":
        r["fits"][0]["slope"] = "steep"
    elif how == "releases a mapping":
        data["releases"] = {"1": r}
    path.write_text(json.dumps(data))


DAMAGE = ["invalid JSON", "release not an object", "missing version", "5000-digit version",
          "baselines a list", "fits a string", "changes.added a number", "models a list",
          "slope text", "releases a mapping"]


@pytest.mark.parametrize("how", DAMAGE)
def test_damaged_releases_json_is_one_line(how: str, tmp_path: Path) -> None:
    subs, site = _site(tmp_path)
    _damage(site, how)
    before = (site / "releases.json").read_bytes()
    for run in (lambda: publish_site(load_submissions(subs), site, now=NOW),
                lambda: build_site(load_submissions(subs), site)):
        with pytest.raises(PublishError) as info:
            run()
        msg = str(info.value)
        assert "releases.json" in msg and "restore releases.json" in msg, msg
        assert "\n" not in msg
    assert (site / "releases.json").read_bytes() == before


def test_damaged_releases_json_through_the_cli(board: Path, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    subs = _copy_board(board, tmp_path)
    site = tmp_path / "site"
    assert run_cli(["leaderboard", "publish", "--submissions", str(subs), "--site", str(site),
                    "--quiet"], capsys)[0] == 0
    _damage(site, "5000-digit version")
    rc, err = run_cli(["leaderboard", "publish", "--submissions", str(subs), "--site", str(site),
                       "--quiet"], capsys)
    assert rc == 1
    one_line_error(err)
    assert "releases.json: releases[0].version: 5000 characters" in err


# 17: smaller ------------------------------------------------------------------------

def test_unknown_config_in_metadata_is_refused(mcq: Path, tmp_path: Path) -> None:
    p = _edit_prediction_meta(perfect_predictions(mcq, tmp_path / "p.parquet"),
                              configs=["sample-photo-random", "sample-rendition-random", "no-such-config"])
    with pytest.raises(SubmissionError, match=r"unknown config in metadata.*'no-such-config'"):
        validate(mcq, p)


@pytest.mark.parametrize("bad", ["esc\x1b[2J", "new\nline", "bell\x07", "sep\u2028x", "rtl\u202egpj.exe"])
def test_paths_with_control_characters_print_escaped(bad: str, mcq: Path, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / f"{bad}.parquet"
    rc, err = run_cli(["validate", "--dataset", str(mcq), "--predictions", str(p)], capsys)
    assert rc == 1
    one_line_error(err)
    assert printable(bad) in err
    assert not any(c in err.rstrip("\n") for c in "\x1b\n\x07\u2028\u202e")


def test_printable_is_used_by_every_vlmrobust_error() -> None:
    assert str(VlmrobustError("a\nb\x1bc")) == "a\\nb\\x1bc"


def test_predictions_symlink_out_of_the_tree_is_refused(board: Path, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    subs = _copy_board(board, tmp_path)
    target = subs / "model-1" / "imagenet-mcq" / "predictions.parquet"
    outside = tmp_path / "elsewhere.parquet"
    shutil.copy(target, outside)
    target.unlink()
    target.symlink_to(outside)
    rc, err = run_cli(["leaderboard", "build", "--submissions", str(subs), "--out",
                       str(tmp_path / "site")], capsys)
    assert rc == 1
    one_line_error(err)
    assert "outside the submissions folder" in err


def test_predictions_symlink_inside_the_tree_is_followed(board: Path, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    subs = _copy_board(board, tmp_path)
    target = subs / "model-1" / "imagenet-mcq" / "predictions.parquet"
    kept = subs / ".store" / "p.parquet"
    kept.parent.mkdir()
    shutil.move(target, kept)
    target.symlink_to(kept)
    rc, err = run_cli(["leaderboard", "build", "--submissions", str(subs), "--out",
                       str(tmp_path / "site"), "--details", str(tmp_path / "details"),
                       "--quiet"], capsys)
    assert rc == 0, err
    # the details rows of model-1 were read through the link: each row's arg-max is the
    # linked file's, and the accuracies are those of the stored scores.json
    rows = pq.read_table(tmp_path / "details" / "data" / "model-1--imagenet-mcq").to_pylist()
    linked = {r["id"]: max(range(len(r["logits"])), key=r["logits"].__getitem__)
              for r in pq.read_table(kept).to_pylist()}
    assert len(rows) == len(linked) > 0
    assert all(r["predicted"] == linked[r["id"]] for r in rows)
    stored = json.loads((subs / "model-1" / "scores.json").read_text())
    for config, entry in stored["datasets"]["imagenet-mcq"]["configs"].items():
        mine = [r["correct"] for r in rows if r["config"] == config]
        assert len(mine) == entry["n"] and sum(mine) / len(mine) == pytest.approx(entry["accuracy"])


def test_local_dataset_path_stays_out_of_metadata(mcq: Path) -> None:
    info = DatasetReader(mcq.resolve()).info
    assert info.source is None
    assert info.fingerprint and info.name == "imagenet-mcq"
