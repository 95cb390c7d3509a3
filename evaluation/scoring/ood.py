"""Scoring an ood dataset (seed 001's OOD detection): the ``configs`` entries
and the ``ood`` block of a scores.json section, and the per-row results.

Scores (vlmrobust.metrics.holistic.ood_scores; higher = more in-distribution) come from
each row's logits over the label space:

- ``mcm`` for zero-shot CLIP (metadata ``family: clip`` not fine-tuned on
  ImageNet-1k: a CLIP fine-tuned on MSCOCO is still a zero-shot classifier of
  ImageNet): max softmax of cosine / τ, τ = 1, the cosines being the logits
  divided by CLIP's logit scale, which the predictions metadata records as
  ``logit_scale`` (the multiplier, e.g. 100; refused in one line when absent);
- ``msp`` (max softmax probability) for every other model: classifiers, CLIP
  fine-tuned on ImageNet-1k (``fine_tuned_on`` naming ``imagenet-1k``, alone or
  after another set: ``imagenet-12k+imagenet-1k``), VLMs over the logits any
  reader gives. Seed 001 §V: "for zero-shot CLIP models, we utilize maximum
  concept matching [15] to detect OOD data. For models that are trained or
  fine-tuned on ImageNet-1K, we employ maximum softmax score [88]";
- ``max_logit`` and ``energy`` (−E, T = 1) are reported beside them.

The headline score (``ood.score``) is MCM for CLIP and MSP otherwise, unless the
scorer is asked for another (``vlmrobust score --ood-score``: MCM only for a
``clip`` model, whose logits are scaled cosines). For every
OOD set (the ``ood_source`` of the OOD rows) against all scored ID rows:
AUROC (ID positive), FPR@95 and, where the set's rows name a class
(``ood_class``; NINCO, Textures), the class-mean AUROC, each headline number with a
two-sample percentile bootstrap CI (vlmrobust.metrics.holistic.ood); the other scores'
numbers are point estimates under ``by_score``. The headline means
(``mean_auroc``, ``mean_fpr95``) average the sets of seed 001 Table IV ("We
report averaged AUROC and FPR on NINCO, iNaturalist, DTD, Place, SUN") that the
build has, named in ``mean_sets``; ImageNet-O stays apart (its own entry under
``sets``). A build with none of the five averages its other sets, and
``mean_sets`` says which. ID configs also get top-1
accuracy over their ID rows. Logits are turned into scores a block of rows at
a time, so memory stays at a few blocks beyond the aligned logits.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from vlmrobust.core.errors import SubmissionError
from vlmrobust.evaluation.validate.check import ValidationReport
from vlmrobust.metrics.accuracy import accuracy, accuracy_ci
from vlmrobust.metrics.holistic.ood import (
    DEFAULT_TPR,
    auroc,
    class_mean_auroc,
    fpr_at_tpr,
    ood_bootstrap_ci,
)
from vlmrobust.metrics.holistic.ood_scores import clip_cosines, energy_score, max_logit, mcm, msp

SCORES = ("msp", "mcm", "max_logit", "energy")
#: Seed 001 Table IV's OOD sets (``textures`` is DTD); ImageNet-O is reported apart.
TABLE_IV_SETS = ("ninco", "inaturalist", "textures", "places", "sun")
APART_SETS = ("imagenet-o",)
#: The data set whose fine-tuning makes a CLIP an ImageNet classifier scored by MSP.
MSP_FINE_TUNING = "imagenet-1k"
BLOCK_ROWS = 4096
NOTE = ("OOD detection (seed 001): higher score = more in-distribution; ID rows are the "
        "positives. auroc/fpr95/class_mean_auroc use the headline score ('score': MCM for "
        "zero-shot CLIP, with the logit scale undone; MSP otherwise; or the one --ood-score "
        "chose), CIs from a two-sample "
        "percentile bootstrap; by_score repeats the point estimates for every score computed. "
        "mean_auroc/mean_fpr95 average the sets in mean_sets: seed 001 Table IV's NINCO, "
        "iNaturalist, DTD (textures), Places and SUN where the build has them; ImageNet-O apart.")


def tuned_on_imagenet_1k(fine_tuned_on: object) -> bool:
    """Whether a ``fine_tuned_on`` slug includes ImageNet-1k (``+`` joins stages).

    >>> [tuned_on_imagenet_1k(v) for v in ("imagenet-1k", "imagenet-12k+imagenet-1k", "mscoco", None)]
    [True, True, False, False]
    """
    return isinstance(fine_tuned_on, str) and MSP_FINE_TUNING in fine_tuned_on.split("+")


def headline_score(meta: Mapping[str, Any] | None) -> str:
    """``mcm`` for a zero-shot CLIP model (metadata ``family: clip``, not
    fine-tuned on ImageNet-1k), else ``msp`` (seed 001 §V: MSP "for models that
    are trained or fine-tuned on ImageNet-1K").

    >>> headline_score({"family": "clip"}), headline_score({"family": "classifier"}), headline_score(None)
    ('mcm', 'msp', 'msp')
    >>> headline_score({"family": "clip", "fine_tuned_on": "imagenet-1k"})
    'msp'
    >>> headline_score({"family": "clip", "fine_tuned_on": "mscoco"})  # still zero-shot on ImageNet
    'mcm'
    """
    if meta is None or meta.get("family") != "clip":
        return "msp"
    return "msp" if tuned_on_imagenet_1k(meta.get("fine_tuned_on")) else "mcm"


def headline_sets(names: list[str]) -> list[str]:
    """The sets the headline means average: seed 001 Table IV's among ``names``,
    else every set but ImageNet-O.

    >>> headline_sets(["imagenet-o", "inaturalist", "ninco", "sun"])
    ['ninco', 'inaturalist', 'sun']
    >>> headline_sets(["astronomy", "imagenet-o"])
    ['astronomy']
    """
    table = [n for n in TABLE_IV_SETS if n in names]
    return table or [n for n in names if n not in APART_SETS]


def chosen_score(meta: Mapping[str, Any] | None, requested: str | None, where: str) -> str:
    """The headline score: ``requested`` (``--ood-score``) when given, else
    :func:`headline_score`. MCM is refused for a model that is not ``clip``:
    its logits are not scaled cosines, so max softmax of cosine / τ has no meaning.

    >>> chosen_score({"family": "vlm"}, None, "p"), chosen_score({"family": "vlm"}, "energy", "p")
    ('msp', 'energy')
    """
    if requested is None:
        return headline_score(meta)
    if requested not in SCORES:
        raise SubmissionError(f"--ood-score {requested!r}: not an OOD score; choose one of "
                              f"{', '.join(SCORES)}")
    family = meta.get("family") if meta is not None else None
    if requested == "mcm" and family != "clip":
        raise SubmissionError(
            f"{where}: --ood-score mcm is zero-shot CLIP's score (max softmax of cosine / τ), "
            f"but the metadata names family {family!r}, whose logits are not CLIP's scaled "
            "cosines; use --ood-score msp (or max_logit, energy)")
    return requested


def logit_scale_of(meta: Mapping[str, Any] | None, where: str) -> float:
    """CLIP's logit scale from the predictions metadata, refused in one line when absent."""
    value = meta.get("logit_scale") if meta is not None else None
    if (isinstance(value, bool) or not isinstance(value, (int, float))
            or not (math.isfinite(value) and value > 0)):
        got = "no logit_scale" if value is None else f"logit_scale {value!r}"
        raise SubmissionError(
            f"{where}: the metadata of a clip model has {got}; MCM (zero-shot CLIP's OOD score) "
            "divides the logits by CLIP's logit scale to get cosines; predict again with "
            "`vlmrobust predict` (it records it), or add `logit_scale: <the model's "
            "logit_scale.exp(), e.g. 100.0>` to the metadata")
    return float(value)


def row_scores(logits: NDArray[np.float64], score_names: tuple[str, ...],
               logit_scale: float | None = None, where: str = "predictions",
               block: int = BLOCK_ROWS) -> dict[str, NDArray[np.float64]]:
    """Every named score of every row, ``block`` rows at a time."""
    out = {name: np.empty(logits.shape[0], dtype=np.float64) for name in score_names}
    for start in range(0, logits.shape[0], block):
        z = logits[start:start + block]
        for name in score_names:
            if name == "msp":
                v = msp(z)
            elif name == "max_logit":
                v = max_logit(z)
            elif name == "energy":
                v = energy_score(z)
            else:
                assert logit_scale is not None
                try:
                    v = mcm(clip_cosines(z, logit_scale))
                except ValueError as exc:
                    raise SubmissionError(f"{where}: {exc}; the metadata's logit_scale does not "
                                          "match these logits") from None
            out[name][start:start + block] = v
    return out


def _scores(report: ValidationReport, requested: str | None = None
            ) -> tuple[str, float | None, dict[str, NDArray[np.float64]]]:
    logits = report.aligned.logits
    if logits is None:  # validation refuses it for this kind; kept for in-memory callers
        raise SubmissionError(f"{report.predictions}: OOD scores need logits over the label space")
    head = chosen_score(report.meta, requested, str(report.predictions))
    # a zero-shot CLIP scored by another headline keeps MCM under by_score
    wants_mcm = head == "mcm" or (headline_score(report.meta) == "mcm" and report.meta is not None
                                  and report.meta.get("logit_scale") is not None)
    scale = logit_scale_of(report.meta, str(report.predictions)) if wants_mcm else None
    names = tuple(s for s in SCORES if s != "mcm" or scale is not None)
    return head, scale, row_scores(logits, names, scale, str(report.predictions))


def _num(x: float) -> float | None:
    return None if math.isnan(x) else float(x)


def _pair(ci: tuple[float, float]) -> list[float | None]:
    return [_num(ci[0]), _num(ci[1])]


def _set_block(id_s: dict[str, NDArray[np.float64]], ood_s: dict[str, NDArray[np.float64]],
               classes: NDArray[Any] | None, head: str, seed: int, source: str) -> dict[str, Any]:
    from vlmrobust.evaluation.scoring.common import derived_seed

    by_score: dict[str, Any] = {}
    for name in id_s:
        by_score[name] = {
            "auroc": auroc(id_s[name], ood_s[name]), "fpr95": fpr_at_tpr(id_s[name], ood_s[name]),
            "class_mean_auroc": (class_mean_auroc(id_s[name], ood_s[name], classes)
                                 if classes is not None else None)}
    x, y = id_s[head], ood_s[head]
    out: dict[str, Any] = {"n": int(y.size), **by_score[head]}
    out["auroc_ci"] = _pair(ood_bootstrap_ci(x, y, "auroc", seed=derived_seed(seed, "ood", source, "auroc")))
    out["fpr95_ci"] = _pair(ood_bootstrap_ci(x, y, "fpr", seed=derived_seed(seed, "ood", source, "fpr")))
    out["n_classes"] = int(np.unique(classes).size) if classes is not None else None
    out["class_mean_auroc_ci"] = (
        _pair(ood_bootstrap_ci(x, y, "class_mean_auroc", ood_classes=classes,
                               seed=derived_seed(seed, "ood", source, "class_mean")))
        if classes is not None else None)
    out["by_score"] = by_score
    return out


def ood_section(report: ValidationReport, seed: int, ood_score: str | None = None
                ) -> tuple[dict[str, Any], dict[str, Any]]:
    """(``configs``, ``{"ood": block}``) of the scores.json section of an ood dataset;
    ``ood_score`` names the headline score (default: :func:`headline_score`)."""
    from vlmrobust.evaluation.scoring.common import derived_seed

    index = report.index
    is_ood = np.asarray(index.columns["is_ood"], dtype=bool)
    correct = report.aligned.predicted == index.answer
    configs: dict[str, Any] = {}
    for config in index.configs:
        rows = np.flatnonzero((index.config == config) & ~is_ood)
        n_ood = int(((index.config == config) & is_ood).sum())
        entry: dict[str, Any] = {"n": int((index.config == config).sum()), "n_id": int(rows.size),
                                 "n_ood": n_ood, "accuracy": None, "accuracy_ci": [None, None],
                                 "no_answer": 0}
        if rows.size:
            lo, hi = accuracy_ci(correct[rows], seed=derived_seed(seed, "accuracy", config))
            entry.update(accuracy=_num(accuracy(correct[rows])), accuracy_ci=[_num(lo), _num(hi)])
        configs[config] = entry
    id_rows = np.flatnonzero(~is_ood)
    if is_ood.any() and not id_rows.size:
        raise SubmissionError(
            f"{report.predictions}: the scored configs ({', '.join(index.configs)}) hold no ID "
            "rows (is_ood false); OOD detection is measured against the ID set: score its "
            "config together with the OOD configs (drop --config)")
    head, scale, scores = _scores(report, ood_score)
    sources = index.columns["ood_source"]
    classes_col = index.columns["ood_class"]
    sets: dict[str, Any] = {}
    for source in sorted(set(sources[is_ood].tolist())):
        rows = np.flatnonzero(is_ood & (sources == source))
        named = classes_col[rows]
        classes = named if all(str(c) for c in named.tolist()) else None
        sets[str(source) or "ood"] = _set_block(
            {k: v[id_rows] for k, v in scores.items()}, {k: v[rows] for k, v in scores.items()},
            classes, head, seed, str(source))
    mean_sets = headline_sets(list(sets))
    block: dict[str, Any] = {
        "note": NOTE, "score": head, "scores": list(scores), "logit_scale": scale,
        "tpr": DEFAULT_TPR, "n_id": int(id_rows.size),
        "id_accuracy": _num(accuracy(correct[id_rows])) if id_rows.size else None,
        "mean_sets": mean_sets,
        "mean_auroc": _num(float(np.mean([sets[n]["auroc"] for n in mean_sets])))
        if mean_sets else None,
        "mean_fpr95": _num(float(np.mean([sets[n]["fpr95"] for n in mean_sets])))
        if mean_sets else None,
        "sets": sets,
    }
    return configs, {"ood": block}


def ood_score_report(report: ValidationReport, model_id: str | None, seed: int,
                     ood_score: str | None = None) -> dict[str, Any]:
    """scores.json content of an ood dataset: the section every kind has (dataset,
    predictions_sha256, has_logits, configs, ...) plus the ``ood`` block."""
    from vlmrobust.evaluation.scoring.common import dataset_entry, scores_document

    index = report.index
    manifest = index.manifest
    configs, extra = ood_section(report, seed, ood_score)
    section: dict[str, Any] = {
        "dataset": dataset_entry(index.name, manifest),
        "kind": "ood", "predictions_sha256": report.sha256, "has_logits": report.has_logits,
        "has_text": report.file.has_text, "no_answer": 0, "reference_variant": None,
        "configs": configs, "bench_c": None, **extra}
    if report.partial is not None:
        section["partial"] = dict(report.partial)
    return scores_document(index.name, section, model_id, report.meta)


def ood_row_results(report: ValidationReport, ood_score: str | None = None) -> list[dict[str, Any]]:
    """Per-row records of an ood dataset: ``id``, ``config``, ``is_ood``,
    ``ood_source``, ``ood_class``, ``answer`` (the label; null on OOD rows),
    ``predicted`` (arg-max class), ``correct`` (null on OOD rows), ``score`` (the
    headline score) and every score by name."""
    index = report.index
    head, _, scores = _scores(report, ood_score)
    is_ood = np.asarray(index.columns["is_ood"], dtype=bool)
    predicted = report.aligned.predicted
    records = []
    for i in range(index.n_rows):
        ood = bool(is_ood[i])
        rec: dict[str, Any] = {
            "id": index.ids[i], "config": index.config[i], "is_ood": ood,
            "ood_source": index.columns["ood_source"][i] or None,
            "ood_class": index.columns["ood_class"][i] or None,
            "answer": None if ood else int(index.answer[i]), "predicted": int(predicted[i]),
            "correct": None if ood else bool(predicted[i] == index.answer[i]),
            "score": float(scores[head][i])}
        rec.update({name: float(v[i]) for name, v in scores.items()})
        records.append(rec)
    return records
