"""The Bench-C dataset card (README.md body)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from vlmrobust.builders.bench_c.spec import BenchCSpec, SelectionSpec
from vlmrobust.builders.card_meta import common_sections
from vlmrobust.builders.corruptions.registry import GROUPS


def render_card(spec: BenchCSpec, selection: SelectionSpec, *,
                audit: Mapping[str, Mapping[str, Any]], threshold: float,
                top_pick: tuple[str, float, bool], n_picked: int, sources: Sequence[str],
                sample: bool) -> str:
    """``audit``: per "source/category" counts and κ means (audit.summary);
    ``top_pick``: (key, κ, selected) of the highest-κ candidate."""
    pool_n = sum(int(a["pool"]) for a in audit.values())
    zero = sum(int(a["zero_kappa"]) for a in audit.values())
    kept_n = sum(int(a["selected"]) for a in audit.values())
    pool_rule = (f"at most {selection.pool_per_source} per source (round-robin over its "
                 "categories)" if selection.pool_per_source else "")
    if selection.pool_per_category:
        pool_rule += (", " if pool_rule else "") + \
            f"at most {selection.pool_per_category} per (source, category)"
    if selection.pool_size:
        pool_rule += (", " if pool_rule else "") + \
            f"at most {selection.pool_size} in all (round-robin over the task types)"
    lines = [
        f"# {spec.name} v{spec.version}{' (embedded sample)' if sample else ''}",
        "",
        "Corruption robustness of vision-language models on discriminative questions "
        "(after *Benchmarking corruption robustness of LVLMs: a discriminative benchmark "
        "and robustness alignment metric*). Every selected source question appears "
        f"{1 + len(spec.corruptions) * len(spec.severities)} times: the clean copy "
        "(`corruption: none`, `severity: 0`) and each of "
        f"{len(spec.corruptions)} corruptions at severities "
        f"{', '.join(map(str, spec.severities))}, materialised as lossless PNG.",
        "",
        "## Columns",
        "",
        "`id`, `image`, `question`, `options`, `answer` (MCQ core) plus `source_id`, "
        "`source`, `category`, `corruption`, `severity`, `kappa` (and `option_class_ids` "
        "when every source has it).",
        "",
        "`corruption` is a `ClassLabel`: rows hold its index (`none` is 0), so compare "
        "with the feature's `str2int`, not with the name:",
        "",
        "```python",
        "from datasets import load_dataset",
        "ds = load_dataset(DIR, \"default\", split=\"test\")",
        "none = ds.features[\"corruption\"].str2int(\"none\")",
        "clean = ds.filter(lambda r: r[\"corruption\"] == none)",
        "fog3 = ds.filter(lambda r: ds.features[\"corruption\"].int2str(r[\"corruption\"]) == "
        "\"fog\" and r[\"severity\"] == 3)",
        "```",
        "",
        "## Corruptions",
        "",
        *[f"- {group}: " + ", ".join(f"`{c}`" for c in names if c in spec.corruptions)
          for group, names in GROUPS.items() if any(c in spec.corruptions for c in names)],
        "",
        "The paper's five categories: ImageNet-C's noise, blur, weather and digital groups, "
        "with the photometric changes (brightness, contrast, saturate) taken out of digital.",
        "",
        "ImageNet-C parameters as in `imagecorruptions` 1.1.2, computed by vlmrobust's "
        "own engine (`builders/corruptions`); every random draw is seeded from "
        "(seed, `source/source_id`, corruption, severity), so rebuilds are byte-identical.",
        "",
        "## Selection",
        "",
        f"- κ: per selector and corruption, the Gini impurity of the top-1 answers over the "
        f"severities, normalised by (1 − 1/K), averaged. Selectors: "
        f"{', '.join(f'`{s}`' for s in selection.selectors)}.",
        f"- Diversity D_s(q, A) = 2 − Σ_m cos(z_m(q), μ_m(A)) over image embeddings "
        f"(`{selection.image_embedder}`) and text embeddings (`{selection.text_embedder}`).",
        f"- Greedy on α₁κ + α₂D_s (α₁ = {selection.alpha_kappa}, α₂ = "
        f"{selection.alpha_diversity}) after dropping κ = 0, as the paper states it: the "
        "first pick (D_s = 2 against the empty set) is the highest-κ candidate and is always "
        "kept; later picks are kept when their pick-time score is above the mean of all "
        "pick-time scores"
        + (f"; at most {selection.max_questions} in pick order." if selection.max_questions
           else "."),
        f"- Pool: {pool_rule or 'every source question'}, chosen by a seeded hash order. "
        "A task type is a (source, value of the source's category column); the paper "
        "balances about 200 candidates per task type, about 4,000 in all (its 849 kept "
        "are ≈21.2% of them), but its own list of task types is not reproduced here. "
        f"{pool_n} candidates, {zero} with κ = 0, {n_picked} picked, {kept_n} selected "
        f"(mean pick score {threshold:.4f}). Highest κ: `{top_pick[0]}` (κ {top_pick[1]:.3f}, "
        f"{'selected' if top_pick[2] else 'not selected'}).",
        "",
        "`selection.parquet` (beside the data, not a config) lists every candidate: "
        "`source`, `source_id`, `category`, `kappa`, `pick_order`, `diversity`, `score`, "
        "`above_mean`, `selected`, and each selector's top-1 answer on each of the "
        f"{1 + len(spec.corruptions) * len(spec.severities)} copies (`answers:<selector>`, "
        "copy order in the file's metadata, clean first).",
        "",
        "| source/category | pool | κ = 0 | selected | mean κ (pool) | mean κ (selected) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for key, a in audit.items():
        ks = "—" if a["kappa_selected"] is None else f"{a['kappa_selected']:.3f}"
        lines.append(f"| {key} | {a['pool']} | {a['zero_kappa']} | {a['selected']} | "
                     f"{a['kappa_pool']:.3f} | {ks} |")
    lines += [
        "",
        "## Reported numbers",
        "",
        "`vlmrobust score` reports, per (corruption, severity) cell and per source category:",
        "",
        "- **plain** cell means over the cell's questions, as in the paper's per-cell tables "
        "(its Table 3 ΔAcc equals (WR − RW)/N in every row);",
        "- **κ-weighted** cell means Σ_q κ(q)·x(q) / Σ_q κ(q) and their mean over cells, the "
        "paper's Eq. 11 with the Σκ normaliser it omits (without it the value grows with the "
        "number of questions, while its Table 1 stays in [−1, 1]);",
        "- clean S⁽ᵒ⁾ and C⁽ᵒ⁾ next to the corrupted S⁽ᵈ⁾ and C⁽ᵈ⁾;",
        "- destructive RAS (questions right when clean: RR ∪ RW) and corrective RAS (wrong "
        "when clean: WR ∪ WW) in every cell;",
        "- the paper's sensitivity analysis (§6.2, Table 2): per corruption the mean |z| of RAS "
        "and of ΔAcc over each question's copies at adjacent severities ℓ = m → m + 1, and a "
        "one-sided paired t-test over the corruptions of H0: E[|z_RAS|] ≤ E[|z_ΔAcc|];",
        "- the paper's Table 3: the ℓ = 1 cells where a corruption raised accuracy, by the "
        "behaviour quadrant of the cell's mean ΔS and ΔC.",
        "",
        "## Deviations from the seed",
        "",
        "- κ-weighted means divide by Σκ (above); plain means are reported beside them.",
        "- The sensitivity analysis is our reading of a test the paper names without a "
        "formula: a pair's RAS and ΔAcc take severity m as the reference and m + 1 as the "
        "corrupted copy, z-scores are within a corruption over its pairs (ddof 1), and a "
        "corruption where a metric has no spread is left out of the test and listed. Its "
        "one-sided p = P(T_df ≥ t) reproduces Table 2's p from its t in all 13 rows.",
        "- `corruption_effect` in scores.json (two-sided t-tests of corrupted against clean "
        "copies) is not a seed analysis.",
        "- Random corruptions draw from seeded numpy Generators, not the global legacy "
        "stream. Gaussian and speckle noise draw each output byte from its exact "
        "distribution given the input byte (the law of the reference's float noise after its "
        "clip and truncation; spec version 1.1.0), shot and impulse noise likewise from "
        "their count and flip laws: the reference's distributions, another stream.",
        "",
        f"Sources: {', '.join(sources)}.",
        "",
    ]
    # Corrupted copies are derived images: each keeps its source benchmark's terms.
    licences = [(src, "as its source", "see the source dataset's card (for the embedded "
                 "sample: the imagenet-mcq sample's per-image licences)") for src in sources]
    return "\n".join(lines) + "\n" + common_sections("bench-c", licences=licences)
