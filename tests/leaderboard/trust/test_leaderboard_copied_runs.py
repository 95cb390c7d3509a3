"""A copied run is not a new model (issue 41.2): a second submission folder whose
stored predictions are byte for byte another folder's (meta.yaml's adapter
deleted and its name changed, so no other check sees it) is refused by
`leaderboard build` in one line naming both files, and nothing is written."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from tests.fixtures.score import write_mcq
from tests.fixtures.trust import one_line_error, run_cli
from tests.leaderboard.trust.test_leaderboard_reference_record import _submit
from vlmrobust.leaderboard.submission import LeaderboardInputError
from vlmrobust.leaderboard.trust.verify import load_verified_submissions


def _copy_as_new_model(subs: Path, src: str, new: str) -> None:
    shutil.copytree(subs / src, subs / new)
    meta = yaml.safe_load((subs / new / "meta.yaml").read_text())
    meta.pop("adapter", None)
    meta.update(model_id=new, name="My New Model")
    (subs / new / "meta.yaml").write_text(yaml.safe_dump(meta))
    scores = (subs / new / "scores.json").read_text().replace(f'"{src}"', f'"{new}"')
    (subs / new / "scores.json").write_text(scores)


def test_a_copied_run_is_refused_naming_both(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    mcq = write_mcq(tmp_path / "ds" / "imagenet-mcq", n=40)
    subs = tmp_path / "subs"
    _submit(subs, mcq, "lite1", model="classifier:efficientnet-lite1", family="classifier",
            skill=1.0, seed=1)
    _submit(subs, mcq, "lite2", model="classifier:efficientnet-lite2", family="classifier",
            skill=1.5, seed=2)
    assert len(load_verified_submissions(subs, datasets=[mcq])) == 2
    _copy_as_new_model(subs, "lite1", "my-new-model")
    with pytest.raises(LeaderboardInputError, match="a copied run is not a new model") as exc:
        load_verified_submissions(subs, datasets=[mcq])
    msg = str(exc.value)
    assert str(subs / "my-new-model" / "imagenet-mcq") in msg
    assert str(subs / "lite1" / "imagenet-mcq") in msg and "lite2" not in msg
    rc, err = run_cli(["leaderboard", "build", "--submissions", str(subs), "--out",
                       str(tmp_path / "site"), "--datasets", str(mcq)], capsys)
    assert rc == 1 and "my-new-model" in err and "lite1" in err
    one_line_error(err)
    assert not (tmp_path / "site").exists()
