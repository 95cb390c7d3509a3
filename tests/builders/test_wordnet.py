"""WordNet offline: installer mechanics on a tiny fake dict dir, the real corpus (Debian
wordnet-base installed by `python -m vlmrobust.builders.wordnet --install`), and the error path."""

from __future__ import annotations

import os
from pathlib import Path

import nltk
import pytest

from vlmrobust.builders import wordnet as bwn
from vlmrobust.core.classes import load_imagenet_classes
from vlmrobust.core.errors import VlmrobustError


def _fake_dict(d: Path) -> Path:
    d.mkdir()
    for name in bwn.REQUIRED_FILES:
        (d / name).write_text(f"fake {name}\n")
    (d / "index.sense").write_text("dog%1:05:00:: 02084071 1 42\n")
    return d


def test_lexnames_is_wordnet_30_list():
    lines = bwn.lexnames_text().splitlines()
    assert len(lines) == 45
    fields = [ln.split("\t") for ln in lines]
    assert [int(f[0]) for f in fields] == list(range(45))
    assert fields[3][1] == "noun.Tops" and fields[44][1] == "adj.ppl"
    # Category column = syntactic category of the file's prefix (1 noun, 2 verb, 3 adj, 4 adv).
    cat = {"noun": "1", "verb": "2", "adj": "3", "adv": "4"}
    assert all(f[2] == cat[f[1].split(".")[0]] for f in fields)


def test_install_is_idempotent_and_copies(tmp_path):
    src = _fake_dict(tmp_path / "dict")
    corpus = bwn.install(tmp_path / "nltk_data", source=src)
    assert corpus == tmp_path / "nltk_data" / "corpora" / "wordnet"
    assert (corpus / "lexnames").read_text() == bwn.lexnames_text()
    # Real single-link files (nltk refuses symlinks out of root and hard links).
    for name in (*bwn.REQUIRED_FILES, "index.sense"):
        p = corpus / name
        assert not p.is_symlink() and p.stat().st_nlink == 1
        assert p.read_bytes() == (src / name).read_bytes()
    before = {p.name: p.stat().st_mtime_ns for p in corpus.iterdir()}
    bwn.install(tmp_path / "nltk_data", source=src)
    assert {p.name: p.stat().st_mtime_ns for p in corpus.iterdir()} == before
    assert not [p for p in corpus.iterdir() if p.name.startswith(".")]


def test_install_default_dir_follows_nltk_data_env(tmp_path, monkeypatch):
    monkeypatch.setenv("NLTK_DATA", str(tmp_path / "a") + os.pathsep + str(tmp_path / "b"))
    assert bwn.default_install_dir() == tmp_path / "a"
    monkeypatch.delenv("NLTK_DATA")
    assert bwn.default_install_dir() == Path.home() / "nltk_data"


def test_install_refuses_incomplete_source_and_writes_nothing(tmp_path):
    src = tmp_path / "dict"
    src.mkdir()
    (src / "data.noun").write_text("x")
    with pytest.raises(VlmrobustError, match=r"dict.*apt-get install wordnet-base"):
        bwn.install(tmp_path / "nltk_data", source=src)
    assert not (tmp_path / "nltk_data").exists()


def test_cli_install(tmp_path, capsys):
    src = _fake_dict(tmp_path / "dict")
    assert bwn.main(["--install", "--data-dir", str(tmp_path / "d"), "--source", str(src)]) == 0
    assert (tmp_path / "d" / "corpora" / "wordnet" / "lexnames").is_file()
    assert bwn.main(["--install", "--data-dir", str(tmp_path / "e"), "--source", str(tmp_path / "none")]) == 1
    assert "error:" in capsys.readouterr().err


