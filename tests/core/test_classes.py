"""Class metadata: the shipped table against its source packages, uniqueness, label spaces,
ReaL labels, and the ObjectNet mapping loader."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from vlmrobust.core import classes
from vlmrobust.core.classes import (
    ImageNetClass,
    class_by_wnid,
    label_space,
    load_imagenet_classes,
    load_objectnet_folders,
    load_objectnet_mapping,
    load_real_json,
    real_labels,
    val_labels,
)
from vlmrobust.core.errors import VlmrobustError

REPO = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("gen_class_table", REPO / "scripts" / "gen_class_table.py")
assert _spec is not None and _spec.loader is not None
gen = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gen)


def _site(module: str) -> Path:
    return Path(str(__import__(module).__file__)).parent


def test_1000_rows_in_index_order_with_valid_wnids():
    cls = load_imagenet_classes()
    assert len(cls) == 1000
    assert [c.index for c in cls] == list(range(1000))
    assert len({c.wnid for c in cls}) == 1000
    assert all(re.fullmatch(r"n\d{8}", c.wnid) for c in cls)


def test_display_names_unique_even_ignoring_case_punctuation_and_plural():
    names = [c.name for c in load_imagenet_classes()]
    assert len(set(names)) == 1000
    assert len({gen.name_key(n) for n in names}) == 1000
    # The known collisions are resolved, keeping the class whose WordNet lemma is the name.
    assert class_by_wnid("n03773504").name == "missile"
    assert class_by_wnid("n04008634").name == "projectile"
    assert class_by_wnid("n04356056").name == "sunglasses"
    assert class_by_wnid("n04355933").name.startswith("sunglass (")
    assert {class_by_wnid("n02012849").name, class_by_wnid("n03126707").name} == {"crane bird", "construction crane"}


def test_table_matches_source_packages_independently():
    clean = json.loads((_site("imagenet_classes") / "imagenet1k_clean_names.json").read_text())
    orig = json.loads((_site("imagenet_classes") / "imagenet1k_label_to_names.json").read_text())
    info = _site("timm") / "data" / "_info"
    wnids = (info / "imagenet_synsets.txt").read_text().split()
    r_idx = sorted(int(x) for x in (info / "imagenet_r_indices.txt").read_text().split())
    a_idx = sorted(int(x) for x in (info / "imagenet_a_indices.txt").read_text().split())
    cls = load_imagenet_classes()
    assert [c.wnid for c in cls] == wnids
    assert [c.clean_name for c in cls] == clean
    assert [c.label for c in cls] == [orig[str(i)] for i in range(1000)]
    # Only collision losers differ from the curated name.
    assert sum(c.name != c.clean_name for c in cls) == 2
    assert list(label_space("imagenet-r")) == r_idx
    assert list(label_space("imagenet-a")) == a_idx
    assert class_by_wnid("n01440764").gloss.startswith("freshwater dace-like game fish")


def test_shipped_files_are_up_to_date_and_reproducible():
    # Byte-identical regeneration of the ReaL and val files (the table needs WordNet,
    # exercised in test_wordnet.py's full-wnid test).
    assert (classes.REAL_LABELS).read_bytes() == gen.build_real()
    assert (classes.VAL_LABELS).read_bytes() == gen.build_val()


def test_label_spaces():
    assert label_space("imagenet-val") == tuple(range(1000))
    assert label_space("imagenet-v2") == label_space("imagenet-sketch") == tuple(range(1000))
    r, a = label_space("imagenet-r"), label_space("imagenet-a")
    assert len(r) == len(a) == 200 and r == tuple(sorted(r))
    # Known members: goldfish in IN-R only, stingray in both, tench in neither.
    assert 1 in r and 1 not in a
    assert 6 in r and 6 in a
    assert 0 not in r and 0 not in a
    assert len(set(r) & set(a)) == 86
    with pytest.raises(VlmrobustError, match="unknown variant"):
        label_space("imagenet-c")
    with pytest.raises(VlmrobustError, match="objectnet_mapping"):
        label_space("objectnet")


def test_real_labels_against_timm_json_and_val_labels():
    real = real_labels()
    raw = json.loads((_site("timm") / "data" / "_info" / "imagenet_real_labels.json").read_text())
    assert len(real) == 50000
    for i in (0, 1, 25, 49999):
        assert real[f"ILSVRC2012_val_{i + 1:08d}.JPEG"] == tuple(raw[i])
    assert sum(1 for v in real.values() if not v) == sum(1 for v in raw if not v) > 3000
    val = val_labels()
    orig = json.loads((_site("imagenet_classes") / "val_image_to_1k_label.json").read_text())
    assert val == orig
    # ReaL agrees with the original label on most images that have ReaL labels (~90%).
    labelled = [k for k, v in real.items() if v]
    agree = sum(val[k] in real[k] for k in labelled) / len(labelled)
    assert 0.8 < agree < 0.99


def test_load_real_json_reads_official_format_and_rejects_bad(tmp_path):
    good = tmp_path / "real.json"
    good.write_text(json.dumps([[1, 2]] + [[]] * 49999))
    out = load_real_json(good)
    assert out["ILSVRC2012_val_00000001.JPEG"] == (1, 2) and out["ILSVRC2012_val_00050000.JPEG"] == ()
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([[1]] * 10))
    with pytest.raises(VlmrobustError, match=r"bad\.json.*50000"):
        load_real_json(bad)
    bad.write_text(json.dumps([[1000]] * 50000))
    with pytest.raises(VlmrobustError, match="entry 0"):
        load_real_json(bad)


def test_class_by_wnid_and_record_validation():
    assert class_by_wnid("n01440764").index == 0
    with pytest.raises(VlmrobustError, match="n99999999"):
        class_by_wnid("n99999999")
    with pytest.raises(ValueError):
        ImageNetClass(index=1000, wnid="n01440764", name="x")
    with pytest.raises(ValueError):
        ImageNetClass(index=0, wnid="01440764", name="x")


def _write_objectnet_mappings(d: Path, mapping: dict[str, str], folders: dict[str, str]) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    (d / "objectnet_to_imagenet_1k.json").write_text(json.dumps(mapping))
    (d / "folder_to_objectnet_label.json").write_text(json.dumps(folders))
    return d


def test_objectnet_mapping_resolves_ilsvrc_label_strings(tmp_path):
    d = _write_objectnet_mappings(
        tmp_path / "mappings",
        {
            "Alarm clock": "analog clock; digital clock",
            "Backpack": "backpack, back pack, knapsack, packsack, rucksack, haversack",
            "Banana": "banana",
        },
        {"alarm_clock": "Alarm clock", "backpack": "Backpack", "banana": "Banana", "air_freshener": "Air freshener"},
    )
    m = load_objectnet_mapping(d / "objectnet_to_imagenet_1k.json")
    assert m == {"Alarm clock": (409, 530), "Backpack": (414,), "Banana": (954,)}
    assert load_objectnet_mapping(d) == m  # the mappings dir works too
    assert load_objectnet_mapping(tmp_path) == m  # and the folder that holds mappings/
    assert label_space("objectnet", objectnet_mapping=d) == (409, 414, 530, 954)
    folders = load_objectnet_folders(d)
    assert folders == {"alarm_clock": (409, 530), "backpack": (414,), "banana": (954,)}


@pytest.mark.parametrize(
    ("content", "match"),
    [
        ("{not json", "not a readable JSON"),
        ("[]", "expected a JSON object"),
        (json.dumps({"Crane": "crane"}), "ambiguous"),
        (json.dumps({"Thing": "no such class"}), "unknown"),
        (json.dumps({"Thing": 3}), "not a non-empty string"),
    ],
)
def test_objectnet_mapping_bad_files(tmp_path, content, match):
    p = tmp_path / "objectnet_to_imagenet_1k.json"
    p.write_text(content)
    with pytest.raises(VlmrobustError, match=match) as err:
        load_objectnet_mapping(p)
    assert str(p) in str(err.value) and "\n" not in str(err.value)


def test_objectnet_missing_files(tmp_path):
    with pytest.raises(VlmrobustError, match="not found"):
        load_objectnet_mapping(tmp_path / "nope.json")
    d = tmp_path / "m"
    d.mkdir()
    (d / "objectnet_to_imagenet_1k.json").write_text(json.dumps({"Banana": "banana"}))
    with pytest.raises(VlmrobustError, match="folder_to_objectnet_label"):
        load_objectnet_folders(d)
    (d / "folder_to_objectnet_label.json").write_text(json.dumps({"x": "Apple"}))
    with pytest.raises(VlmrobustError, match=r"'Banana'.*no folder"):
        load_objectnet_folders(d)


def test_runtime_needs_no_source_packages():
    code = (
        "import sys\n"
        "for m in ('timm', 'imagenet_classes', 'clip_benchmark', 'nltk'): sys.modules[m] = None\n"
        "from vlmrobust.core.classes import load_imagenet_classes, real_labels, label_space\n"
        "assert len(load_imagenet_classes()) == 1000 and len(real_labels()) == 50000\n"
        "assert len(label_space('imagenet-r')) == 200\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO)


def test_source_json_reads_are_bounded(tmp_path):
    # A wrong path must not be read into memory: non-regular files are refused.
    from vlmrobust.core.classes import load_real_json
    from vlmrobust.core.errors import SourceError

    with pytest.raises(SourceError, match=r"real\.json from google-research"):
        load_real_json("/dev/zero")
    with pytest.raises(SourceError, match="not found; fix"):
        load_real_json(tmp_path / "missing.json")
