"""`leaderboard publish` writes the per-row results as a details dataset beside
the site (issue 37 item 1): one parquet config per model × dataset that
`datasets.load_dataset` reads without vlmrobust, rows equal to what `submit`
stored, recomputed from the predictions (never the submitted rows.jsonl); the
model page links the config instead of hosting rows.jsonl.gz, and the push goes
to the hub repo named in benchmarks/hub_names.py through builders/hub.py."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from tests.fixtures.light_env import make_package_venv
from tests.fixtures.submission import real_submissions
from vlmrobust.benchmarks.hub_names import DETAILS_REPO
from vlmrobust.core.errors import VlmrobustError
from vlmrobust.leaderboard.site.details import details_config, details_url
from vlmrobust.leaderboard.site.publish import publish_site, read_releases

LOAD_ALL = """
import json, sys
import datasets
try:
    import vlmrobust
except ImportError:
    pass
else:
    sys.exit("vlmrobust is importable here")
root, configs = sys.argv[1], sys.argv[2:]
out = {c: datasets.load_dataset(root, c, split="test").to_list() for c in configs}
print(json.dumps(out))
"""


def _load_without_vlmrobust(tmp: Path, details: Path, configs: list[str]) -> dict[str, Any]:
    python = make_package_venv(tmp / "env", "datasets")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(HF_DATASETS_OFFLINE="1", HF_HUB_OFFLINE="1", HF_HOME=str(tmp / "hf"))
    r = subprocess.run([str(python), "-c", LOAD_ALL, str(details), *configs], cwd=tmp,
                       capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    return dict(json.loads(r.stdout.splitlines()[-1]))


def test_details_load_without_vlmrobust_and_equal_the_submitted_rows(tmp_path: Path) -> None:
    subs, datasets = real_submissions(tmp_path, 2)
    # a tampered submitted rows file must not reach the details
    (subs / "model-0" / "bench-c" / "rows.jsonl").write_text('{"id": "forged"}\n')
    site = tmp_path / "site"
    release = publish_site(subs, site, datasets=datasets)
    details = tmp_path / "details"  # beside the site
    configs = [details_config(m, ds.name) for m in ("model-0", "model-1") for ds in datasets]
    assert release["details"] == {"repo": DETAILS_REPO, "configs": 4, "hub_tag": None,
                                  "fingerprint": release["details"]["fingerprint"]}
    loaded = _load_without_vlmrobust(tmp_path, details, configs)
    for model in ("model-0", "model-1"):
        page = (site / "models" / f"{model}.html").read_text()
        for ds in datasets:
            config = details_config(model, ds.name)
            rows = loaded[config]
            assert f'href="{details_url(config)}"' in page and f"<code>{config}</code>" in page
            stored = {r["id"]: r for r in
                      pq.read_table(subs / model / ds.name / "predictions.parquet").to_pylist()}
            assert sorted(r["id"] for r in rows) == sorted(stored) and len(rows) > 0
            for r in rows:  # recomputed from the stored predictions
                logits = stored[r["id"]]["logits"]
                assert r["logits"] == logits
                assert r["predicted"] == logits.index(max(logits))
                assert r["correct"] is (r["predicted"] == r["answer"])
            if not (model == "model-0" and ds.name == "bench-c"):
                submitted = [json.loads(x) for x in
                             (subs / model / ds.name / "rows.jsonl").read_text().splitlines()]
                assert [{k: r[k] for k in s} for r, s in zip(rows, submitted, strict=True)] == submitted
            if ds.name == "bench-c":
                corrupted = [r for r in rows if r["clean_id"] is not None]
                assert corrupted and all(-2 <= r["ras"] <= 1 for r in corrupted)
                assert {r["corruption"] for r in rows} >= {"none"} and "kappa" in rows[0]
    # the site hosts no per-row files any more
    assert not (site / "downloads").exists() or not list((site / "downloads").rglob("*.rows.*"))
    # same submissions, same bytes
    first = {p.relative_to(details): p.read_bytes() for p in details.rglob("*.parquet")}
    publish_site(subs, tmp_path / "again" / "site", datasets=datasets, version="1")
    again = tmp_path / "again" / "details"
    assert {p.relative_to(again): p.read_bytes() for p in again.rglob("*.parquet")} == first


class FakeHub:
    """builders/hub.py's HubApi, recording calls (no network)."""

    def __init__(self, fail: bool = False) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.fail = fail

    def create_repo(self, repo_id: str, **kw: Any) -> None:
        self.calls.append(("create_repo", {"repo_id": repo_id, **kw}))

    def upload_folder(self, **kw: Any) -> None:
        if self.fail:
            raise VlmrobustError("hub unreachable")
        self.calls.append(("upload_folder", {**kw, "files": sorted(
            str(p.relative_to(kw["folder_path"])) for p in Path(kw["folder_path"]).rglob("*")
            if p.is_file())}))

    def create_tag(self, repo_id: str, **kw: Any) -> None:
        self.calls.append(("create_tag", {"repo_id": repo_id, **kw}))


