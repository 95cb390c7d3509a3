"""The formulas of DESIGN.md "Metrics": small, typed, pure numpy functions.

One module per topic: :mod:`accuracy` (accuracy + bootstrap CI), :mod:`transforms`
(probit / logit), :mod:`effective_robustness` (baseline line fit, ER + CI),
:mod:`uncertainty` (softmax, normalised entropy S, calibration error C),
:mod:`ras` (ΔS, ΔC, ΔAcc, RAS, quadrants, transitions), :mod:`sensitivity`
(seed 003's test that RAS is more sensitive than ΔAcc), :mod:`aggregate`
(κ-weighted cell means), :mod:`calibration` (ECE, NLL, temperature scaling),
:mod:`classification` (top-1 / per-class accuracy, ECE, NLL and seed 001's
half-fitted temperature over a whole label space, chunked), :mod:`subsets`
(seeded per-item halves and K-class label sets).
Seed 004 failure discovery: :mod:`discovery` (question parsing, QVR, FDR,
Vendi score, prefix entropy, skills) and :mod:`discovery_reward` (Eq. 5 and
its memory banks).
Seed 001's other axes (issue #24): :mod:`ood_scores` (MSP, MCM, max-logit,
energy), :mod:`ood` (AUROC, FPR@95, class-mean AUROC, bootstrap CI),
:mod:`shape_bias` (cue-conflict shape bias) and :mod:`retrieval` (Recall@K).
κ itself lives in :mod:`vlmrobust.metrics.bench_c.kappa` (Bench-C selection).
"""
