"""predict over a whole label space (issue 23 item 3): classifiers' 1,000
logits sliced through imagenet_ids, CLIP's logits over every class."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy.special import logsumexp, softmax

from tests.fixtures.label_space import imagenet_space, photos, write_classification
from vlmrobust.core.errors import VlmrobustError
from vlmrobust.core.label_space import ClassEntry, LabelSpace
from vlmrobust.evaluation.predict.dataset import predict_dataset
from vlmrobust.evaluation.predict.spec import BackendOptions, RunSpec
from vlmrobust.evaluation.predictions.meta import read_prediction_meta
from vlmrobust.evaluation.predictions.read import read_predictions
from vlmrobust.models.label_logits import imagenet_groups, space_logits


def _groups_space(rule: str, seed: int) -> LabelSpace:
    rng = np.random.default_rng(seed)
    perm = rng.permutation(1000)
    sizes = rng.integers(1, 6, size=40)
    classes, start = [], 0
    for i, k in enumerate(sizes):
        classes.append(ClassEntry(f"c{i}", imagenet_ids=tuple(int(x) for x in perm[start:start + k])))
        start += int(k)
    return LabelSpace("groups", tuple(classes), rule)


@pytest.mark.parametrize("rule", ["max", "mean-prob"])
def test_space_logits_equal_a_direct_computation(rule: str) -> None:
    z = np.random.default_rng(1).normal(0, 4, size=(7, 1000)).astype(np.float32)
    space = _groups_space(rule, 2)
    got = space_logits(z, imagenet_groups(space, "m"))
    p = softmax(z.astype(np.float64), axis=1)
    for c, entry in enumerate(space.classes):
        ids = list(entry.imagenet_ids)
        want = z[:, ids].max(axis=1) if rule == "max" else np.log(p[:, ids].mean(axis=1))
        np.testing.assert_allclose(got[:, c], want, rtol=1e-5, atol=1e-5)
    if rule == "mean-prob":  # log-sum form stays finite where the probabilities underflow
        far = z * 1000
        out = space_logits(far, imagenet_groups(space, "m"))
        ref = np.array([[logsumexp(row[list(e.imagenet_ids)]) - np.log(len(e.imagenet_ids))
                         - logsumexp(row) for e in space.classes] for row in far.astype(np.float64)])
        assert np.isfinite(out).all()
        np.testing.assert_allclose(out, ref, rtol=1e-5)


def test_a_class_without_imagenet_ids_is_refused_in_one_line() -> None:
    space = LabelSpace("flowers", (ClassEntry("rose", imagenet_ids=(1,)), ClassEntry("daisy")))
    with pytest.raises(VlmrobustError) as err:
        imagenet_groups(space, "classifier:x")
    msg = str(err.value)
    assert "\n" not in msg and "daisy" in msg and "imagenet_ids" in msg and "clip or vlm" in msg


def test_efficientnet_lite0_gives_its_own_forward_pass(tmp_path: Path) -> None:
    """1,000 logits per row, identical to the model's own forward pass (threads=1)."""
    import torch

    from vlmrobust.models.classifiers.efficientnet_lite import lite_preprocess, load_lite

    ims = photos()
    labels = [281, 967, 0, 812]
    ds = write_classification(tmp_path / "ds", {"val": imagenet_space()},
                              {"val": [{"id": f"r{i}", "image": im, "label": y}
                                       for i, (im, y) in enumerate(zip(ims, labels, strict=True))]})
    out = predict_dataset(RunSpec(
        "classifier:efficientnet-lite0", ds, tmp_path / "p.parquet", progress=False,
        backend=BackendOptions(device="cpu", batch_size=4, threads=1)))
    pf = read_predictions(out)
    assert pf.logits_len is not None and pf.logits_flat is not None
    assert pf.logits_len.tolist() == [1000] * 4
    got = pf.logits_flat.reshape(4, 1000)
    saved = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        model = load_lite(0, torch.device("cpu")).module
        pre = lite_preprocess(224)
        x = torch.from_numpy(np.stack([pre(im.convert("RGB")) for im in ims]))
        with torch.inference_mode():
            want = model(x).numpy()
    finally:
        torch.set_num_threads(saved)
    np.testing.assert_array_equal(got.astype(np.float32), want)
    assert got.argmax(axis=1)[1] == 967  # the coffee photo is an espresso
    meta = read_prediction_meta(out)
    assert meta["kind"] == "classification" and meta["mode"] == "class-logits"


