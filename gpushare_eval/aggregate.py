"""Aggregate scores across workloads with their uncertainty (interval estimates).

One number per policy over several workloads (traces) and seeds, with a confidence
interval, as Agarwal et al. recommend for aggregate claims ("Deep Reinforcement Learning
at the Edge of the Statistical Precipice", NeurIPS 2021; their ``rliable`` package). The
few lines of numpy here do what ``rliable`` does for this case (it would bring arch,
seaborn and pandas with it):

* **score** of a run: its mean JCT over its own workload's lower bound (the jobs' mean
  solo duration, ``mean_solo_s``), so 1.0 is unbeatable and workloads of very different
  lengths share one scale;
* **geometric mean** of the scores of every run (traces x seeds); with the same seeds on
  every trace it is the geometric mean over the traces of each trace's geometric mean;
* **IQM**, the interquartile mean: the mean of the scores left once the lowest and the
  highest quarter are cut (``floor(n / 4)`` each, as ``scipy.stats.trim_mean(x, 0.25)``
  and ``rliable`` count), robust to one outlying trace;
* **probability of improvement** over a reference policy (``thesis``): per trace, the
  probability that a run of the policy has a lower score than a run of the reference
  (each pair of their runs compared, a tie counting one half: the Mann-Whitney U
  statistic over ``n * m``), averaged over the traces;
* **stratified bootstrap** intervals: each resample draws, trace by trace (the strata),
  as many seeds as the trace has, with replacement, and recomputes the statistic; the
  interval is the resamples' percentile interval. The seeds drawn for a trace are the
  same for the policy and the reference (their runs played the same seeded workloads).
  The traces themselves are fixed, as in ``rliable``: the interval is the uncertainty
  from the seeds, so with one seed per trace it shrinks to the point estimate.

Every random draw comes from the ``numpy.random.Generator`` passed in.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

__all__ = [
    "BOOTSTRAP_REPS",
    "BOOTSTRAP_SEED",
    "aggregate_scores",
    "geometric_mean",
    "interquartile_mean",
    "probability_of_improvement",
    "run_scores",
    "stratified_bootstrap_ci",
]

#: Bootstrap resamples of the summary's intervals.
BOOTSTRAP_REPS = 2000
#: Seed of the summary's bootstrap generator (the same rows give the same intervals).
BOOTSTRAP_SEED = 0

#: ``Scores``: score per workload (the stratum), then per seed.
Scores = Mapping[str, Mapping[int, float]]


def geometric_mean(values: np.ndarray) -> np.ndarray:
    """The geometric mean along the last axis (the values must be > 0).

    Args:
        values: Scores.  # (..., n)

    Returns:
        ``exp(mean(log(values)))`` over the last axis.  # (...)
    """
    return np.exp(np.mean(np.log(np.asarray(values, dtype=float)), axis=-1))


def interquartile_mean(values: np.ndarray) -> np.ndarray:
    """The interquartile mean along the last axis: ``floor(n / 4)`` values cut at each end.

    For ``n < 4`` nothing is cut (the plain mean), as ``scipy.stats.trim_mean`` does.

    Args:
        values: Scores.  # (..., n)

    Returns:
        The mean of the middle values of each row.  # (...)
    """
    ordered = np.sort(np.asarray(values, dtype=float), axis=-1)
    n = ordered.shape[-1]
    cut = n // 4
    return np.mean(ordered[..., cut : n - cut], axis=-1)


def _beats(policy: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """Share of (policy run, reference run) pairs where the policy's score is lower
    (ties count one half), along the last axes.

    Args:
        policy: Scores of the policy on one trace.  # (..., n)
        reference: Scores of the reference on it.  # (..., m)
    """
    x = np.asarray(policy, dtype=float)[..., :, None]
    y = np.asarray(reference, dtype=float)[..., None, :]
    wins = (x < y).astype(float) + 0.5 * (x == y)
    return np.mean(wins, axis=(-2, -1))


def probability_of_improvement(policy: Scores, reference: Scores) -> float:
    """P(a run of ``policy`` scores lower than a run of ``reference``), per trace, averaged.

    Args:
        policy: The policy's scores by workload and seed.
        reference: The reference's, on the same workloads.

    Returns:
        A probability in [0, 1]; 0.5 is a tie.
    """
    per_trace = [
        float(_beats(np.array(list(policy[w].values())), np.array(list(reference[w].values()))))
        for w in policy
    ]
    return float(np.mean(per_trace))


def _resampled_seeds(
    seeds: Mapping[str, Sequence[int]], reps: int, rng: np.random.Generator
) -> dict[str, np.ndarray]:
    """Per stratum, ``reps`` draws of its seeds with replacement.  # each (reps, n_w)"""
    drawn = {}
    for workload, own in seeds.items():
        picks = rng.integers(0, len(own), size=(reps, len(own)))
        drawn[workload] = np.asarray(own)[picks]
    return drawn


