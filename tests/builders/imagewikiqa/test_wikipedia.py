"""Wikipedia as the imagewikiqa text source, offline: a hand-written snapshot in
the ``wikimedia/wikipedia`` parquet schema (id, url, title, text) and a folder of
pages; class -> article mapping by lemma and gloss with disambiguation; the
article title and snapshot recorded per row."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from vlmrobust.builders.families import BuildOptions
from vlmrobust.builders.imagewikiqa.sources.knowledge import load_knowledge
from vlmrobust.builders.imagewikiqa.sources.wikipedia import WikipediaSource, pick_article
from vlmrobust.core.errors import SourceError

SPEC = Path(__file__).resolve().parents[3] / "benchmarks" / "imagewikiqa.yaml"
CRANE_BIRD, KOALA, TIGER, LION = "n02012849", "n01882714", "n02129604", "n02129165"

# Short articles written for this test in the style of Wikipedia's plain-text dump.
PAGES = [
    ("101", "Crane", "Crane may refer to:\n\nCrane (bird), a large long-legged bird\n"
     "Crane (machine), a lifting machine\nCrane (surname), people with the surname"),
    ("102", "Crane (bird)",
     "Cranes are a family, the Gruidae, of large, long-legged and long-necked birds in the "
     "order Gruiformes. The crane is a wading bird found on every continent except Antarctica "
     "and South America. Cranes live in wetlands and grasslands, and most species nest in "
     "shallow marshes. It feeds on seeds, grains, insects and small animals, and it walks "
     "slowly through shallow water while it hunts. Cranes are known for elaborate dancing "
     "displays and loud trumpeting calls. Many populations are migratory and fly thousands "
     "of kilometres between breeding grounds and wintering grounds. Cranes have appeared in "
     "art and legend since ancient times, and in East Asia they are symbols of long life."),
    ("103", "Crane (machine)",
     "A crane is a machine equipped with a hoist rope, wire ropes or chains and sheaves that "
     "can be used both to lift and lower materials and to move them horizontally. It is "
     "mainly used for lifting heavy things and transporting them to other places. Cranes are "
     "commonly employed in transport for loading and unloading of freight, in construction "
     "for the movement of materials, and in manufacturing for assembling heavy equipment. "
     "The first cranes were invented by the ancient Greeks and were powered by men or "
     "animals. Modern cranes are made of steel and are driven by internal combustion engines "
     "or electric motors."),
    ("104", "Koala",
     "The koala is an arboreal herbivorous marsupial native to Australia. It is found in "
     "coastal areas of the eastern and southern regions of the continent. The koala lives in "
     "open eucalyptus forests, and the leaves of these trees make up most of its diet. It "
     "feeds on leaves for several hours a day and sleeps for up to twenty hours. The koala is "
     "native to Australia and nowhere else. Koalas are solitary animals, and a mother carries "
     "her young in a pouch for about six months. The koala was first described by Europeans "
     "in the 19th century, and its fur was widely traded in the early 20th century until "
     "hunting was banned."),
    ("105", "Tiger",
     "The tiger is the largest living cat species and a member of the genus Panthera. It is "
     "native to Asia, where it lives in forests, grasslands and mangrove swamps. The tiger is "
     "an apex predator and feeds on deer, wild pigs and other large mammals, which it hunts "
     "alone, mostly at dusk and at night. It is found in Asia from the Russian Far East to "
     "the islands of Indonesia. Tigers are strong swimmers and often bathe in ponds and "
     "rivers. The tiger has been hunted for its skin and bones since the 19th century, and "
     "it is now protected in every country where it lives."),
    ("106", "Violin",
     "The violin is a wooden string instrument in the violin family. It is played with a bow "
     "and has four strings tuned in perfect fifths. The violin was developed in Italy in the "
     "16th century."),
]


def write_snapshot(path: Path) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path.parent.mkdir(parents=True, exist_ok=True)
    table = pa.table({
        "id": [p[0] for p in PAGES],
        "url": [f"https://en.wikipedia.org/wiki/{p[1].replace(' ', '_')}" for p in PAGES],
        "title": [p[1] for p in PAGES],
        "text": [p[2] for p in PAGES],
    })
    pq.write_table(table, path, row_group_size=2)
    return path


def spec(path: Path, classes: list[str]) -> dict[str, Any]:
    raw: dict[str, Any] = yaml.safe_load(SPEC.read_text())
    raw["classes"] = classes
    raw["text_source"] = {"kind": "wikipedia", "path": str(path)}
    return raw


def by_wnid() -> dict[str, Any]:
    return {k.wnid: k for k in load_knowledge()}


def test_classes_map_to_their_article_with_disambiguation(tmp_path: Path) -> None:
    snap = write_snapshot(tmp_path / "20231101.en" / "train-00000-of-00001.parquet")
    k = by_wnid()
    source = WikipediaSource(snap.parent, "20231101.en")
    found, missing = source.map_classes([k[CRANE_BIRD], k[KOALA], k[TIGER], k[LION],
                                         k["n03126707"]])
    assert found[CRANE_BIRD].title == "Crane (bird)"
    assert found["n03126707"].title == "Crane (machine)"  # the other crane
    assert found[KOALA].title == "Koala" and found[TIGER].title == "Tiger"
    assert found[KOALA].revision == "20231101.en"
    assert found[KOALA].url.endswith("/wiki/Koala")
    assert list(missing) == [LION] and "no Wikipedia article" in missing[LION]


def test_a_homonym_alone_is_no_match() -> None:
    from vlmrobust.builders.imagewikiqa.sources.wikipedia import Article

    k = by_wnid()
    machine = Article("Crane (machine)", PAGES[2][2])
    disamb = Article("Crane", PAGES[0][2])
    assert pick_article(k[CRANE_BIRD], [machine, disamb]) is None


def test_wrong_schema_is_a_clear_error(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    bad = tmp_path / "bad.parquet"
    pq.write_table(pa.table({"title": ["Koala"], "body": ["x"]}), bad)
    with pytest.raises(SourceError, match=r"bad.parquet: not the wikimedia/wikipedia schema"):
        WikipediaSource(bad, "x").map_classes([by_wnid()[KOALA]])


def test_folder_of_pages_with_front_matter(tmp_path: Path) -> None:
    pages = tmp_path / "pages"
    pages.mkdir()
    (pages / "Koala.txt").write_text(PAGES[3][2])
    (pages / "tiger-page.md").write_text("---\ntitle: Tiger\nrevision: 1183650410\n---\n"
                                         + PAGES[4][2])
    found, missing = WikipediaSource(pages, "pages").map_classes(
        [by_wnid()[KOALA], by_wnid()[TIGER]])
    assert (found[KOALA].title, found[KOALA].revision) == ("Koala", "pages")
    assert (found[TIGER].title, found[TIGER].revision) == ("Tiger", "1183650410")
    assert missing == {}


def test_snapshot_build_records_article_and_snapshot(tmp_path: Path) -> None:
    from vlmrobust.builders.imagewikiqa.build import build
    from vlmrobust.core.datadir import read_table

    snap = write_snapshot(tmp_path / "20231101.en" / "train-00000-of-00001.parquet")
    out = tmp_path / "out"
    manifest = build(spec(snap.parent, [CRANE_BIRD, KOALA, TIGER, LION]), SPEC,
                     BuildOptions(out=out, sample=True, progress=False))
    assert list(manifest["failures"]) == [LION]
    rows = read_table(out, "default").to_pylist()
    assert rows
    title = {CRANE_BIRD: "Crane (bird)", KOALA: "Koala", TIGER: "Tiger"}
    texts = {p[1]: p[2] for p in PAGES}
    for r in rows:
        assert r["article"] == title[r["wnid"]] and r["revision"] == "20231101.en"
        # Questions come from the article (the gloss is the only other text).
        first = r["reference"].split(". ")[0]
        k = by_wnid()[r["wnid"]]
        assert first[:20] in texts[r["article"]] or first[:20] in f"{k.name}: {k.gloss}"
    assert len(manifest["source_fingerprints"]["wikipedia"]) == 64
    card = (out / "README.md").read_text()
    assert "20231101.en" in card


def test_pinned_pages_build_and_classes_without_a_page_are_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from vlmrobust.builders.imagewikiqa.build import build
    from vlmrobust.core.datadir import read_table
    from vlmrobust.core.errors import VlmrobustError

    pages = tmp_path / "pages"
    pages.mkdir()
    (pages / f"{TIGER}.txt").write_text(PAGES[4][2])   # pinned by wnid, no front matter
    (pages / f"{CRANE_BIRD}.md").write_text("---\ntitle: Crane (bird)\n---\n" + PAGES[1][2])
    manifest = build(spec(pages, [TIGER, CRANE_BIRD, KOALA]), SPEC,
                     BuildOptions(out=tmp_path / "out", sample=True, progress=False))
    assert list(manifest["failures"]) == [KOALA]
    assert f"no Wikipedia article for class {KOALA}" in capsys.readouterr().err
    rows = read_table(tmp_path / "out", "default", ["wnid", "article", "revision"]).to_pylist()
    assert rows and {r["wnid"] for r in rows} <= {TIGER, CRANE_BIRD}
    titles = {r["wnid"]: r["article"] for r in rows}
    assert titles.get(TIGER, "tiger") == "tiger" and titles.get(CRANE_BIRD, "Crane (bird)") \
        == "Crane (bird)"
    assert {r["revision"] for r in rows} == {"pages"}

    with pytest.raises(VlmrobustError, match="does not exist"):
        build(spec(tmp_path / "nowhere", [TIGER]), SPEC,
              BuildOptions(out=tmp_path / "o2", sample=True, progress=False))
    assert not (tmp_path / "o2").exists()