def test_classifier_slices_groups_and_candidates(tmp_path: Path) -> None:
    ims = photos()[:2]
    space = LabelSpace("cats-and-cups", (
        ClassEntry("cat", imagenet_ids=(281, 282, 285)), ClassEntry("cup", imagenet_ids=(968,)),
        ClassEntry("espresso", imagenet_ids=(967,)), ClassEntry("fish", imagenet_ids=(1, 2))))
    rows = [{"id": "a", "image": ims[0], "label": 0, "candidates": [3, 0]},
            {"id": "b", "image": ims[1], "label": 2, "candidates": [2, 1]}]
    ds = write_classification(tmp_path / "ds", {"k2": space}, {"k2": rows})
    out = predict_dataset(RunSpec(
        "classifier:efficientnet-lite0", ds, tmp_path / "p.parquet", progress=False,
        backend=BackendOptions(device="cpu", threads=1)))
    pf = read_predictions(out)
    assert pf.logits_len is not None and pf.logits_flat is not None
    assert pf.logits_len.tolist() == [2, 2]
    from vlmrobust.models import load_adapter
    from vlmrobust.models.classifiers.adapter import ClassifierAdapter

    lite0 = load_adapter("classifier:efficientnet-lite0", device="cpu")
    assert isinstance(lite0, ClassifierAdapter)
    full = lite0.class_logits(ims)
    want = [[full[0, [1, 2]].max(), full[0, [281, 282, 285]].max()],
            [full[1, 967], full[1, 968]]]
    np.testing.assert_allclose(pf.logits_flat.reshape(2, 2), want, rtol=1e-6)


def test_classifier_over_a_space_without_ids_is_refused_before_loading(tmp_path: Path) -> None:
    space = LabelSpace("flowers", (ClassEntry("rose"), ClassEntry("daisy")))
    ds = write_classification(tmp_path / "ds", {"f": space},
                              {"f": [{"id": "a", "image": photos()[0], "label": 0}]})
    with pytest.raises(VlmrobustError, match="no imagenet_ids"):
        predict_dataset(RunSpec(
            "classifier:efficientnet-lite0", ds, tmp_path / "p.parquet", progress=False,
            backend=BackendOptions(device="cpu")))
    assert not (tmp_path / "p.parquet").exists()
    assert not list(tmp_path.glob(".p.parquet.partial"))


def test_several_configs_in_one_file_skip_a_space_the_classifier_cannot_read(
        tmp_path: Path) -> None:
    """A full classification build holds spaces without ImageNet ids (Flowers102...):
    `--config a,b` predicts ImageNet val and a shift into one file (so that seed
    001's temperature reaches the shift) without the unreadable config."""
    ims = photos()[:2]
    flowers = LabelSpace("flowers", (ClassEntry("rose"), ClassEntry("daisy")))
    rows = {c: [{"id": f"{c}-{i}", "image": im, "label": i} for i, im in enumerate(ims)]
            for c in ("val", "shift", "f")}
    ds = write_classification(tmp_path / "ds", {"val": imagenet_space(), "shift": imagenet_space(),
                                                "f": flowers}, rows)
    with pytest.raises(VlmrobustError, match="no imagenet_ids"):
        predict_dataset(RunSpec(
            "classifier:efficientnet-lite0", ds, tmp_path / "all.parquet", progress=False,
            backend=BackendOptions(device="cpu", threads=1)))
    with pytest.raises(VlmrobustError, match="no config 'vall'; did you mean 'val'"):
        predict_dataset(RunSpec(
            "classifier:efficientnet-lite0", ds, tmp_path / "x.parquet", configs="vall,shift",
            progress=False, backend=BackendOptions(device="cpu", threads=1)))
    out = predict_dataset(RunSpec(
        "classifier:efficientnet-lite0", ds, tmp_path / "p.parquet", configs="val, shift",
        progress=False, backend=BackendOptions(device="cpu", threads=1)))
    pf = read_predictions(out)
    assert sorted(pf.ids.tolist()) == ["shift-0", "shift-1", "val-0", "val-1"]
    assert pf.logits_len is not None and pf.logits_len.tolist() == [1000] * 4


