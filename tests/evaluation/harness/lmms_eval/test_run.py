"""The real lmms-eval, end to end and offline: tasks exported by ``vlmrobust
export lmms-eval`` run by ``python -m lmms_eval --include_path DIR --tasks ...
--log_samples`` (lmms-eval 0.7.3 in its own cached environment,
scripts/lmms-eval-env.sh) on a tiny randomly initialised LLaVA saved to a local
folder, through lmms-eval's own ``llava_hf`` model class; the samples then
import, validate and score, and the multiple_choice logits equal our own
``likelihood:avg`` reader's on the same rows and prompt.

Why the settings are what they are (each is lmms-eval 0.7.3's behaviour):
- ``--force_simple`` for multiple_choice: the default (chat) ``llava_hf`` turns a
  task into message requests, which lmms-eval builds for generation only
  ("Currently messages is used for generation only").
- ``llava_hf.loglikelihood`` returns the *mean* token cross-entropy of the option
  (the model's loss), so the logit -loss is our ``likelihood:avg``, not ``:sum``.
- It masks the prompt by the length of the prompt tokenised *without* the image;
  LLaVA's processor expands ``<image>`` into one token per patch only when it is
  given the image, so with N image tokens the mean also covers the last N - 1
  prompt tokens. The model here has one 8x8 patch, so N = 1 and nothing extra is
  averaged (with a 32x32 image, N = 16, the second test reproduces lmms-eval's
  values from that formula, and the import keeps lmms-eval's choices only:
  evaluation/harness/lmms_eval/llava_hf.py).
- The model's chat template renders lmms-eval's string turn ``<image>\\n{q}``
  and our structured turn alike and ends the assistant turn right after the
  option (tests/fixtures/lmms_eval.py), so both tools score the same tokens.

The environment is built once (2 min on an idle 2-core machine, 10 min under
load; about 7 GB) and reused. scripts/run-tests.sh starts that build in the
background and sets VLMROBUST_LMMS_EVAL=1, so the test waits for it; a plain
pytest run skips the test until the environment exists.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from tests.fixtures.lmms_eval import REPO, lmms_eval_env, offline_env
from tests.fixtures.score import write_mcq
from tests.fixtures.trust import run_cli
from vlmrobust.evaluation.predict.spec import BackendOptions, ReaderOptions, RunSpec

CONFIGS = ("sample-photo-random", "sample-rendition-random")
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def env() -> Path:
    try:
        found = lmms_eval_env(build=os.environ.get("VLMROBUST_LMMS_EVAL") == "1")
    except RuntimeError as exc:
        pytest.fail(str(exc))
    if found is None:
        pytest.skip("the lmms-eval environment is not built: run 'bash scripts/lmms-eval-env.sh' "
                    "(or the README's test command, which builds it)")
    return found


def _run(cmd: list[str], cwd: Path, what: str, timeout: int = 900) -> str:
    done = subprocess.run(cmd, cwd=cwd, env=offline_env(), capture_output=True, text=True,
                          timeout=timeout)
    if done.returncode != 0:
        raise AssertionError(f"{what} failed ({done.returncode}):\n{done.stdout[-2000:]}\n"
                             f"{done.stderr[-4000:]}")
    return done.stdout


def _lmms_eval(env: Path, model: Path, tasks: Path, names: list[str], out: Path,
               simple: bool) -> list[Path]:
    cmd = [str(env / "bin" / "python"), "-m", "lmms_eval", "--model", "llava_hf",
           "--model_args", f"pretrained={model},device=cpu,device_map=cpu,dtype=float32",
           "--include_path", str(tasks), "--tasks", ",".join(names), "--batch_size", "1",
           "--log_samples", "--output_path", str(out)]
    _run(cmd + (["--force_simple"] if simple else []), out.parent, "lmms_eval")
    found = sorted(out.rglob("*_samples_*.jsonl"))
    assert sorted(p.name.split("_samples_")[1].removesuffix(".jsonl") for p in found) == sorted(names)
    return found


def test_exported_tasks_run_in_lmms_eval_and_import(env: Path, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    import pyarrow.parquet as pq

    from vlmrobust.evaluation.predict.dataset import predict_dataset
    from vlmrobust.evaluation.predictions.meta import read_prediction_meta

    ds = write_mcq(tmp_path / "ds", n=4, k=4)
    model = tmp_path / "tiny-llava"
    # saved by lmms-eval's transformers (4.x), read by ours (5.x) below
    _run([str(env / "bin" / "python"), "-c",
          "import sys; from pathlib import Path; sys.path.insert(0, sys.argv[1]); "
          "from tests.fixtures.lmms_eval import make_llava_for_lmms; "
          "make_llava_for_lmms(Path(sys.argv[2]))", str(REPO), str(model)], tmp_path, "tiny model")
    tasks = tmp_path / "tasks"
    rc, err = run_cli(["export", "lmms-eval", str(ds), "--out", str(tasks)], capsys)
    assert rc == 0, err
    mc = [f"vlmrobust_imagenet_mcq_{c.replace('-', '_')}" for c in CONFIGS]

    # multiple_choice: per-option losses -> logits (every metric)
    samples = _lmms_eval(env, model, tasks, mc, tmp_path / "logs-mc", simple=True)
    results = json.loads(next((tmp_path / "logs-mc").rglob("*_results.json")).read_text())
    assert results["config"]["model"] == "llava_hf"
    preds = tmp_path / "mc.parquet"
    rc, err = run_cli(["import", "lmms-eval", *map(str, samples), "--dataset", str(ds),
                       "--out", str(preds)], capsys)
    assert rc == 0, err
    meta = read_prediction_meta(preds)
    assert meta["model"].startswith("tiny-llava@") and meta["harness"]["model_class"] == "llava_hf"
    rc, err = run_cli(["validate", "--dataset", str(ds), "--predictions", str(preds)], capsys)
    assert rc == 0, err
    scores = tmp_path / "mc-scores.json"
    rc, err = run_cli(["score", "--dataset", str(ds), "--predictions", str(preds), "--out",
                       str(scores)], capsys)
    assert rc == 0, err
    section = json.loads(scores.read_text())["datasets"]["imagenet-mcq"]
    assert section["has_logits"]
    for name, cfg in zip(mc, CONFIGS, strict=True):  # lmms-eval's own accuracy, the same rows
        assert section["configs"][cfg]["accuracy"] == pytest.approx(
            results["results"][name]["acc,none"])

    # the same logits from our own likelihood reader on the same rows and prompt
    ours = tmp_path / "ours.parquet"
    predict_dataset(RunSpec(
        f"vlm:{model}", ds, ours, progress=False, reader=ReaderOptions(mode="likelihood:avg"),
        backend=BackendOptions(threads=1, device="cpu")))
    theirs = {r["id"]: r["logits"] for r in pq.read_table(preds).to_pylist()}
    mine = {r["id"]: r["logits"] for r in pq.read_table(ours).to_pylist()}
    assert set(theirs) == set(mine) and len(mine) == 8
    diff = max(float(np.max(np.abs(np.subtract(theirs[i], mine[i])))) for i in mine)
    with capsys.disabled():
        print(f"\nlmms-eval llava_hf vs likelihood:avg: max |logit difference| = {diff:.2e}")
    assert diff < 1e-4

    # generate_until: text, answered by our matcher (accuracy only)
    gen = [f"{n}_gen" for n in mc]
    samples = _lmms_eval(env, model, tasks, gen, tmp_path / "logs-gen", simple=False)
    preds = tmp_path / "gen.jsonl"
    rc, err = run_cli(["import", "lmms-eval", *map(str, samples), "--dataset", str(ds),
                       "--out", str(preds), "--model", "tiny-llava"], capsys)
    assert rc == 0, err
    rows = [json.loads(line) for line in preds.read_text().splitlines()]
    assert len(rows) == 8 and all(isinstance(r["text"], str) for r in rows)
    # the same lettered prompt through the processor's template: the same greedy text
    ours = tmp_path / "ours-gen.jsonl"
    predict_dataset(RunSpec(
        f"vlm:{model}", ds, ours, progress=False, reader=ReaderOptions(mode="generate"),
        backend=BackendOptions(threads=1, device="cpu")))
    mine_text = {r["id"]: r["text"] for r in map(json.loads, ours.read_text().splitlines())}
    assert {r["id"]: r["text"] for r in rows} == mine_text
    rc, err = run_cli(["score", "--dataset", str(ds), "--predictions", str(preds), "--out",
                       str(tmp_path / "gen-scores.json")], capsys)
    assert rc == 0, err
    section = json.loads((tmp_path / "gen-scores.json").read_text())["datasets"]["imagenet-mcq"]
    assert section["has_text"] and not section["has_logits"]


def _llava_hf_value(model: object, processor: object, question: str, option: str, image: object,
                    masked: int | None) -> float:
    """lmms-eval 0.7.3's llava_hf.loglikelihood, written out: the mean loss over
    every token after the first ``masked`` (default: the prompt tokenised without
    the image, as llava_hf masks it; None: the prompt with its image tokens)."""
    import torch

    tok = processor.tokenizer  # type: ignore[attr-defined]
    user = {"role": "user", "content": f"<image>\n{question}"}
    prompt = tok.apply_chat_template([user], tokenize=False, add_generation_prompt=True)
    full = tok.apply_chat_template([user, {"role": "assistant", "content": f" {option}"}],
                                   tokenize=False)
    inputs = processor(text=[full], images=[image], return_tensors="pt")  # type: ignore[operator]
    if masked is None:
        masked = len(processor(text=[prompt], images=[image])["input_ids"][0])  # type: ignore[operator]
    labels = inputs["input_ids"].clone()
    labels[:, :masked] = -100
    with torch.inference_mode():
        return float(model(**inputs, labels=labels).loss)  # type: ignore[operator]


def test_llava_hf_mean_also_covers_prompt_tokens_when_an_image_has_several(
        env: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The one difference between lmms-eval's llava_hf and our likelihood:avg,
    measured on a tiny LLaVA with 16 image tokens: its value is the mean loss
    from the prompt's length *without* image tokens on (15 prompt tokens too);
    masking the expanded prompt instead gives our likelihood:avg."""
    import pyarrow.parquet as pq
    from transformers import AutoProcessor, LlavaForConditionalGeneration

    from vlmrobust.core.datadir import read_table
    from vlmrobust.evaluation.predict.dataset import predict_dataset
    from vlmrobust.evaluation.predictions.meta import read_prediction_meta
    from vlmrobust.models.runtime import to_pil

    ds = write_mcq(tmp_path / "ds", n=3, k=3)
    model_dir = tmp_path / "tiny-llava-16"
    _run([str(env / "bin" / "python"), "-c",
          "import sys; from pathlib import Path; sys.path.insert(0, sys.argv[1]); "
          "from tests.fixtures.lmms_eval import make_llava_for_lmms; "
          "make_llava_for_lmms(Path(sys.argv[2]), image_size=32)", str(REPO), str(model_dir)],
         tmp_path, "tiny model")
    tasks = tmp_path / "tasks"
    rc, err = run_cli(["export", "lmms-eval", str(ds), "--out", str(tasks), "--config", CONFIGS[0],
                       "--output-type", "multiple_choice"], capsys)
    assert rc == 0, err
    (samples,) = _lmms_eval(env, model_dir, tasks, ["vlmrobust_imagenet_mcq_sample_photo_random"],
                            tmp_path / "logs", simple=True)
    preds = tmp_path / "mc.parquet"
    rc, err = run_cli(["import", "lmms-eval", str(samples), "--dataset", str(ds), "--out",
                       str(preds)], capsys)
    assert rc == 0, err
    # the values are no log-likelihoods of the option: lmms-eval's choices only (issue 36.6)
    assert "16 tokens" in read_prediction_meta(preds)["harness"]["accuracy_only"]
    chosen = {r["id"]: r["prediction"] for r in pq.read_table(preds).to_pylist()}
    ids = read_table(ds, CONFIGS[0], ["id"]).column("id").to_pylist()
    theirs = {ids[s["doc_id"]]: [-float(v.strip("()").split(",")[0]) for v in s["filtered_resps"]]
              for s in map(json.loads, samples.read_text().splitlines())}
    assert chosen == {i: int(np.argmax(v)) for i, v in theirs.items()}
    ours = tmp_path / "ours.parquet"
    predict_dataset(RunSpec(
        f"vlm:{model_dir}", ds, ours, configs=CONFIGS[0], progress=False,
        reader=ReaderOptions(mode="likelihood:avg"),
        backend=BackendOptions(threads=1, device="cpu")))
    mine = {r["id"]: r["logits"] for r in pq.read_table(ours).to_pylist()}
    model = LlavaForConditionalGeneration.from_pretrained(model_dir, dtype="float32").eval()
    processor = AutoProcessor.from_pretrained(model_dir)
    gap, other = 0.0, 0
    for row in read_table(ds, CONFIGS[0], ["id", "image", "question", "options"]).to_pylist():
        image = to_pil(row["image"])
        unexpanded = len(processor.tokenizer(processor.tokenizer.apply_chat_template(
            [{"role": "user", "content": f"<image>\n{row['question']}"}], tokenize=False,
            add_generation_prompt=True))["input_ids"])
        for k, option in enumerate(row["options"]):
            as_lmms = -_llava_hf_value(model, processor, row["question"], option, image, unexpanded)
            as_ours = -_llava_hf_value(model, processor, row["question"], option, image, None)
            assert theirs[row["id"]][k] == pytest.approx(as_lmms, abs=1e-4)
            assert mine[row["id"]][k] == pytest.approx(as_ours, abs=1e-4)
            gap = max(gap, abs(theirs[row["id"]][k] - mine[row["id"]][k]))
        other += int(np.argmax(theirs[row["id"]]) != np.argmax(mine[row["id"]]))
    with capsys.disabled():
        print(f"\n16 image tokens: lmms-eval llava_hf vs likelihood:avg differ by up to {gap:.3f}; "
              f"{other} of {len(mine)} rows pick another option")
    assert gap > 1e-3
