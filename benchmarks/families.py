"""What each benchmark family measures and which seed paper it comes from: the
leaderboard's About page is rendered from this list (one place, so the site
describes every family it shows). Plain data, as :mod:`.citations`.

The seed papers (DESIGN.md): 000 "Does language training improve VLM
robustness?"; 001 "Toward a Holistic Evaluation of Robustness in CLIP Models";
002 "Why are Visually-Grounded Language Models Bad at Image Classification?";
003 "Benchmarking Corruption Robustness of LVLMs" (Bench-C, RAS); 004
"Discovering Failure Modes in Vision-Language Models using RL".
"""

from __future__ import annotations

from dataclasses import dataclass

from vlmrobust.benchmarks.citations import CITATIONS

# seed number -> the key of its entry in citations.CITATIONS
SEED_CITATIONS = {"000": "vlm_robustness_language_2025", "001": "tu2024holistic",
                  "002": "zhang2024why", "003": "sui2025benchc",
                  "004": "seed004_failure_modes_rl"}


@dataclass(frozen=True)
class Family:
    name: str   # the dataset name (benchmarks/<name>.yaml, a submission's dataset key)
    label: str
    kind: str   # the question kind (DESIGN.md "Question kinds")
    seeds: tuple[str, ...]
    measures: str

    def __post_init__(self) -> None:
        unknown = [s for s in self.seeds if s not in SEED_CITATIONS]
        if not self.seeds or unknown:
            raise ValueError(f"family {self.name}: seeds {list(self.seeds)} must name seeds "
                             f"among {sorted(SEED_CITATIONS)}")


FAMILIES: tuple[Family, ...] = (
    Family("imagenet-mcq", "ImageNet-MCQ", "mcq", ("000",),
           "natural distribution shift: 5-way questions over ImageNet and its shifted variants "
           "(V2, R, Sketch, ObjectNet, A) with cleaned labels and random, wordnet and visual "
           "distractors; effective robustness is the accuracy above the reference line"),
    Family("bench-c", "Bench-C", "mcq", ("003",),
           "corruption robustness: discriminative questions from six VLM benchmarks on the clean "
           "image and 19 corruptions × 5 severities; accuracy change and the Robustness "
           "Alignment Score (RAS) from the change in entropy and calibration error"),
    Family("imagewikiqa", "ImageWikiQA", "mcq", ("002",),
           "knowledge about the recognised object: 4-way questions about an ImageNet object that "
           "is never named, written from encyclopaedic sentences"),
    Family("classification", "Classification", "classification", ("001", "002"),
           "classification over whole label spaces (ImageNet and its variants, Flowers102, Cars, "
           "Caltech101, Vid-Robust, 3DCC): accuracy under shift, ImageNet-X factors, "
           "calibration, and VLMs read in the closed and open world"),
    Family("cue-conflict", "Cue-conflict", "classification", ("001",),
           "shape vs texture bias: images whose shape and texture show different classes; the "
           "share of decisions that follow the shape"),
    Family("ood", "OOD detection", "ood", ("001",),
           "out-of-distribution detection against ImageNet-1k: AUROC and FPR@95 of MSP, "
           "max-logit, energy and MCM scores"),
    Family("retrieval", "Retrieval", "retrieval", ("001",),
           "zero-shot image-text retrieval (Flickr30K, MSCOCO): recall@K in both directions "
           "from image and caption embeddings"),
    Family("failure-discovery", "Failure discovery", "mcq", ("004",),
           "failure modes an RL questioner found, asked again as multiple choice, with the "
           "questioner's records and verdicts in the open config"),
)

LABELS = {f.name: f.label for f in FAMILIES}


def seed_citation(seed: str) -> tuple[str, str]:
    """(title, url) of a seed paper.

    >>> seed_citation("003")[1]
    'https://arxiv.org/abs/2511.19032'
    """
    key = SEED_CITATIONS[seed]
    c = next(c for c in CITATIONS if c.key == key)
    return c.title, c.url
