"""A local path never becomes a public model name or vision-encoder id
(issue 27.3): `predict --model clip:/home/me/ckpt` records the folder's base
name and a content hash, with a note; only `--name` chooses the public name."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from tests.fixtures.clip import make_open_clip
from tests.fixtures.predict import write_mcq
from vlmrobust.cli.main import main
from vlmrobust.core.text.public_names import (
    checkpoint_digest,
    looks_like_path,
    public_name,
    publishable_meta,
)
from vlmrobust.evaluation.predictions.meta import read_prediction_meta

TINY_CFG = {
    "embed_dim": 16,
    "vision_cfg": {"image_size": 32, "layers": 1, "width": 16, "patch_size": 16, "head_width": 16},
    "text_cfg": {"context_length": 16, "vocab_size": 49408, "width": 16, "heads": 1, "layers": 1},
}


@pytest.mark.parametrize(("name", "want", "paths"), [
    ("clip:/home/me/ckpt", "clip:ckpt@{h}", ["/home/me/ckpt"]),
    ("clip:/home/me/ckpt/", "clip:ckpt@{h}", ["/home/me/ckpt/"]),
    ("clip:ViT-B-32:/data/w/epoch_3.pt", "clip:ViT-B-32:epoch_3.pt@{h}", ["/data/w/epoch_3.pt"]),
    ("clip:local-dir:~/m/tiny", "clip:local-dir:tiny@{h}", ["~/m/tiny"]),
    ("vlm:./runs/tiny vlm", "vlm:tiny_vlm@{h}", ["./runs/tiny vlm"]),
    ("vlm:C:\\models\\llava", "vlm:llava@{h}", ["C:\\models\\llava"]),
    ("pipeline:classifier:/w/a+vlm:/w/b", "pipeline:classifier:a@{h}+vlm:b@{h}", ["/w/a", "/w/b"]),
    ("vlm:llava-hf/llava-1.5-7b-hf", "vlm:llava-hf/llava-1.5-7b-hf", []),
    ("clip:ViT-B-32:openai", "clip:ViT-B-32:openai", []),
])
def test_public_name_replaces_every_path(name: str, want: str, paths: list[str]) -> None:
    digest = "0123456789abcdef" * 4
    got, replaced = public_name(name, digest)
    assert got == want.format(h=digest[:12])
    assert replaced == paths
    for p in paths:
        assert p not in got


def test_public_name_without_digest_hashes_the_path() -> None:
    a, _ = public_name("clip:/home/me/ckpt", None)
    b, _ = public_name("clip:/home/you/ckpt", None)
    assert a.startswith("clip:ckpt@") and b.startswith("clip:ckpt@") and a != b
    assert a == "clip:ckpt@" + hashlib.sha256(b"/home/me/ckpt").hexdigest()[:12]
    with pytest.raises(ValueError, match="hex"):
        public_name("clip:/x", "not-hex!")


def test_looks_like_path() -> None:
    assert looks_like_path("/x") and looks_like_path("..") and looks_like_path("D:/w")
    assert not looks_like_path("hf-hub:timm/x") and not looks_like_path("efficientnet-lite0")


def test_publishable_meta_keys_and_note() -> None:
    meta = {"model": "clip:/srv/u/ck", "adapter": "clip:/srv/u/ck",
            "vision_encoder": "local-dir:/srv/u/ck",
            "reference": {"checkpoint_sha256": {"/srv/u/ck/a/w.bin": "1" * 64,
                                                "/srv/u/ck/b/w.bin": "2" * 64}}}
    out = publishable_meta(meta)
    digest = hashlib.sha256(("1" * 64 + "\n" + "2" * 64).encode()).hexdigest()
    assert out["model"] == out["adapter"] == f"clip:ck@{digest[:12]}"
    assert out["vision_encoder"] == f"local-dir:ck@{digest[:12]}"
    assert out["reference"]["checkpoint_sha256"] == {"a/w.bin": "1" * 64, "b/w.bin": "2" * 64}
    assert "--name" in out["name_note"] and "/srv" not in json.dumps(out)
    assert "name" not in out
    named = publishable_meta(meta, name="/srv/u/ck as I want it")
    assert named["name"] == "/srv/u/ck as I want it" and "name_note" not in named
    plain = {"model": "classifier:efficientnet-lite0", "vision_encoder": "efficientnet-lite0"}
    assert publishable_meta(plain) == plain
    assert meta["model"] == "clip:/srv/u/ck"  # the input is not changed


@pytest.fixture(scope="module")
def tiny_clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_open_clip(tmp_path_factory.mktemp("home") / "me" / "ckpt", seed=0, cfg=TINY_CFG)


def test_predict_and_submit_keep_local_paths_private(tiny_clip: Path, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    ds = write_mcq(tmp_path / "ds", {"a": 3}, with_class_ids=False)
    out = tmp_path / "p.parquet"
    assert main(["predict", "--model", f"clip:{tiny_clip}", "--dataset", str(ds), "--out",
                 str(out), "--no-progress", "--threads", "1"]) == 0
    meta = read_prediction_meta(out)
    weights = hashlib.sha256((tiny_clip / "open_clip_pytorch_model.bin").read_bytes()).hexdigest()
    digest = hashlib.sha256(weights.encode()).hexdigest()
    assert digest == checkpoint_digest({"x": weights})
    assert meta["model"] == f"clip:ckpt@{digest[:12]}"
    assert meta["vision_encoder"] == f"local-dir:ckpt@{digest[:12]}"
    assert meta["reference"]["checkpoint_sha256"] == {"open_clip_pytorch_model.bin": weights}
    assert "pass --name" in meta["name_note"]
    text = json.dumps(meta)
    assert str(tiny_clip.parent) not in text and str(tmp_path) not in text.replace(str(ds), "")

    subs = tmp_path / "subs"
    assert main(["submit", "--submissions", str(subs), "--model-id", "mine", "--dataset", str(ds),
                 "--predictions", str(out)]) == 0
    stored = yaml.safe_load((subs / "mine" / "meta.yaml").read_text())
    assert stored["name"] == f"clip:ckpt@{digest[:12]}"
    assert str(tiny_clip) not in (subs / "mine" / "meta.yaml").read_text()

    named = tmp_path / "named.parquet"
    assert main(["predict", "--model", f"clip:{tiny_clip}", "--dataset", str(ds), "--out",
                 str(named), "--no-progress", "--threads", "1", "--name", "My tiny CLIP"]) == 0
    meta2 = read_prediction_meta(named)
    assert meta2["name"] == "My tiny CLIP" and "name_note" not in meta2
    assert meta2["model"] == meta["model"]
    capsys.readouterr()
    assert main(["predict", "--model", f"clip:{tiny_clip}", "--dataset", str(ds), "--out",
                 str(tmp_path / "x.parquet"), "--name", " "]) == 1
    assert "--name" in capsys.readouterr().err
    assert not (tmp_path / "x.parquet").exists()


def test_submit_scrubs_an_old_file_that_names_a_path(tmp_path: Path) -> None:
    """Predictions written before this rule (or by hand) with a path as model."""
    from tests.fixtures.score import dataset_rows, write_meta, write_parquet
    from tests.fixtures.score import write_mcq as write_small_mcq

    ds = write_small_mcq(tmp_path / "ds")
    rows = dataset_rows(ds)
    preds = write_parquet(tmp_path / "p.parquet", [r["id"] for r in rows],
                          logits=np.zeros((len(rows), 5)).tolist())
    write_meta(preds, ds, model="vlm:/home/me/llava", vision_encoder="local-dir:/home/me/llava")
    subs = tmp_path / "subs"
    assert main(["submit", "--submissions", str(subs), "--model-id", "m", "--dataset", str(ds),
                 "--predictions", str(preds)]) == 0
    text = (subs / "m" / "meta.yaml").read_text()
    assert "/home/me" not in text
    stored = yaml.safe_load(text)
    assert stored["name"].startswith("vlm:llava@")
    assert stored["vision_encoder"].startswith("local-dir:llava@")
