"""Is a rank difference real? Paired tests between adjacent models of every
overview column, on the questions both models answered (issue 22, items 7, 12).

Per column, models are ordered by the column's value (best first) and each one
is tested against the next:

- accuracy columns (ImageNet-MCQ variants, ImageWikiQA): McNemar's exact test
  on the shared questions decides; a paired bootstrap of the accuracy
  difference (same question draw for both models) gives its interval;
- Bench-C Acc, ΔAcc and RAS (κ-weighted means over cells): a paired bootstrap
  that redraws **source questions** with all their copies decides (McNemar is
  reported for Acc, but it treats the copies as independent);
- mean ER: a paired bootstrap of the ER difference over the shared questions of
  every (reference, shift) config, each model's accuracies redrawn with the same
  questions, against the reference line as fitted (the line is common to both
  models, so the test asks whether the two differ on that line).

Two neighbours are a *tie* when p ≥ 0.05: the site shows ties (ranks shared,
"≈" marks, the p-value on hover) and the downloads hold every test. Without
per-question answers (records not re-scored from predictions) there is no test.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from vlmrobust.evaluation.scoring.bench_c.stats import Pairing, pairing_for
from vlmrobust.leaderboard.board import BENCH_C, IMAGENET, IMAGEWIKIQA, REFERENCE, Leaderboard
from vlmrobust.leaderboard.fits import lines as fit
from vlmrobust.leaderboard.fits.bootstrap import seeded_rng
from vlmrobust.leaderboard.fits.pair_test import ALPHA, PairTest  # noqa: F401  (ALPHA: imported from here too)
from vlmrobust.leaderboard.submission import Submission
from vlmrobust.leaderboard.trust.evidence import DatasetEvidence
from vlmrobust.metrics.clustered import (
    cell_mean_replicates,
    cluster_ids,
    cluster_multiplicities,
    percentile_interval,
)
from vlmrobust.metrics.paired import bootstrap_p_value, mcnemar_exact

N_BOOT = 1000
LEVEL = 0.95
BENCH_C_COLUMNS = ("acc", "delta_acc", "ras")
MCNEMAR = "McNemar exact test"
BOOT_Q = "paired bootstrap over shared questions"
BOOT_CLUSTER = "paired bootstrap over shared source questions (copies kept together)"
BOOT_ER = "paired bootstrap of the ER difference over shared questions (line fixed)"


def _rows(ev: DatasetEvidence, configs: Sequence[str]) -> NDArray[np.int64]:
    return np.flatnonzero(np.isin(ev.index.config, list(configs)))


def _shared(a: DatasetEvidence, b: DatasetEvidence, configs: Sequence[str],
            ) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Rows of a and of b answering the same questions (matched by row id)."""
    ra, rb = _rows(a, configs), _rows(b, configs)
    if a.index is b.index:
        return ra, ra
    pos_b = {rid: i for i, rid in zip(rb.tolist(), b.index.ids[rb].tolist(), strict=True)}
    keep = [(i, pos_b[rid]) for i, rid in zip(ra.tolist(), a.index.ids[ra].tolist(), strict=True)
            if rid in pos_b]
    return (np.array([k[0] for k in keep], dtype=np.int64),
            np.array([k[1] for k in keep], dtype=np.int64))


def _seed(*parts: str) -> int:
    return int(seeded_rng(0, "pairwise", *parts).integers(0, 2**63 - 1))


