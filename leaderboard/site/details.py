"""The leaderboard's per-row results as a Hugging Face dataset beside the site
(issue 37 item 1), as the Open LLM Leaderboard keeps its per-sample "details":
the site stays light whatever the size of the benchmarks, and researchers load
one model's rows on one dataset with ``load_dataset``, without vlmrobust::

    DETAILS/README.md        card: YAML ``configs:`` (one per model × dataset) + what the columns mean
    DETAILS/manifest.json    release version, fingerprint, rows per config, sample or not
    DETAILS/data/<model page stem>--<dataset>/test-00000-of-00001.parquet

    load_dataset(DETAILS, "<model>--<dataset>", split="test")

A config's rows are evaluation/scoring/rows/details.py's, recomputed from the
stored predictions while re-scoring (a submitted ``rows.jsonl`` is never read).
The folder is pushed as is to :data:`vlmrobust.benchmarks.hub_names.DETAILS_REPO`
by builders/hub.py's :func:`push_dataset` (tag ``v<release>``); the model pages
link each config's view there.
"""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from vlmrobust.benchmarks.hub_names import DATASET_REPOS, DETAILS_REPO
from vlmrobust.core.errors import VlmrobustError
from vlmrobust.leaderboard.board import Leaderboard
from vlmrobust.leaderboard.submission import Submission

SEP = "--"
SPEC_NAME = "leaderboard-details"
DETAILS_DIR = "details"


def details_config(model_id: str, dataset: str) -> str:
    """The config of one model's rows on one dataset.

    >>> details_config("efficientnet-lite0", "bench-c")
    'efficientnet-lite0--bench-c'
    """
    if not model_id or not dataset:
        raise ValueError(f"model {model_id!r} and dataset {dataset!r} must not be empty")
    return f"{model_id}{SEP}{dataset}"


def details_url(config: str, repo: str = DETAILS_REPO) -> str:
    """The hub page showing a config's rows."""
    return f"https://huggingface.co/datasets/{repo}/viewer/{config}"


def default_details_dir(site: Path) -> Path:
    """``details/`` beside the site folder."""
    return Path(site).parent / DETAILS_DIR


def _stem(lb: Leaderboard, model_id: str) -> str:
    # the page's stem: ids differing only in case get distinct folders (page_names)
    return lb.pages[model_id].rsplit("/", 1)[-1].removesuffix(".html")


def details_entries(lb: Leaderboard) -> list[tuple[str, str, str, bytes]]:
    """(config, data folder, dataset, parquet bytes) of every re-scored section,
    in model then dataset order (synthetic submissions have none)."""
    out = []
    seen: dict[str, tuple[str, str]] = {}
    for s in sorted(lb.submissions, key=lambda s: s.model_id):
        for key in sorted(s.evidence):
            data = s.evidence[key].details
            if data is None:
                continue
            config = details_config(s.model_id, key)
            other = seen.setdefault(config, (s.model_id, key))
            if other != (s.model_id, key):  # "a--b" on "c" and "a" on "b--c"
                raise VlmrobustError(
                    f"details config {config!r} would hold both model {other[0]!r} on "
                    f"{other[1]!r} and model {s.model_id!r} on {key!r}; rename one model id")
            out.append((config, f"{_stem(lb, s.model_id)}{SEP}{key}", key, data))
    return out


def details_links(s: Submission) -> dict[str, tuple[str, str]]:
    """dataset -> (details config, its hub page) of a model's re-scored sections
    (what the model page links)."""
    return {key: (c, details_url(c)) for key in sorted(s.evidence)
            if s.evidence[key].details is not None for c in [details_config(s.model_id, key)]}


def _num_rows(data: bytes) -> int:
    import pyarrow.parquet as pq

    return int(pq.ParquetFile(io.BytesIO(data)).metadata.num_rows)


def details_files(lb: Leaderboard, version: str) -> dict[str, bytes]:
    """Every file of the details folder (empty: nothing re-scored)."""
    from vlmrobust.core.writer import SPLIT, card_yaml

    entries = details_entries(lb)
    if not entries:
        return {}
    files: dict[str, bytes] = {}
    rows: dict[str, int] = {}
    digest = hashlib.sha256()
    for config, folder, _, data in entries:
        rel = f"data/{folder}/{SPLIT}-00000-of-00001.parquet"
        files[rel] = data
        rows[config] = _num_rows(data)
        digest.update(f"{config}\0{hashlib.sha256(data).hexdigest()}\n".encode())
    sample = any(d.sample for s in lb.submissions for d in s.datasets.values())
    used = sorted({key for _, _, key, _ in entries})
    header = card_yaml([c for c, _, _, _ in entries], _card_meta(used, sum(rows.values()), sample),
                       folders={c: f for c, f, _, _ in entries})
    files["README.md"] = (header + "\n" + details_card(used, version) + "\n").encode("utf-8")
    manifest = {"spec": {"name": SPEC_NAME, "version": version}, "hub_repo": DETAILS_REPO,
                "sample": sample, "fingerprint": digest.hexdigest(), "configs": rows}
    files["manifest.json"] = (json.dumps(manifest, indent=1, sort_keys=True) + "\n").encode()
    return files