def test_missing_corpus_error_says_how_to_install(tmp_path, monkeypatch):
    monkeypatch.setattr(nltk.data, "path", [str(tmp_path)])
    bwn.get_wordnet.cache_clear()
    try:
        with pytest.raises(VlmrobustError) as err:
            bwn.get_wordnet()
        msg = str(err.value)
        assert "apt-get install wordnet-base" in msg and "python -m vlmrobust.builders.wordnet --install" in msg
        assert "nltk.download('wordnet')" in msg and "\n" not in msg
    finally:
        bwn.get_wordnet.cache_clear()


def test_bad_wnid_format():
    with pytest.raises(VlmrobustError, match="not a wnid"):
        bwn.synset_for_wnid("dog")


# ---- the real corpus (installed on this machine and by the README's test command)


def test_known_synset_and_lexname():
    dog = bwn.synset_for_wnid("n02084071")
    assert dog.name() == "dog.n.01"
    assert dog.lemma_names()[:3] == ["dog", "domestic_dog", "Canis_familiaris"]
    assert dog.lexname() == "noun.animal"
    assert {h.name() for h in dog.hypernyms()} == {"canine.n.02", "domestic_animal.n.01"}
    assert bwn.get_wordnet().get_version() == "3.0"


def test_lexnames_agree_with_raw_data_file():
    # Independent check: the lex_filenum field of raw data.noun lines, mapped through
    # our lexnames, must give nltk's lexname for the same offsets.
    wn = bwn.get_wordnet()
    corpus = bwn.find_corpus()
    assert corpus is not None
    names = [ln.split("\t")[1] for ln in bwn.lexnames_text().splitlines()]
    checked = 0
    with open(corpus / "data.noun", encoding="utf-8") as f:
        for line in f:
            if line.startswith(" "):
                continue  # licence header
            offset, lexfile = line.split(" ", 2)[:2]
            if int(offset) % 97 == 0:  # a spread-out sample
                assert wn.synset_from_pos_and_offset("n", int(offset)).lexname() == names[int(lexfile)]
                checked += 1
    assert checked > 500


def test_all_1000_imagenet_wnids_resolve():
    for c in load_imagenet_classes():
        syn = bwn.synset_for_wnid(c.wnid)
        assert syn.pos() == "n" and syn.offset() == int(c.wnid[1:])
        assert syn.lemma_names()[0].replace("_", " ") == c.lemmas[0]


def test_unknown_offset():
    with pytest.raises(VlmrobustError, match="n00000001"):
        bwn.synset_for_wnid("n00000001")


def test_shipped_class_table_regenerates_byte_identical():
    # scripts/gen_class_table.py from the source packages + WordNet gives exactly the
    # shipped table (the collision fallback uses WordNet hypernyms).
    import importlib.util

    from vlmrobust.core.classes import CLASSES_TSV

    script = Path(__file__).resolve().parents[2] / "scripts" / "gen_class_table.py"
    spec = importlib.util.spec_from_file_location("gen_class_table", script)
    assert spec is not None and spec.loader is not None
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    assert gen.build_table().encode() == CLASSES_TSV.read_bytes()


def test_sense_index_apis_work_offline():
    # Issue 11: the layout holds index.sense, so the sense-key APIs of nltk work.
    wn = bwn.get_wordnet()
    assert (bwn.find_corpus() / "index.sense").is_file()
    assert wn.synset_from_pos_and_offset("n", 2084071).name() == "dog.n.01"
    lemma = wn.lemma_from_key("dog%1:05:00::")
    assert lemma.synset().name() == "dog.n.01" and lemma.name() == "dog"
    assert wn.synset_from_sense_key("tench%1:05:00::").offset() == 1440764


def test_install_refuses_a_source_without_the_sense_index(tmp_path):
    src = _fake_dict(tmp_path / "dict")
    (src / "index.sense").unlink()
    with pytest.raises(VlmrobustError, match=r"index\.sense.*wordnet-sense-index"):
        bwn.install(tmp_path / "nltk_data", source=src)
    assert not (tmp_path / "nltk_data").exists()