def joint_accuracy_replicates(ca: NDArray[np.bool_], cb: NDArray[np.bool_], seed: int,
                              ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Bootstrap replicates of both models' accuracies on the same resampled
    questions. Resampling n paired outcomes with replacement draws the counts of
    the four (A right?, B right?) kinds from Multinomial(n, observed shares), so
    the n questions need not be indexed (ImageNet-scale configs stay O(B)).

    >>> a, b = joint_accuracy_replicates(np.array([1, 1, 0, 0], bool),
    ...                                  np.array([1, 0, 1, 0], bool), seed=0)
    >>> a.shape, bool(((a - b) >= -1).all())
    ((1000,), True)
    """
    n = ca.size
    kinds = np.array([(ca & cb).sum(), (ca & ~cb).sum(), (~ca & cb).sum(), (~ca & ~cb).sum()])
    counts = np.random.default_rng(seed).multinomial(n, kinds / n, size=N_BOOT)
    return ((counts[:, 0] + counts[:, 1]) / n).astype(np.float64), (
        (counts[:, 0] + counts[:, 2]) / n).astype(np.float64)


def accuracy_test(column: str, hi: str, lo: str, a: DatasetEvidence, b: DatasetEvidence,
                  configs: Sequence[str]) -> PairTest:
    """McNemar's exact test and a paired bootstrap on the shared questions."""
    ra, rb = _shared(a, b, configs)
    assert a.correct is not None and b.correct is not None
    ca, cb = a.correct[ra], b.correct[rb]
    n = int(ca.size)
    if n == 0:
        return PairTest(column, hi, lo, 0, None, None, None, MCNEMAR, note="no shared questions")
    acc_a, acc_b = joint_accuracy_replicates(ca, cb, _seed(column, hi, lo))
    rep = acc_a - acc_b
    mc = mcnemar_exact(ca, cb)
    return PairTest(column, hi, lo, n, float(ca.mean() - cb.mean()),
                    percentile_interval(rep, LEVEL), mc.p_value, MCNEMAR,
                    bootstrap_p_value(rep), mc)


def _pairing(index: Any) -> Pairing:
    return pairing_for(index)


def bench_c_test(metric: str, hi: str, lo: str, a: DatasetEvidence, b: DatasetEvidence,
                 ) -> PairTest:
    """The κ-weighted Bench-C aggregate difference, bootstrapped over shared source
    questions (the aggregate is linear in the per-pair values, so the difference of
    aggregates is the aggregate of the per-pair differences)."""
    column = f"bench-c:{metric}"
    pa, pb = _pairing(a.index), _pairing(b.index)
    if metric == "ras" and (a.ras is None or b.ras is None):
        return PairTest(column, hi, lo, 0, None, None, None, BOOT_CLUSTER,
                        note="RAS needs logits from both models")
    assert a.correct is not None and b.correct is not None
    va, vb = pa.values(a.correct), pb.values(b.correct)
    if a.ras is not None and b.ras is not None:
        va["ras"], vb["ras"] = a.ras, b.ras
    if a.index is b.index:
        ia = ib = np.arange(pa.d_rows.size)
    else:
        pos = {rid: i for i, rid in enumerate(b.index.ids[pb.d_rows].tolist())}
        keep = [(i, pos[r]) for i, r in enumerate(a.index.ids[pa.d_rows].tolist()) if r in pos]
        ia = np.array([k[0] for k in keep], dtype=np.int64)
        ib = np.array([k[1] for k in keep], dtype=np.int64)
    if ia.size == 0:
        return PairTest(column, hi, lo, 0, None, None, None, BOOT_CLUSTER,
                        note="no shared questions")
    d = va[metric][ia] - vb[metric][ib]
    if ia.size == pa.d_rows.size:  # every pair shared: the clusters are dense already
        clusters, q = pa.clusters, pa.n_clusters
    else:
        clusters, q = cluster_ids(pa.clusters[ia].tolist())
    w = cluster_multiplicities(q, N_BOOT, _seed(column, hi, lo))
    kappa, cells, n_cells = pa.kappa[ia], pa.cells[ia], len(pa.cell_keys)
    rep = cell_mean_replicates(d, kappa, cells, clusters, n_cells, w)
    point = float(cell_mean_replicates(d, kappa, cells, clusters, n_cells, np.ones((1, q)))[0])
    p = bootstrap_p_value(rep)
    mc = mcnemar_exact(va["acc"][ia] > 0, vb["acc"][ib] > 0) if metric == "acc" else None
    return PairTest(column, hi, lo, q, point, percentile_interval(rep, LEVEL), p, BOOT_CLUSTER,
                    p, mc)


def er_test(lb: Leaderboard, hi: str, lo: str, a: DatasetEvidence, b: DatasetEvidence,
            ) -> PairTest:
    """Mean-ER difference on the headline strategy's reference lines."""
    column = "er"
    st = lb.spec.headline_strategy
    fits = [f for f in lb.fits if f.kind == REFERENCE and f.strategy == st and f.line is not None]
    cfg = _configs_by_variant(lb, st)
    diffs: list[NDArray[np.float64]] = []
    points: list[float] = []
    n_total = 0
    for f in fits:
        if f.reference not in cfg or f.shift not in cfg:
            continue
        reps, accs = [], []
        for variant in (f.reference, f.shift):
            ra, rb = _shared(a, b, cfg[variant])
            if ra.size == 0:
                break
            assert a.correct is not None and b.correct is not None
            xa, xb = a.correct[ra], b.correct[rb]
            reps.append(joint_accuracy_replicates(xa, xb, _seed(column, hi, lo, variant)))
            accs.append((float(xa.mean()), float(xb.mean())))
            n_total += int(ra.size) if variant == f.shift else 0
        if len(reps) < 2:
            continue
        line = f.line
        assert line is not None

        def er(ref: Any, shift: Any, line: fit.LineFit = line) -> NDArray[np.float64]:
            return fit.effective_robustness(ref, shift, line.slope, line.intercept, line.transform)

        diffs.append(er(reps[0][0], reps[1][0]) - er(reps[0][1], reps[1][1]))
        points.append(float(er(accs[0][0], accs[1][0]) - er(accs[0][1], accs[1][1])))
    if not diffs:
        return PairTest(column, hi, lo, 0, None, None, None, BOOT_ER,
                        note="no shared questions on a shift with a reference line")
    rep = np.mean(np.vstack(diffs), axis=0)
    p = bootstrap_p_value(rep)
    return PairTest(column, hi, lo, n_total, float(np.mean(points)),
                    percentile_interval(rep, LEVEL), p, BOOT_ER, p)


def _configs_by_variant(lb: Leaderboard, strategy: str) -> dict[str, list[str]]:
    out: dict[str, set[str]] = {}
    for s in lb.submissions:
        d = s.datasets.get(IMAGENET)
        for c in d.configs if d is not None else ():
            if c.variant is not None and (c.strategy or "") == strategy:
                out.setdefault(c.variant, set()).add(c.config)
    return {v: sorted(cs) for v, cs in out.items()}


Column = tuple[str, str, Callable[[Submission], float | None]]


def columns(lb: Leaderboard) -> list[Column]:
    """(column key, dataset, value of a model) for every overview column."""
    rows = {r.model_id: r for r in lb.rows}

    def er(s: Submission) -> float | None:
        return rows[s.model_id].mean_er

    def variant(v: str) -> Callable[[Submission], float | None]:
        return lambda s: rows[s.model_id].imagenet.get(v)

    def bench_c(m: str) -> Callable[[Submission], float | None]:
        return lambda s: rows[s.model_id].benchc.get(m)

    def iwqa(s: Submission) -> float | None:
        return rows[s.model_id].iwqa

    out: list[Column] = [("er", IMAGENET, er)]
    out += [(f"imagenet-mcq:{v}", IMAGENET, variant(v)) for v in lb.variants]
    out += [(f"bench-c:{m}", BENCH_C, bench_c(m)) for m in BENCH_C_COLUMNS]
    out.append(("imagewikiqa", IMAGEWIKIQA, iwqa))
    return out


RANK_COLUMN = "er:rank"


def rank_tests(lb: Leaderboard) -> list[PairTest]:
    """The overview's ties: models in headline order; each is tested against the
    first model of the current group and joins the group (shares its rank) while
    within noise of it, else starts a new group. Testing against the group's
    first model, not the neighbour, keeps a chain of small steps from tying
    models far apart."""
    ranked = sorted(((r.mean_er, r.model_id) for r in lb.rows if r.mean_er is not None),
                    key=lambda vm: (-vm[0], vm[1]))
    by_id = {s.model_id: s for s in lb.submissions}
    out: list[PairTest] = []
    leader: str | None = None
    for _, m in ranked:
        if leader is None:
            leader = m
            continue
        a, b = by_id[leader].evidence.get(IMAGENET), by_id[m].evidence.get(IMAGENET)
        if a is None or b is None or a.correct is None or b.correct is None:
            t = PairTest(RANK_COLUMN, leader, m, 0, None, None, None, "",
                         note="no per-question answers (not re-scored)")
        else:
            t = dataclasses.replace(er_test(lb, leader, m, a, b), column=RANK_COLUMN)
        out.append(t)
        if not t.tie:
            leader = m
    return out


def adjacent_tests(lb: Leaderboard) -> list[PairTest]:
    """Every column's adjacent pairs, best first within a column."""
    out: list[PairTest] = []
    variant_cfg = _configs_by_variant(lb, lb.strategy)
    for key, dataset, value in columns(lb):
        ranked = sorted(((v, s) for s in lb.submissions if (v := value(s)) is not None),
                        key=lambda vs: (-vs[0], vs[1].model_id))
        for (_, s_hi), (_, s_lo) in itertools.pairwise(ranked):
            a, b = s_hi.evidence.get(dataset), s_lo.evidence.get(dataset)
            if a is None or b is None or a.correct is None or b.correct is None:
                out.append(PairTest(key, s_hi.model_id, s_lo.model_id, 0, None, None, None, "",
                                    note="no per-question answers (not re-scored)"))
                continue
            if key == "er":
                out.append(er_test(lb, s_hi.model_id, s_lo.model_id, a, b))
            elif dataset == BENCH_C:
                out.append(bench_c_test(key.split(":", 1)[1], s_hi.model_id, s_lo.model_id, a, b))
            elif dataset == IMAGENET:
                out.append(accuracy_test(key, s_hi.model_id, s_lo.model_id, a, b,
                                         variant_cfg.get(key.split(":", 1)[1], [])))
            else:
                cfgs = sorted(set(a.index.configs) | set(b.index.configs))
                out.append(accuracy_test(key, s_hi.model_id, s_lo.model_id, a, b, cfgs))
    return out + rank_tests(lb)
