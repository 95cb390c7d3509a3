"""`discover train`'s objective and what its run record publishes (issue 34 items
7 and 9): seed 004's Eq. 1 by default (TRL loss_type "grpo", β > 0, group-std
advantages), the choice stated in the run record; a local questioner named by
the hash of its model files, not of its path; no absolute path in the record."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.fixtures.discover import planted_folder, tiny_questioner
from vlmrobust.cli.main import main
from vlmrobust.core.errors import VlmrobustError
from vlmrobust.evaluation.discover.train import SEED_BETA, TrainConfig, objective

pytest.importorskip("trl")


def test_the_defaults_are_eq1_and_the_rest_are_named_deviations() -> None:
    t = TrainConfig()
    # Eq. 1: 1/G Σ_g 1/|y_g| Σ_t (clipped ratio · Â_g − β KL), Â_g over the group's std
    assert (t.loss_type, t.scale_rewards) == ("grpo", "group") and t.beta == SEED_BETA > 0
    assert objective(t).startswith("seed 004 Eq. 1:")
    for change, named in (({"loss_type": "dapo"}, "loss_type dapo"),
                          ({"beta": 0.0}, "no KL penalty"),
                          ({"scale_rewards": "none"}, "scale_rewards none")):
        line = objective(TrainConfig(**change))
        assert line.startswith("not seed 004 Eq. 1:") and named in line, (change, line)
    # β's value is the seed's gap, not a departure from Eq. 1
    assert objective(TrainConfig(beta=0.01)).startswith("seed 004 Eq. 1:")


def test_an_unknown_loss_type_is_named(capsys, tmp_path) -> None:
    with pytest.raises(SystemExit):
        main(["discover", "train", "--questioner", str(tmp_path), "--images", str(tmp_path),
              "--answerer", "rule:blind=count", "--verifier", "rule:planted",
              "--out", str(tmp_path / "r"), "--loss-type", "ppo"])
    assert "--loss-type: invalid choice: 'ppo'" in capsys.readouterr().err
    with pytest.raises(VlmrobustError, match="--loss-type 'ppo'"):
        TrainConfig(loss_type="ppo")
    with pytest.raises(VlmrobustError, match="--threads 0"):
        TrainConfig(threads=0)


def test_questioner_id_hashes_the_model_files_not_the_path(tmp_path: Path) -> None:
    from vlmrobust.evaluation.discover.questioner import local_questioner_id

    q = tiny_questioner(tmp_path, prior_steps=2)
    copy = tmp_path / "elsewhere" / q.name
    shutil.copytree(q, copy)
    assert local_questioner_id(q) == local_questioner_id(copy)
    assert local_questioner_id(q).startswith(f"local:{q.name}@")
    # a discover train folder's run record and journal are not the model
    (copy / "discover_run.json").write_text('{"started": "now"}')
    (copy / "journal.jsonl").write_text("")
    (copy / "checkpoints").mkdir()
    assert local_questioner_id(copy) == local_questioner_id(q)
    weights = copy / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-1] + b"\0")
    assert local_questioner_id(copy) != local_questioner_id(q)


def test_run_record_states_the_objective_and_holds_no_absolute_path(tmp_path: Path) -> None:
    images = planted_folder(tmp_path, n=4)
    q = tiny_questioner(tmp_path, prior_steps=20)
    common = ["--questioner", str(q), "--images", str(images), "--answerer",
              "rule:blind=count", "--verifier", "rule:planted", "--max-completion-length",
              "12", "--device", "cpu", "--images-per-step", "2", "--group-size", "2",
              "--steps", "1"]
    out = tmp_path / "run"
    assert main(["discover", "train", *common, "--out", str(out)]) == 0
    text = (out / "discover_run.json").read_text()
    record = json.loads(text)
    assert record["objective"] == objective(TrainConfig())
    # the GRPOConfig TRL trained with: Eq. 1's aggregation and a KL term
    assert record["grpo"]["loss_type"] == "grpo" and record["grpo"]["beta"] == SEED_BETA
    assert record["grpo"]["scale_rewards"] == "group"
    assert record["grpo"]["output_dir"] == "checkpoints"
    assert str(tmp_path) not in text and str(tmp_path.resolve()) not in text
    old = tmp_path / "old"
    assert main(["discover", "train", *common, "--out", str(old), "--loss-type", "dapo",
                 "--beta", "0"]) == 0
    assert json.loads((old / "discover_run.json").read_text())["objective"] == (
        "not seed 004 Eq. 1: loss_type dapo (Eq. 1: grpo); β 0, no KL penalty")
