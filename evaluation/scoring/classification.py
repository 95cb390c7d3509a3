"""Scoring a dataset of kind ``classification`` (issue 23; seeds 001 and 002).

Every config is scored on its own and says what its numbers are over
(``over``): ``label-space`` for a config whose logits (or text answers) range
over the whole label space (``n_classes`` classes), ``k-options`` for a
label-set-size config (``k`` candidate classes per row, seed 002 Fig. 2; or
ImageNet-D's 4 options). Per config:

- top-1 ``accuracy`` with its percentile bootstrap ``accuracy_ci`` (seeded per
  config), ``no_answer`` (text that names no class),
- ``accuracy_valid_labels`` on a full-label-space config whose rows list
  their ``valid_labels`` (ImageNet val's clean labels): the top class counts
  as right when it is any valid label of the image (ImageNet-ReaL's rule),
- on a full-label-space config whose rows name their perturbation set
  (``pmset``, ImageNet-Vid-Robust): ``anchors`` (the sets), ``benign_accuracy``
  (right on the anchor frame) and ``pmk_accuracy`` (right on every frame of the
  set; pm-10 on the release), a frame being right when the top class is any of
  its valid labels (vlmrobust.metrics.lines.perturbation_sets), each with a bootstrap
  CI over anchors (``benign_accuracy_ci``, ``pmk_accuracy_ci``): the frames of a
  set are near-copies of one image, so the set is the sampling unit,
- ``mean_per_class_accuracy`` over the classes that have rows, and
  ``n_classes_present``; the accuracy of every class is not in scores.json (a
  thousand numbers per config) but in the per-row results (each row's
  ``label`` and ``correct``) and in the leaderboard's per-class download,
- with logits: ``ece`` (15 equal-width bins, torchmetrics' binning) and ``nll``
  of softmax(z) over the config's label space or K options, and seed 001's
  temperature scaling (:func:`seed001_temperature`): ``temperature``,
  ``ece_ts``, ``nll_ts`` and ``ts_rows`` (the rows they were computed on), or
  ``ts_note`` saying why there are none. Without logits (text or
  ``prediction`` rows) there is accuracy only.
- on a config whose answers were read from generated text: ``text_rule`` (the
  rule ``accuracy`` is under: seed 002's ``inclusion`` of the class name, its
  Table 1), ``text_rules`` (the accuracy under every rule of
  vlmrobust.core.text.class_matcher.TEXT_RULES: inclusion or the strict matcher, with
  or without synonyms) and ``synonym_gain`` (inclusion with synonyms minus
  without: seed 002 Table 8's Δ).

Rows are held once: a config's logits are a view of the aligned array when
its rows are contiguous, and every full-label-space pass runs in chunks
(vlmrobust.metrics.classification), so 50,000 × 1,000 logits score in bounded
memory (tests/perf/test_classification_score_memory.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from vlmrobust.core.text.class_matcher import DEFAULT_TEXT_RULE, SYNONYMS_RULE
from vlmrobust.evaluation.predictions.truncation import partial_rows, undetermined_rows
from vlmrobust.evaluation.scoring.common import derived_seed, json_num
from vlmrobust.evaluation.scoring.config_rows import config_rows, perturbation_sets
from vlmrobust.metrics.accuracy import accuracy_ci
from vlmrobust.metrics.classification import (
    half_temperature,
    per_class_accuracy,
    score_logits,
)
from vlmrobust.metrics.lines.perturbation_sets import set_correctness

LABEL_SPACE = "label-space"
K_OPTIONS = "k-options"
# Seed 001 fits its one temperature on half of ImageNet val.
REFERENCE_VARIANT = "imagenet-val"
# manifest keys naming a build's protocol choices (builders/classification: class_names
# openai = the seeds' label texts; caltech_split seed-list = the seed's split)
PROTOCOL_KEYS = ("class_names", "caltech_split")
TS_PROTOCOL = ("seed 001: one temperature fitted on a seeded half of the reference config "
               "(ImageNet val, full label space), applied to its other half and to every "
               "full-label-space config of the same predictions")
NO_LOGITS = "no logits (text or predicted classes only): accuracy only"
K_CONFIG_TS = ("seed 001's temperature is fitted and applied over full label spaces; "
               "a K-option config has none")
TS_FIELDS = ("temperature", "ece_ts", "nll_ts", "ts_rows", "ts_note")


@dataclass(frozen=True)
class ConfigData:
    """One config's rows as scoring sees them.

    ``labels`` are class ids into the config's label space; ``answer`` and
    ``predicted`` are columns of ``logits`` (the class id on a full-label-space
    config, the candidate position on a K-option config; ``predicted`` −1 where
    a text names no class); ``k`` is None on a full-label-space config."""

    config: str
    ids: NDArray[np.object_]
    labels: NDArray[np.int64]
    answer: NDArray[np.int64]
    predicted: NDArray[np.int64]
    logits: NDArray[np.floating[Any]] | None
    n_classes: int
    k: int | None = None
    variant: str | None = None
    # per row the tuple of its valid class ids (Kisel et al.'s proposed labels), if known
    valid: NDArray[np.object_] | None = None
    # ImageNet-Vid-Robust: per row its perturbation set (the anchor frame) and whether it is the anchor
    pmset: NDArray[np.object_] | None = None
    anchor: NDArray[np.bool_] | None = None
    # rows read from generated text: per TextRule id, whether each row is right under it
    text_rules: Mapping[str, NDArray[np.bool_]] | None = None
    # rows whose options a server listed in full (calibration), and whose answer is
    # determined (accuracy); None: every row (evaluation/predictions/truncation.py)
    full: NDArray[np.bool_] | None = None
    determined: NDArray[np.bool_] | None = None

    def __post_init__(self) -> None:
        n = self.ids.shape
        for rule, col in (self.text_rules or {}).items():
            if col.shape != n:
                raise ValueError(f"{self.config}: text rule {rule} has shape {col.shape}, expected {n}")
        if (self.pmset is None) != (self.anchor is None):
            raise ValueError(f"{self.config}: pmset and anchor come together")
        for name in ("valid", "pmset", "anchor", "full", "determined"):
            col = getattr(self, name)
            if col is not None and col.shape != n:
                raise ValueError(f"{self.config}: {name} has shape {col.shape}, expected {n}")
        for name in ("labels", "answer", "predicted"):
            if getattr(self, name).shape != n:
                raise ValueError(f"{self.config}: {name} has shape {getattr(self, name).shape}, expected {n}")
        if self.n_classes < 1:
            raise ValueError(f"{self.config}: n_classes must be >= 1, got {self.n_classes}")
        if self.k is not None and not 1 <= self.k <= self.n_classes:
            raise ValueError(f"{self.config}: k must be in [1, {self.n_classes}], got {self.k}")
        width = self.n_classes if self.k is None else self.k
        if self.logits is not None and self.logits.shape != (n[0], width):
            raise ValueError(f"{self.config}: logits have shape {self.logits.shape}, expected ({n[0]}, {width})")
        if self.labels.size and not ((self.labels >= 0) & (self.labels < self.n_classes)).all():
            raise ValueError(f"{self.config}: labels must be class ids in [0, {self.n_classes})")

    @property
    def over(self) -> str:
        return LABEL_SPACE if self.k is None else K_OPTIONS

    @property
    def n(self) -> int:
        return int(self.ids.shape[0])


def config_scores(d: ConfigData, seed: int) -> dict[str, Any]:
    """The scores.json entry of one config, before temperature scaling (the
    ``TS_FIELDS`` are filled by :func:`apply_temperature`)."""
    correct = d.predicted == d.answer
    det = np.ones(d.n, dtype=bool) if d.determined is None else d.determined
    lo, hi = accuracy_ci(correct[det], seed=derived_seed(seed, "accuracy", d.config))
    # A row is right iff its predicted class is its label, so "label where right,
    # −1 elsewhere" gives per-class accuracy for full and K-option configs alike.
    per_class = per_class_accuracy(np.where(correct, d.labels, -1)[det], d.labels[det],
                                   d.n_classes)
    present = per_class[~np.isnan(per_class)]
    out: dict[str, Any] = {
        "n": d.n, "over": d.over, "n_classes": d.n_classes, "k": d.k, "variant": d.variant,
        "accuracy": json_num(correct[det].mean()) if det.any() else None,
        "accuracy_ci": [json_num(lo), json_num(hi)],
        "no_answer": int((d.predicted < 0).sum()),
        "mean_per_class_accuracy": json_num(present.mean()) if present.size else None,
        "n_classes_present": int(present.size),
    }
    if d.text_rules is not None and d.n:
        out.update(text_rule_scores(d.text_rules))
    if d.k is None and d.n:
        ok = valid_correct(d, correct)
        if d.valid is not None:
            out["accuracy_valid_labels"] = json_num(ok.mean())
        if d.pmset is not None:
            out.update(perturbation_set_scores(d, ok, seed))
    if d.full is not None or d.determined is not None:
        out.update(truncated_excluded=int(d.n - calibration_rows(d)[1].size),
                   undetermined_excluded=int(d.n - det.sum()))
    if d.logits is not None and d.n:
        s = score_logits(*calibration_rows(d))
        out.update(ece=json_num(s.ece), nll=json_num(s.nll))
    else:
        out.update(ece=None, nll=None)
    out.update(dict.fromkeys(TS_FIELDS))
    if d.logits is None:
        out["ts_note"] = NO_LOGITS
    elif d.k is not None:
        out["ts_note"] = K_CONFIG_TS
    return out


def calibration_rows(d: ConfigData) -> tuple[Any, NDArray[np.int64]]:
    """(logits, answers) of the rows whose options were all observed (a view
    when every row was)."""
    if d.full is None or d.full.all():
        return d.logits, d.answer
    return (None if d.logits is None else d.logits[d.full]), d.answer[d.full]


def text_rule_scores(correct_by_rule: Mapping[str, NDArray[np.bool_]]) -> dict[str, Any]:
    """``text_rule`` (the headline's), ``text_rules`` (accuracy per rule id) and
    ``synonym_gain`` = acc(inclusion+synonyms) − acc(inclusion), seed 002
    Table 8's "Improvement (Δ)".

    >>> r = text_rule_scores({"inclusion": np.array([1, 0, 0, 0], bool),
    ...                       "inclusion+synonyms": np.array([1, 1, 0, 0], bool)})
    >>> r["text_rule"], r["text_rules"]["inclusion+synonyms"], r["synonym_gain"]
    ('inclusion', 0.5, 0.25)
    """
    acc = {rule: json_num(np.asarray(c, dtype=bool).mean()) for rule, c in correct_by_rule.items()}
    base, syn = acc.get(DEFAULT_TEXT_RULE.id), acc.get(SYNONYMS_RULE.id)
    return {"text_rule": DEFAULT_TEXT_RULE.id, "text_rules": acc,
            "synonym_gain": json_num(syn - base) if base is not None and syn is not None else None}


def valid_correct(d: ConfigData, correct: NDArray[np.bool_]) -> NDArray[np.bool_]:
    """Per row of a full-label-space config: right when the top class is any of
    the image's valid labels (ImageNet-ReaL's rule; ImageNet-Vid-Robust's
    labels.json). Every build lists the label first among them and drops an
    image with none, so a row is never scored against a set without its label."""
    if d.valid is None:
        return correct
    return np.fromiter((p in v for p, v in zip(d.predicted.tolist(), d.valid.tolist(),
                                                strict=True)), dtype=bool, count=d.n)


def perturbation_set_scores(d: ConfigData, ok: NDArray[np.bool_], seed: int) -> dict[str, Any]:
    """ImageNet-Vid-Robust's benign and pm-k accuracy of a config whose rows name
    their perturbation set, from the per-row valid-label correctness ``ok``;
    the CIs resample anchors (one indicator per set), seeded per config."""
    assert d.pmset is not None and d.anchor is not None
    benign, pmk = set_correctness(ok, d.pmset, d.anchor)
    b_lo, b_hi = accuracy_ci(benign, seed=derived_seed(seed, "benign-accuracy", d.config))
    p_lo, p_hi = accuracy_ci(pmk, seed=derived_seed(seed, "pmk-accuracy", d.config))
    return {"anchors": int(benign.size),
            "benign_accuracy": json_num(benign.mean()), "benign_accuracy_ci": [json_num(b_lo), json_num(b_hi)],
            "pmk_accuracy": json_num(pmk.mean()), "pmk_accuracy_ci": [json_num(p_lo), json_num(p_hi)]}


def reference_config(configs: Sequence[ConfigData], name: str | None = None) -> ConfigData | None:
    """The config seed 001's temperature is fitted on: the one named ``name``
    (the manifest's ``reference_config``) or else the full-label-space config of
    variant ``imagenet-val`` (or named so); None when there is none or several."""
    full = [d for d in configs if d.k is None]
    if name is not None:
        found = [d for d in full if d.config == name]
    else:
        found = [d for d in full if d.variant == REFERENCE_VARIANT]
        if len(found) != 1:  # several val configs (or none with a variant): the one named so
            found = [d for d in full if d.config == REFERENCE_VARIANT]
    return found[0] if len(found) == 1 else None


def seed001_temperature(ref: ConfigData, seed: int) -> dict[str, Any]:
    """Seed 001's temperature: T* = argmin_T NLL on the seeded half
    split_half(n, derived_seed(seed, "temperature-half"), row ids)[0] of the
    reference config (:func:`~vlmrobust.metrics.classification.half_temperature`);
    the ``temperature`` block of the section, with the rows of each half."""
    assert ref.logits is not None
    ids = ref.ids if ref.full is None else ref.ids[ref.full]
    fit = half_temperature(*calibration_rows(ref), seed=derived_seed(seed, "temperature-half"),
                           keys=[str(i) for i in ids.tolist()])
    return {"protocol": TS_PROTOCOL, "reference_config": ref.config, "value": fit.temperature,
            "note": fit.reason, "fit_rows": int(fit.fit_rows.size),
            "held_out_rows": int(fit.held_out_rows.size),
            "_held_out": fit.held_out_rows}


def apply_temperature(configs: Sequence[ConfigData], scores: Mapping[str, dict[str, Any]],
                      block: Mapping[str, Any] | None, missing_note: str) -> None:
    """Fill ``temperature``, ``ece_ts``, ``nll_ts``, ``ts_rows`` of every
    full-label-space config with logits: on the reference config over its
    held-out half only (no row is scaled by a T it helped fit; its ``ece`` and
    ``nll`` stay over all its rows), on every other one over all its rows.
    ``block`` None (no reference config with logits) or a fit that is not
    estimable leave them null with ``ts_note``."""
    for d in configs:
        out = scores[d.config]
        if d.logits is None or d.k is not None or not d.n:
            continue
        if block is None or block["value"] is None:
            out["ts_note"] = missing_note if block is None else f"{block['note']} (on {block['reference_config']})"
            continue
        t = float(block["value"])
        z, y = calibration_rows(d)
        if d.config == block["reference_config"]:
            held = block["_held_out"]
            z, y = z[held], y[held]
        s = score_logits(z, y, temperature=t)
        out.update(temperature=t, ece_ts=json_num(s.ece), nll_ts=json_num(s.nll),
                   ts_rows=int(y.shape[0]), ts_note=None)


def classification_scores(configs: Sequence[ConfigData], seed: int,
                          reference: str | None = None) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """(per-config entries, the section's ``temperature`` block) for a
    classification dataset's configs (``reference``: the manifest's
    ``reference_config``, if it names one)."""
    scores = {d.config: config_scores(d, seed) for d in configs}
    ref = reference_config(configs, reference)
    block: dict[str, Any] | None = None
    if ref is not None and ref.logits is not None and ref.n:
        block = seed001_temperature(ref, seed)
    wanted = reference or REFERENCE_VARIANT
    missing = (f"not estimable: the reference config ({wanted}, full label space) is not scored "
               "in this predictions file; predict it together with the shifted configs"
               if ref is None else f"not estimable: the reference config {ref.config} has no logits")
    apply_temperature(configs, scores, block, missing)
    public = ({k: v for k, v in block.items() if not k.startswith("_")} if block is not None else
              {"protocol": TS_PROTOCOL, "reference_config": None if ref is None else ref.config,
               "value": None, "note": missing, "fit_rows": 0, "held_out_rows": 0})
    return scores, public


def configs_from_report(report: Any) -> list[ConfigData]:
    """A validated report of a classification dataset as :class:`ConfigData`,
    one per config. A config's label-space size is its label space's (the
    index's ``label_spaces``, else the manifest's ``label_spaces.<config>.n_classes``);
    rows with ``candidates`` (or fewer logits than classes) make a K-option
    config. Labels are the index's ``labels`` (else the answer: equal on a full
    label space)."""
    from vlmrobust.evaluation.scoring.text_answers import class_text_correct

    index = report.index
    aligned = report.aligned
    by_rule = class_text_correct(index, report.file, aligned.row_of)
    from_text = aligned.from_text
    held = getattr(index, "label_spaces", None) or {}
    recorded = index.manifest.get("label_spaces") or {}
    labels_all = getattr(index, "labels", None)
    candidates = getattr(index, "candidates", None)
    full = ~partial_rows(aligned.truncated, index.n_rows)
    det = ~undetermined_rows(aligned.truncated, index.n_options, from_text)
    out = []
    for name in index.configs:
        rows = config_rows(index.config, name)
        width = index.n_options[rows]
        k_max = int(width.max(initial=1))
        if width.size and int(width.min()) != k_max:
            raise ValueError(f"config {name}: rows have {int(width.min())} to {k_max} options; "
                             "a classification config has one label space or one K")
        record = recorded.get(name) if isinstance(recorded, Mapping) else None
        n_classes = (len(held[name]) if name in held
                     else int(record["n_classes"]) if isinstance(record, Mapping) else k_max)
        has_candidates = candidates is not None and any(len(c) for c in candidates[rows][:1])
        labels = labels_all[rows] if labels_all is not None else index.answer[rows]
        variants = (list(dict.fromkeys(index.columns["variant"][rows].tolist()))
                    if "variant" in index.columns else [])
        logits = aligned.logits[rows, :k_max] if aligned.logits is not None else None
        valid = index.columns["valid_labels"][rows] if "valid_labels" in index.columns else None
        pmset, anchor = perturbation_sets(index, rows, name)
        texts = None
        if by_rule is not None and from_text is not None and from_text[rows].any():
            # a row without text keeps its own answer under every rule
            own = aligned.predicted[rows] == index.answer[rows]
            texts = {rule: np.where(from_text[rows], c[rows], own) for rule, c in by_rule.items()}
        out.append(ConfigData(
            config=name, ids=index.ids[rows], labels=np.asarray(labels, dtype=np.int64),
            answer=index.answer[rows], predicted=aligned.predicted[rows], logits=logits,
            n_classes=n_classes, k=k_max if has_candidates or k_max != n_classes else None,
            variant=str(variants[0]) if len(variants) == 1 else None, valid=valid,
            pmset=pmset, anchor=anchor, text_rules=texts,
            full=None if aligned.truncated is None else full[rows],
            determined=None if aligned.truncated is None else det[rows]))
    return out


def classification_section(report: Any, seed: int) -> dict[str, Any]:
    """The kind-specific part of a classification dataset's scores.json section:
    ``kind``, ``configs``, the ``temperature`` block, ``reference_variant`` (for
    the leaderboard's effective-robustness line), ``label_spaces``
    ({config: {name, n_classes, sha256}} as the manifest records them) and
    ``dataset_protocol`` (the build's ``class_names`` and ``caltech_split``)."""
    manifest = report.index.manifest
    reference = manifest.get("reference_config")
    configs = configs_from_report(report)
    scores, block = classification_scores(configs, seed, reference if isinstance(reference, str) else None)
    ref = block["reference_config"]
    ref_variant = next((d.variant for d in configs if d.config == ref), None)
    spaces = manifest.get("label_spaces") or {}
    return {
        "kind": "classification",
        "reference_variant": ref_variant,
        "configs": scores,
        "temperature": block,
        "label_spaces": {c: {k: r.get(k) for k in ("name", "n_classes", "sha256")}
                         for c, r in spaces.items() if isinstance(r, Mapping) and c in scores},
        # the build's choices where the seeds set a rule (its card's Deviations section)
        "dataset_protocol": {k: manifest[k] for k in PROTOCOL_KEYS if k in manifest},
    }
