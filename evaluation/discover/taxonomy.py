"""``discover taxonomy``: seed 004's skill taxonomy, kept small.

1. **Skills per question** (valid questions, or failures only): a VLM/LLM
   through a backend (:data:`SKILL_PROMPT`, with the image; the reply's comma /
   line separated phrases, at most 5, lower-cased) or ``rule:planted``.
2. **Dedup**: distinct skills embedded with all-MiniLM-L6-v2; in order of
   frequency, each skill joins the first kept skill whose cosine is at least
   ``dedup_threshold`` (0.9), else is kept.
3. **Clustering** into meta-skills: BERTopic is not used (its UMAP/HDBSCAN
   stack is heavy and non-deterministic for the few hundred short phrases
   involved); instead average-linkage agglomerative clustering of the kept
   skills' embeddings under cosine distance (SciPy), cut into at most
   ``meta_skills`` clusters.
4. **Naming**: a model asked for a 2–4 word name of each cluster
   (:data:`NAME_PROMPT`), or by default the cluster's most frequent skill.

Writes ``records.jsonl`` (the input records with ``skills`` and ``meta_skill``
filled) and ``taxonomy.json`` in ``--out``.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from vlmrobust.core.discover_records import read_records, write_records
from vlmrobust.core.errors import VlmrobustError
from vlmrobust.core.files.owned import owned_directory
from vlmrobust.core.text.public_names import public_name
from vlmrobust.models.backends.base import GenerationConfig, Prompt

SKILL_PROMPT = ("Which visual skills does answering this question about the image need? "
                "Reply with 1 to 3 short noun phrases separated by commas (for example: "
                "counting, color recognition).\nQuestion: {question}\nSkills:")
NAME_PROMPT = ("These visual skills form one group: {skills}.\nGive the group a short name "
               "of 2 to 4 words.\nName:")
TAXONOMY = "discover taxonomy"
MAX_SKILLS = 5
MAX_SKILL_CHARS = 60


@dataclass(frozen=True)
class TaxonomyConfig:
    dedup_threshold: float = 0.9
    meta_skills: int = 8
    failures_only: bool = False

    def __post_init__(self) -> None:
        if not 0 < self.dedup_threshold <= 1 or self.meta_skills < 1:
            raise VlmrobustError("--dedup-threshold must be in (0, 1] and --meta-skills >= 1")


def parse_skills(reply: str) -> list[str]:
    """Skills from a tagger's reply.

    >>> parse_skills("Counting, Colour recognition\\n- spatial reasoning.")
    ['counting', 'colour recognition', 'spatial reasoning']
    """
    out: list[str] = []
    for part in re.split(r"[,;\n]", reply):
        s = re.sub(r"^[\s\-*•\d.)]+", "", part).strip().strip(".").strip().lower()
        if s and len(s) <= MAX_SKILL_CHARS and s not in out:
            out.append(s)
    return out[:MAX_SKILLS]


def dedup(skills: Sequence[str], counts: Counter[str], emb: np.ndarray,
          threshold: float) -> dict[str, str]:
    """skill -> its kept representative (frequency order, cosine >= threshold)."""
    order = sorted(range(len(skills)), key=lambda i: (-counts[skills[i]], skills[i]))
    kept: list[int] = []
    # the kept representatives' embeddings, filled in order: one matrix-vector
    # product per skill instead of a Python loop over the kept ones
    bank = np.empty((len(skills), emb.shape[1] if emb.ndim == 2 else 0), dtype=emb.dtype)
    out: dict[str, str] = {}
    for i in order:
        if kept:
            sims = bank[:len(kept)] @ emb[i]
            best = int(np.argmax(sims))
            if sims[best] >= threshold:
                out[skills[i]] = skills[kept[best]]
                continue
        bank[len(kept)] = emb[i]
        kept.append(i)
        out[skills[i]] = skills[i]
    return out


def cluster(emb: np.ndarray, n_clusters: int) -> list[int]:
    """Average-linkage agglomerative clusters under cosine distance (labels 0..)."""
    from scipy.cluster.hierarchy import fcluster, linkage

    if len(emb) == 1:
        return [0]
    z = linkage(emb, method="average", metric="cosine")
    labels = fcluster(z, t=min(n_clusters, len(emb)), criterion="maxclust")
    remap = {lab: i for i, lab in enumerate(dict.fromkeys(labels.tolist()))}
    return [remap[lab] for lab in labels.tolist()]


def _generator(name: str, url: str | None, api_key_env: str | None, device: str | None) -> Any:
    from vlmrobust.evaluation.discover.roles import load_backend

    return load_backend(name, endpoint_url=url, api_key_env=api_key_env, device=device)


def build_taxonomy(records_path: Path, out: Path, tagger: str, config: TaxonomyConfig, *,
                   tagger_url: str | None = None, namer: str | None = None,
                   namer_url: str | None = None, api_key_env: str | None = None,
                   device: str | None = None, embed: Any = None,
                   images: Path | None = None) -> dict[str, Any]:
    from vlmrobust.core.files.owned import check_owned_folder
    from vlmrobust.evaluation.discover.planted import tag_skills
    from vlmrobust.evaluation.discover.roles import model_folders

    check_owned_folder(out, "--out", TAXONOMY,
                       inputs=[records_path, images, *model_folders(tagger, namer)])
    records = read_records(records_path)
    todo = [i for i, r in enumerate(records)
            if r.valid and (r.failure or not config.failures_only)]
    if not todo:
        raise VlmrobustError(f"{records_path}: no valid question to tag")
    if tagger == "rule:planted":
        tags = [tag_skills(records[i].question) for i in todo]
    elif tagger.startswith(("vlm:", "endpoint:")):
        tags = _model_tags(records, todo, images, _generator(
            tagger, tagger_url, api_key_env, device))
    else:
        raise VlmrobustError(f"--tagger {tagger!r}: rule:planted, vlm:ID or endpoint:NAME")
    counts = Counter(s for t in tags for s in t)
    if not counts:
        raise VlmrobustError("the tagger returned no skill for any question")
    if embed is None:
        from vlmrobust.models.encoders.minilm import TextEmbedder, load_minilm

        embed = TextEmbedder(load_minilm(device))
    skills = sorted(counts)
    emb = np.asarray(embed(skills), dtype=np.float64)
    emb /= np.maximum(np.linalg.norm(emb, axis=1, keepdims=True), 1e-12)
    canon = dedup(skills, counts, emb, config.dedup_threshold)
    kept = sorted(set(canon.values()))
    kept_counts = Counter({k: sum(counts[s] for s in skills if canon[s] == k) for k in kept})
    labels = cluster(emb[[skills.index(k) for k in kept]], config.meta_skills)
    groups: dict[int, list[str]] = {}
    for k, lab in zip(kept, labels, strict=True):
        groups.setdefault(lab, []).append(k)
    names = _names(groups, kept_counts, namer, namer_url, api_key_env, device)
    meta_of = {k: names[lab] for lab, ks in groups.items() for k in ks}
    tagged = list(records)
    for i, t in zip(todo, tags, strict=True):
        sk = tuple(dict.fromkeys(canon[s] for s in t))
        tagged[i] = replace(records[i], skills=sk, meta_skill=meta_of[sk[0]] if sk else None)
    taxonomy = {
        "n_questions": len(todo), "n_skills": len(kept), "n_meta_skills": len(groups),
        "skills": {k: {"count": kept_counts[k], "meta_skill": meta_of[k],
                       "aliases": sorted(s for s in skills if canon[s] == k and s != k)}
                   for k in kept},
        "meta_skills": {names[lab]: sorted(ks) for lab, ks in groups.items()},
        # a local model folder is published as <name>@<hash>, never its path
        "tagger": public_name(tagger, None)[0],
        "namer": public_name(namer, None)[0] if namer else "most frequent skill",
        "clusterer": "average-linkage agglomerative, cosine, MiniLM embeddings (scipy)",
        "config": asdict(config)}
    with owned_directory(out, TAXONOMY) as tmp:
        write_records(tmp / "records.jsonl", tagged)
        (tmp / "taxonomy.json").write_text(json.dumps(taxonomy, indent=1, sort_keys=True) + "\n",
                                           encoding="utf-8")
    return taxonomy


def _model_tags(records: Sequence[Any], todo: Sequence[int], root: Path | None,
                backend: Any) -> list[list[str]]:
    """The tagger sees the image when ``root`` (the --images folder) has it."""
    from vlmrobust.evaluation.discover.images import ImageRef

    prompts = []
    for i in todo:
        r = records[i]
        path = None if root is None else root / r.image
        image = ImageRef(r.image, path).load()[0] if path is not None and path.is_file() \
            else None
        prompts.append(Prompt(text=SKILL_PROMPT.replace("{question}", str(r.question)),
                              image=image))
    replies = backend.generate(prompts, GenerationConfig(max_new_tokens=32))
    return [parse_skills(t) for t in replies]


def _names(groups: dict[int, list[str]], counts: Counter[str], namer: str | None,
           url: str | None, api_key_env: str | None, device: str | None) -> dict[int, str]:
    top = {lab: max(ks, key=lambda s: (counts[s], s)) for lab, ks in groups.items()}
    if namer is None:
        return top
    backend = _generator(namer, url, api_key_env, device)
    labs = sorted(groups)
    replies = backend.generate(
        [Prompt(text=NAME_PROMPT.replace("{skills}", ", ".join(sorted(groups[lab]))))
         for lab in labs], GenerationConfig(max_new_tokens=12))
    out: dict[int, str] = {}
    for lab, reply in zip(labs, replies, strict=True):
        name = " ".join(reply.strip().splitlines()[0].split()[:6]).strip(" .\"'") \
            if reply.strip() else ""
        # a name already taken (or empty) falls back to the cluster's top skill
        out[lab] = name if name and name not in out.values() else top[lab]
    return out