def _card_meta(datasets: list[str], n_rows: int, sample: bool) -> Mapping[str, Any]:
    from vlmrobust.builders.card_meta import LICENSE_LINK, LICENSE_NAME, size_category

    return {"language": ["en"], "license": "other", "license_name": LICENSE_NAME,
            "license_link": LICENSE_LINK, "size_categories": [size_category(n_rows)],
            "source_datasets": [f"extended|{DATASET_REPOS.get(d, d)}" for d in datasets],
            "task_categories": ["visual-question-answering", "image-classification"],
            "pretty_name": "vlmrobust leaderboard details" + (" (embedded sample)" if sample else ""),
            "tags": ["robustness", "leaderboard", "vlmrobust"]}


def details_card(datasets: list[str], version: str) -> str:
    """The card's text (below its YAML header)."""
    return f"""# vlmrobust leaderboard: per-row details (release {version})

Per-row results of every model on the leaderboard, one config per model and dataset
(`<model>--<dataset>`; datasets here: {', '.join(datasets)}), recomputed from each
submission's stored predictions when the leaderboard was built.

```python
from datasets import load_dataset
rows = load_dataset("{DETAILS_REPO}", "<model>--<dataset>", split="test")
```

## Columns

- `id`, `config`: the dataset row and its config; `answer`: the right option's index
  (classification: in the config's label space, with `label`).
- `predicted` (null: the row's text answers no option), `correct`, `no_answer`,
  `from_text` (the answer was read from the text by the project's matcher),
  `confidence` (max softmax probability of the logits; null without logits).
- Bench-C corrupted rows: `clean_id` and their terms against the clean copy, `delta_acc`,
  `S`, `S_clean`, `delta_S`, `C`, `C_clean`, `delta_C`, `ras` (seed 003, Eq. 1-9).
- `logits`: the row's logits as submitted; the probabilities are their
  softmax. Null without logits, and for rows with more than 100 (a whole label space:
  they stay in the submission's predictions file).
- `text`: the model's raw output, where it gave one.
- The dataset's own columns the scorer reads (`variant`, `distractors`, `source`,
  `source_id`, `corruption`, `severity`, `kappa`, `category`, ...).

These are the records of the submission's `rows.jsonl`, with the same names and values,
plus `logits`, `text` and the dataset columns.

## Deviations from the seed

None in the numbers: they are the scorer's. Storage choices: one parquet file per
config, split `test`; label-space logits left out (above).

## Licence

Each config derives from a benchmark build and keeps that dataset's terms (see its card).
"""


def write_details(target: Path, files: Mapping[str, bytes], protected: list[Path | None]) -> None:
    """Swap ``files`` in as the details folder ``target`` (absent, empty, or a
    details folder holding only what a build writes; never one of ``protected``)."""
    from vlmrobust.core.files.atomic import atomic_directory
    from vlmrobust.core.files.output_guard import check_apart, check_dataset_output, dataset_carry

    check_apart(target, "--details", protected)
    check_dataset_output(target, "--details")
    with atomic_directory(target, carry=dataset_carry) as tmp:
        for rel, data in sorted(files.items()):
            path = tmp / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)


def publish_details(lb: Leaderboard, target: Path, version: str, protected: list[Path | None],
                    push: bool = False, hub_api: Any = None) -> dict[str, Any] | None:
    """Write (and push, when asked) the details dataset; its record for the release
    (None: no submission was re-scored, nothing written)."""
    files = details_files(lb, version)
    if not files:
        return None
    write_details(target, files, protected)
    manifest = json.loads(files["manifest.json"])
    tag = push_details(target, hub_api) if push else None
    return {"repo": DETAILS_REPO, "configs": len(manifest["configs"]),
            "fingerprint": manifest["fingerprint"], "hub_tag": tag}


def push_details(target: Path, api: Any = None, repo_id: str = DETAILS_REPO) -> str:
    """Upload the details folder to ``repo_id`` and tag it ``v<release>``
    (builders/hub.py; ``api`` a :class:`vlmrobust.builders.hub.HubApi`, default
    huggingface_hub's). Returns the tag."""
    from vlmrobust.builders.hub import push_dataset
    from vlmrobust.core.datadir import read_manifest

    if read_manifest(target).get("sample"):
        raise VlmrobustError(f"{target}: details of submissions on embedded-sample datasets are "
                             "not published; re-score the submissions on full builds first")
    return push_dataset(target, repo_id, api=api)
