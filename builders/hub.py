"""Publishing a built dataset directory to the Hugging Face hub: upload the folder
as is (README card with YAML configs, parquet shards, manifest.json) and tag the
commit ``v<version>``. Real code; never exercised offline (tests use a fake API)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from vlmrobust.builders.card_meta import validate_card
from vlmrobust.core.datadir import read_manifest
from vlmrobust.core.errors import VlmrobustError
from vlmrobust.core.files.bounded import read_bytes_bounded


class HubApi(Protocol):  # the subset of huggingface_hub.HfApi used here
    def create_repo(self, repo_id: str, *, repo_type: str, private: bool, exist_ok: bool) -> Any: ...
    def upload_folder(self, *, repo_id: str, folder_path: str, repo_type: str,
                      commit_message: str) -> Any: ...
    def create_tag(self, repo_id: str, *, tag: str, repo_type: str, tag_message: str) -> Any: ...


def version_tag(version: str) -> str:
    """The hub tag of a spec version.

    >>> version_tag("1.0.0")
    'v1.0.0'
    """
    return f"v{version}"


MAX_CARD_BYTES = 4 * 1024 * 1024


def push_dataset(dataset_dir: Path, repo_id: str, *, private: bool = False,
                 api: HubApi | None = None) -> str:
    """Upload ``dataset_dir`` to ``repo_id`` (a dataset repo) and tag it
    ``v<spec version>``. Returns the tag. Refuses a directory without a manifest
    and a sample build (the embedded sample is not a publishable benchmark)."""
    manifest = read_manifest(dataset_dir)
    if manifest.get("sample"):
        raise VlmrobustError(
            f"{dataset_dir} was built from the embedded sample; build from real sources "
            "(--source-root) before publishing"
        )
    if "/" not in repo_id:
        raise VlmrobustError(f"hub repo id {repo_id!r} must look like 'org/name'")
    # The hub rejects (or silently mis-indexes) a card with a bad YAML header:
    # check it here, offline, before anything is uploaded.
    card = read_bytes_bounded(Path(dataset_dir) / "README.md", MAX_CARD_BYTES, "dataset card")
    try:
        validate_card(card.decode("utf-8"))
    except UnicodeDecodeError:
        raise VlmrobustError(f"{dataset_dir}/README.md: card is not UTF-8; "
                             "fix: rebuild the dataset with `vlmrobust build`") from None
    if api is None:
        from huggingface_hub import HfApi

        api = HfApi()
    version = str(manifest["spec"]["version"])
    tag = version_tag(version)
    api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
    api.upload_folder(
        repo_id=repo_id,
        folder_path=str(dataset_dir),
        repo_type="dataset",
        commit_message=f"{manifest['spec']['name']} {tag} (fingerprint {manifest['fingerprint'][:16]})",
    )
    api.create_tag(repo_id, tag=tag, repo_type="dataset",
                   tag_message=f"fingerprint {manifest['fingerprint']}")
    return tag
