"""ObjectNet scored as its paper does: an option's logit is the max over every
ImageNet-1k class its ObjectNet class maps to (``option_class_groups``), built from
the release's mappings/ layout; other variants carry one-class groups, and
datasets without the column keep the single-id path."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import skimage.data
from PIL import Image

from tests.builders.imagenet_mcq.test_kisel_objectnet import build_objectnet_mcq
from vlmrobust.cli.main import main
from vlmrobust.core.datadir import read_table, shard_paths
from vlmrobust.core.errors import VlmrobustError
from vlmrobust.evaluation.predict.dataset import predict_dataset
from vlmrobust.evaluation.predict.spec import BackendOptions, RunSpec
from vlmrobust.models import load_adapter
from vlmrobust.models.classifiers.adapter import ClassifierAdapter

MODEL = "classifier:efficientnet-lite0"
# the fixture's mapping (tests/builders/imagenet_mcq/test_kisel_objectnet.py), by option text
GROUPS = {"chair": [423, 559, 765], "still Camera": [732, 759], "tie": [457, 906],
          "banana": [954], "mug": [504], "bench": [703], "TV": [851]}


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("ds") / "mcq"
    build_objectnet_mcq(tmp_path_factory.mktemp("src"), out)
    return out


@pytest.fixture(scope="module")
def lite0() -> ClassifierAdapter:
    adapter = load_adapter(MODEL, device="cpu")
    assert isinstance(adapter, ClassifierAdapter)
    return adapter


def _rewrite(src: Path, dst: Path, edit: Any) -> Path:
    """A copy of dataset ``src`` whose parquet shards went through ``edit(table)``."""
    shutil.copytree(src, dst)
    for config in ("imagenet-val-random", "imagenet-val-wordnet", "objectnet-random",
                   "objectnet-wordnet"):
        for p in shard_paths(dst, config):
            pq.write_table(edit(pq.read_table(p)), p)
    return dst


def test_objectnet_rows_carry_every_mapped_class(dataset: Path) -> None:
    seen = set()
    for strategy in ("random", "wordnet"):
        rows = read_table(dataset, f"objectnet-{strategy}").to_pylist()
        assert len(rows) == 21
        for r in rows:
            assert r["option_class_groups"] == [GROUPS[o] for o in r["options"]]
            assert all(c in g for c, g in zip(r["option_class_ids"], r["option_class_groups"],
                                              strict=True))
            seen.update(r["options"])
        chairs = [r for r in rows if r["source_file"].startswith("chair/")]
        assert [r["option_class_groups"][r["answer"]] for r in chairs] == [[423, 559, 765]] * 3
    assert seen == set(GROUPS)
    for strategy in ("random", "wordnet"):
        for r in read_table(dataset, f"imagenet-val-{strategy}").to_pylist():
            assert r["option_class_groups"] == [[c] for c in r["option_class_ids"]]
    # every config has the same features, so the configs load as one dataset
    types = {str(pq.read_schema(shard_paths(dataset, c)[0]).field("option_class_groups").type)
             for c in ("imagenet-val-random", "objectnet-wordnet")}
    assert len(types) == 1 and "list<element: list<element: int32>>" in types.pop()
    card = (dataset / "README.md").read_text()
    assert "max over its group's class logits" in card


def test_group_logit_is_max_over_direct_class_logits(lite0: ClassifierAdapter) -> None:
    cat = Image.fromarray(skimage.data.chelsea())
    # independent of the adapter's cache and gather: W f + b on the pooled features
    head = lite0.model.head
    direct = (lite0._pooled([cat]).numpy() @ head.weight.detach().numpy().T
              + head.bias.detach().numpy())[0]
    order = np.argsort(-direct)
    top, second = int(order[0]), int(order[1])
    low = int(order[-1])
    groups = [[low, top], [second], [low, 7, second]]
    ids = [low, second, 7]
    row = {"id": "q", "image": cat, "options": ["a", "b", "c"], "option_class_ids": ids,
           "option_class_groups": groups}
    got = lite0.option_logits([row])[0]
    np.testing.assert_allclose(got, [direct[g].max() for g in groups], rtol=1e-4, atol=1e-4)
    single = lite0.option_logits([{k: v for k, v in row.items() if k != "option_class_groups"}])
    np.testing.assert_allclose(single[0], direct[ids], rtol=1e-4, atol=1e-4)
    # one image, two answers: the group holding the top class wins, the single id loses
    assert int(got.argmax()) == 0 and int(single[0].argmax()) == 1


@pytest.mark.parametrize(("groups", "message"), [
    ([[1, 2], []], r"row 'q': option 1's option_class_groups is empty; rebuild"),
    ([[1, 1000], [3]], r"option 0's option_class_groups \[1, 1000\] has ids outside 0\.\.999"),
    ([[-1, 1], [3]], r"option 0's option_class_groups \[-1, 1\] has ids outside"),
    ([[1, 2]], r"row 'q': 2 option_class_ids but 1 option_class_groups"),
    ([[1, 2], [4]], r"option 1's option_class_groups \[4\] lacks its option_class_ids entry 3"),
])
def test_bad_groups_are_refused_before_any_image(
    lite0: ClassifierAdapter, groups: list[list[int]], message: str
) -> None:
    # no image at all: the row is refused before the model would need one
    row = {"id": "q", "image": None, "options": ["a", "b"], "option_class_ids": [1, 3],
           "option_class_groups": groups}
    with pytest.raises(VlmrobustError, match=message) as err:
        lite0.option_logits([row])
    assert "\n" not in str(err.value)


def test_bad_group_in_a_dataset_fails_the_plan(dataset: Path, tmp_path: Path) -> None:
    def drop_own_id(table: pa.Table) -> pa.Table:
        groups = table.column("option_class_groups").to_pylist()
        groups[2] = [[g for g in grp if g != c] or [999] for grp, c in
                     zip(groups[2], table.column("option_class_ids")[2].as_py(), strict=True)]
        i = table.schema.get_field_index("option_class_groups")
        return table.set_column(i, table.schema.field(i),
                                pa.array(groups, type=table.schema.field(i).type))

    bad = _rewrite(dataset, tmp_path / "bad", drop_own_id)
    with pytest.raises(VlmrobustError, match=r"data/imagenet-val-random row 2 \(id '.*'\): "
                       r"option 0's option_class_groups \[\d+\] lacks its option_class_ids") as e:
        predict_dataset(RunSpec(
            MODEL, bad, tmp_path / "p.parquet", progress=False,
            backend=BackendOptions(device="cpu")))
    assert "\n" not in str(e.value)
    assert not (tmp_path / "p.parquet").exists()


def _logits(path: Path) -> dict[str, np.ndarray]:
    t = pq.read_table(path)
    return {i: np.asarray(v, dtype=np.float32)
            for i, v in zip(t.column("id").to_pylist(), t.column("logits").to_pylist(),
                            strict=True)}


def test_predict_new_and_old_datasets(
    dataset: Path, lite0: ClassifierAdapter, tmp_path: Path
) -> None:
    old = _rewrite(dataset, tmp_path / "old", lambda t: t.drop(["option_class_groups"]))
    assert "option_class_groups" not in read_table(old, "objectnet-random").column_names
    outs = {}
    for name, ds in (("new", dataset), ("old", old)):
        outs[name] = tmp_path / f"{name}.parquet"
        rc = main(["predict", "--model", MODEL, "--dataset", str(ds), "--out",
                   str(outs[name]), "--config", "objectnet-random", "--device", "cpu",
                   "--no-progress"])
        assert rc == 0
    new, before = _logits(outs["new"]), _logits(outs["old"])
    rows = read_table(dataset, "objectnet-random").to_pylist()
    z = lite0.class_logits([r["image"] for r in rows])
    grew = 0
    for r, zr in zip(rows, z, strict=True):
        want = [zr[g].max() for g in r["option_class_groups"]]
        np.testing.assert_allclose(new[r["id"]], want, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(before[r["id"]], zr[r["option_class_ids"]],
                                   rtol=1e-4, atol=1e-4)
        assert np.all(new[r["id"]] >= before[r["id"]] - 1e-4)
        grew += int(np.any(new[r["id"]] > before[r["id"]] + 1e-4))
    assert grew > 0  # the groups of several classes changed some option logits