def stratified_bootstrap_ci(
    statistic: Callable[[Mapping[str, np.ndarray]], np.ndarray],
    seeds: Mapping[str, Sequence[int]],
    rng: np.random.Generator,
    *,
    reps: int = BOOTSTRAP_REPS,
    level: float = 0.95,
) -> tuple[float, float]:
    """The percentile interval of ``statistic`` over stratified bootstrap resamples.

    Args:
        statistic: From the resampled seeds of every stratum (``{workload: (reps, n_w)``
            seed array}) to one value per resample.  # (reps,)
        seeds: The seeds of each stratum (workload).
        rng: The generator of the resamples.
        reps: Resamples.
        level: Confidence level.

    Returns:
        ``(low, high)``: the ``(1 - level) / 2`` and ``(1 + level) / 2`` quantiles.
    """
    values = np.asarray(statistic(_resampled_seeds(seeds, reps, rng)), dtype=float)
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(values, [tail, 1.0 - tail])
    return float(low), float(high)


def run_scores(
    rows: Sequence[Mapping[str, Any]], complete: Callable[[Mapping[str, Any]], bool]
) -> dict[str, dict[str, dict[int, float | None]]]:
    """Each run's score, ``mean_jct_s / mean_solo_s``, by policy, workload and seed.

    Args:
        rows: ``runs.csv`` rows (``policy``, ``workload``, ``seed``, ``mean_jct_s`` and
            ``mean_solo_s``).
        complete: Whether a row's run is complete; an incomplete run's score is ``None``.

    Returns:
        ``{policy: {workload: {seed: score or None}}}``; rows without a lower bound are
        left out.
    """
    scores: dict[str, dict[str, dict[int, float | None]]] = {}
    for row in rows:
        solo = row.get("mean_solo_s")
        if solo in (None, "") or not float(solo) > 0:
            continue
        score = float(row["mean_jct_s"]) / float(solo) if complete(row) else None
        if score is not None and not (math.isfinite(score) and score > 0):
            score = None
        cell = scores.setdefault(str(row["policy"]), {}).setdefault(str(row["workload"]), {})
        cell[int(row["seed"])] = score
    return scores


def _interval(estimate: float, bounds: tuple[float, float]) -> dict[str, float]:
    return {"estimate": estimate, "ci_low": bounds[0], "ci_high": bounds[1]}