def test_efficientnet_lite0_on_the_sample_classification_config(tmp_path: Path) -> None:
    """Issue 23's Done-when on the embedded sample: `vlmrobust build classification
    --sample`, then EfficientNet-Lite0 on its sample-photo config gives 1,000
    logits per row identical to the model's own forward pass (one thread, the
    adapter's micro-batches of 4 images, the last one zero-padded), and on its
    K=5 config those logits at the row's candidates."""
    import io

    import torch
    from PIL import Image

    from vlmrobust.cli.main import main
    from vlmrobust.core.datadir import read_table
    from vlmrobust.models.classifiers.adapter import CPU_MICRO_BATCH
    from vlmrobust.models.classifiers.efficientnet_lite import lite_preprocess, load_lite

    ds = tmp_path / "ds"
    assert main(["build", "classification", "--sample", "--out", str(ds)]) == 0
    out = predict_dataset(RunSpec(
        "classifier:efficientnet-lite0", ds, tmp_path / "p.parquet", configs="sample-photo",
        progress=False, backend=BackendOptions(device="cpu", threads=1, batch_size=8)))
    pf = read_predictions(out)
    assert pf.logits_len is not None and pf.logits_flat is not None
    rows = read_table(ds, "sample-photo", ["id", "image"]).to_pylist()
    n = len(rows)
    assert pf.logits_len.tolist() == [1000] * n and pf.ids.tolist() == [r["id"] for r in rows]
    got = pf.logits_flat.reshape(n, 1000).astype(np.float32)
    pre = lite_preprocess(224)
    x = torch.from_numpy(np.stack([pre(Image.open(io.BytesIO(r["image"]["bytes"])).convert("RGB"))
                                   for r in rows]))
    pad = -n % CPU_MICRO_BATCH
    x = torch.cat([x, x.new_zeros((pad, *x.shape[1:]))])
    saved = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        model = load_lite(0, torch.device("cpu")).module
        with torch.inference_mode():
            want = torch.cat([model(x[i:i + CPU_MICRO_BATCH])
                              for i in range(0, len(x), CPU_MICRO_BATCH)])[:n].numpy()
    finally:
        torch.set_num_threads(saved)
    np.testing.assert_array_equal(got, want)
    # the K=5 config's rows: the same images' logits at their candidates, in order
    k5 = read_table(ds, "sample-photo-k5", ["id", "candidates"]).to_pylist()
    out5 = predict_dataset(RunSpec(
        "classifier:efficientnet-lite0", ds, tmp_path / "k5.parquet", configs="sample-photo-k5",
        progress=False, backend=BackendOptions(device="cpu", threads=1)))
    pf5 = read_predictions(out5)
    assert pf5.logits_len is not None and pf5.logits_flat is not None
    assert pf5.logits_len.tolist() == [5] * len(k5)
    want5 = np.stack([got[j, r["candidates"]] for j, r in enumerate(k5)])
    np.testing.assert_array_equal(pf5.logits_flat.reshape(-1, 5).astype(np.float32), want5)
