"""The hub names live in one module (benchmarks/hub_names.py, issue 40 item 2):
the README's list is generated from it, and every hub id a doc, template, spec
or docstring names is one of them."""

from __future__ import annotations

import subprocess
from pathlib import Path

from vlmrobust.benchmarks import hub_names
from vlmrobust.benchmarks.families import FAMILIES

REPO = Path(__file__).resolve().parents[2]
# generic syntax in the docs ("hub: OWNER/NAME"), not a name of the project
PLACEHOLDERS = {"OWNER/NAME"}


def _tracked(*patterns: str) -> list[Path]:
    out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", *patterns], cwd=REPO, check=True,
                         capture_output=True, text=True).stdout.split()
    # the module itself shows the syntax it matches in its doctests
    return [REPO / p for p in out
            if not p.startswith("tests/") and p != "benchmarks/hub_names.py"]


DOCS = _tracked("*.md", "*.j2", "*.yaml", "*.py")


def test_every_family_spec_has_one_dataset_repo() -> None:
    specs = {p.stem for p in (REPO / "benchmarks").glob("*.yaml")}
    assert set(hub_names.DATASET_REPOS) == specs == {f.name for f in FAMILIES}
    names = hub_names.all_names()
    assert len(set(names)) == len(names)
    assert all(n.startswith(hub_names.ORG + "/") for n in names)


def test_readme_list_is_the_generated_one() -> None:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert hub_names.docs_block() in text, (
        "README.md's hub-names list is stale: run `python -m vlmrobust.benchmarks.hub_names README.md`")
    for name in hub_names.all_names():
        assert f"`{name}`" in hub_names.docs_block()


def test_docs_name_only_the_modules_hub_ids() -> None:
    found = []
    for path in DOCS:
        text = path.read_text(encoding="utf-8", errors="replace")
        if "ORG/" in text:
            found.append(f"{path}: a placeholder ORG/ hub id")
        stray = [h for h in hub_names.hub_ids(text)
                 if h not in hub_names.all_names() and h not in PLACEHOLDERS]
        if stray:
            found.append(f"{path}: hub ids {stray} are not in benchmarks/hub_names.py")
    assert len(DOCS) > 100 and not found, found


def test_update_block_rewrites_only_the_block(tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text(f"before\n{hub_names.BEGIN}\nold list\n{hub_names.END}\nafter\n")
    assert hub_names.main([str(doc)]) == 0
    assert doc.read_text() == f"before\n{hub_names.docs_block()}\nafter\n"
    bare = tmp_path / "bare.md"
    bare.write_text("no block\n")
    assert hub_names.main([str(bare)]) == 1
    assert bare.read_text() == "no block\n"


def test_submit_page_lists_the_modules_names(tmp_path: Path) -> None:
    from tests.fixtures.submission import real_submissions
    from vlmrobust.leaderboard.site.publish import build_site

    subs, datasets = real_submissions(tmp_path, 1)
    build_site(subs, tmp_path / "site", datasets=datasets)
    page = (tmp_path / "site" / "submit.html").read_text()
    assert "DIR_OR_HUB_ID" not in page and f"<code>{hub_names.ORG}</code> is a placeholder" in page
    for name in [*hub_names.DATASET_REPOS.values(), hub_names.DETAILS_REPO]:
        assert f"<code>{name}</code>" in page