def test_publish_pushes_the_details_to_the_named_hub_repo(tmp_path: Path) -> None:
    subs, datasets = real_submissions(tmp_path, 2, sample=False)
    site, details = tmp_path / "site", tmp_path / "out" / "details"
    publish_site(subs, site, datasets=datasets, details=details)  # release 1, not pushed
    # a failed push stops before the site: release 1 stays the published one
    with pytest.raises(VlmrobustError, match="hub unreachable"):
        publish_site(subs, site, datasets=datasets, details=details, push=True,
                     hub_api=FakeHub(fail=True))
    assert [r["version"] for r in read_releases(site)] == ["1"]
    hub = FakeHub()
    release = publish_site(subs, site, datasets=datasets, details=details, push=True, hub_api=hub)
    assert release["version"] == "2" and release["details"]["hub_tag"] == "v2"
    assert [c[0] for c in hub.calls] == ["create_repo", "upload_folder", "create_tag"]
    assert hub.calls[0][1]["repo_id"] == DETAILS_REPO and hub.calls[0][1]["repo_type"] == "dataset"
    up = hub.calls[1][1]
    assert up["repo_id"] == DETAILS_REPO and Path(up["folder_path"]) == details
    assert "README.md" in up["files"] and "manifest.json" in up["files"]
    assert "data/model-1--bench-c/test-00000-of-00001.parquet" in up["files"]
    assert hub.calls[2][1]["tag"] == "v2"


def test_sample_details_are_never_pushed(tmp_path: Path) -> None:
    subs, datasets = real_submissions(tmp_path, 1)  # embedded-sample datasets
    hub = FakeHub()
    with pytest.raises(VlmrobustError, match="embedded-sample"):
        publish_site(subs, tmp_path / "site", datasets=datasets, push=True, hub_api=hub)
    assert hub.calls == [] and not (tmp_path / "site").exists()


def test_details_never_replace_someone_elses_folder(tmp_path: Path) -> None:
    subs, datasets = real_submissions(tmp_path, 1)
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep")
    with pytest.raises(VlmrobustError, match="not a dataset built by vlmrobust"):
        publish_site(subs, tmp_path / "site", datasets=datasets, details=mine)
    with pytest.raises(VlmrobustError, match="overlap"):
        publish_site(subs, tmp_path / "site", datasets=datasets, details=subs / "details")
    assert (mine / "notes.txt").read_text() == "keep" and list(mine.iterdir()) == [mine / "notes.txt"]
    assert not (tmp_path / "site").exists() and not (subs / "details").exists()


def test_two_sections_never_share_a_config() -> None:
    from types import SimpleNamespace

    from vlmrobust.leaderboard.site.details import details_entries

    def sub(model: str, key: str) -> SimpleNamespace:
        return SimpleNamespace(model_id=model, evidence={key: SimpleNamespace(details=b"x")})

    lb: Any = SimpleNamespace(submissions=[sub("a--b", "c"), sub("a", "b--c")],
                              pages={"a--b": "models/a--b.html", "a": "models/a.html"})
    with pytest.raises(VlmrobustError, match="'a--b--c' would hold both model 'a' on 'b--c'"):
        details_entries(lb)
    lb.submissions = [sub("a--b", "c"), sub("a", "c")]
    assert [e[:3] for e in details_entries(lb)] == [("a--c", "a--c", "c"), ("a--b--c", "a--b--c", "c")]