def aggregate_scores(
    scores: Mapping[str, Mapping[str, Mapping[int, float | None]]],
    *,
    reference: str | None = "thesis",
    rng: np.random.Generator,
    reps: int = BOOTSTRAP_REPS,
    level: float = 0.95,
) -> dict[str, Any] | None:
    """Per policy: geometric mean and IQM of its scores, and its probability of beating
    ``reference``, each with a stratified bootstrap interval (strata: the workloads).

    A policy counts only if it completed a run on every (workload, seed) that any policy
    has a score on; the others are listed in ``left_out`` with the reason. The policies
    are resampled with the same generator in order, so the intervals of one call depend
    on ``rng``'s seed and the policy order.

    Args:
        scores: :func:`run_scores`'s mapping.
        reference: Policy of the probability of improvement (absent or ``None``: none).
        rng: Generator of every resample.
        reps: Bootstrap resamples.
        level: Confidence level of the intervals.

    Returns:
        ``None`` when no policy has two scores; else ``{"level", "reps", "reference",
        "workloads", "seeds": {workload: [seed, ...]}, "policies": {policy: {"runs",
        "geometric_mean", "iqm", "p_beats_reference"}}, "left_out": {policy: reason}}``,
        each statistic ``{"estimate", "ci_low", "ci_high"}`` (``p_beats_reference``:
        ``None`` for the reference itself or without one).
    """
    if not scores:
        return None
    workloads = sorted({w for per in scores.values() for w in per}, key=_first_seen(scores))
    seeds = {w: sorted({s for per in scores.values() for s in per.get(w, {})}) for w in workloads}
    usable: dict[str, dict[str, dict[int, float]]] = {}
    left_out: dict[str, str] = {}
    for policy, per in scores.items():
        missing = [w for w in workloads if w not in per]
        if missing:
            left_out[policy] = "did not run " + ", ".join(missing)
            continue
        kept: dict[str, dict[int, float]] = {w: {} for w in workloads}
        incomplete = []
        for w in workloads:
            for s in seeds[w]:
                score = per[w].get(s)
                if score is None:
                    incomplete.append(f"{w} seed {s}")
                else:
                    kept[w][s] = float(score)
        if incomplete:
            left_out[policy] = "incomplete or missing runs: " + ", ".join(incomplete)
        else:
            usable[policy] = kept
    if not usable or sum(len(s) for s in seeds.values()) < 2:
        return None
    ref_scores = usable.get(reference) if reference is not None else None
    result: dict[str, Any] = {
        "level": level,
        "reps": reps,
        "reference": reference if ref_scores is not None else None,
        "workloads": workloads,
        "seeds": seeds,
        "policies": {},
        "left_out": left_out,
    }
    for policy, per in usable.items():
        pooled = np.array([per[w][s] for w in workloads for s in seeds[w]])

        def pooled_draws(
            drawn: Mapping[str, np.ndarray], own: Mapping[str, Mapping[int, float]] = per
        ) -> np.ndarray:
            """The resampled scores, every stratum side by side.  # (reps, n)"""
            return np.concatenate([_lookup(own[w], drawn[w]) for w in workloads], axis=1)

        entry: dict[str, Any] = {"runs": int(pooled.size)}
        entry["geometric_mean"] = _interval(
            float(geometric_mean(pooled)),
            stratified_bootstrap_ci(
                lambda d: geometric_mean(pooled_draws(d)), seeds, rng, reps=reps, level=level
            ),
        )
        entry["iqm"] = _interval(
            float(interquartile_mean(pooled)),
            stratified_bootstrap_ci(
                lambda d: interquartile_mean(pooled_draws(d)), seeds, rng, reps=reps, level=level
            ),
        )
        entry["p_beats_reference"] = None
        if ref_scores is not None and policy != reference:
            ref = ref_scores

            def improvement(
                drawn: Mapping[str, np.ndarray],
                own: Mapping[str, Mapping[int, float]] = per,
                ref: Mapping[str, Mapping[int, float]] = ref,
            ) -> np.ndarray:
                """P(beats the reference) of each resample (the same seeds for both)."""
                per_trace = [
                    _beats(_lookup(own[w], drawn[w]), _lookup(ref[w], drawn[w])) for w in workloads
                ]
                return np.mean(per_trace, axis=0)

            entry["p_beats_reference"] = _interval(
                probability_of_improvement(per, ref),
                stratified_bootstrap_ci(improvement, seeds, rng, reps=reps, level=level),
            )
        result["policies"][policy] = entry
    return result


def _lookup(by_seed: Mapping[int, float], seeds: np.ndarray) -> np.ndarray:
    """The scores of an array of seeds (same shape)."""
    keys = np.array(sorted(by_seed))
    values = np.array([by_seed[int(k)] for k in keys])
    return values[np.searchsorted(keys, seeds)]


def _first_seen(scores: Mapping[str, Mapping[str, Any]]) -> Callable[[str], int]:
    """Sort key: a workload's first appearance in ``scores`` (report order)."""
    order: dict[str, int] = {}
    for per in scores.values():
        for workload in per:
            order.setdefault(workload, len(order))
    return order.__getitem__
