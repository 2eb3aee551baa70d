"""Philly-derived distributions of job size, job length and inter-arrival gaps.

Sources:

* GPU-count mix and duration quantiles: Gavel's ``philly_job_distribution`` (Philly jobs
  that ran at least one hour on 1, 2, 4 or 8 GPUs; Jeon et al., "Analysis of Large-Scale
  Multi-Tenant GPU Clusters for DNN Training Workloads", USENIX ATC 2019); the workloads
  built from them: docs/model.md, *What is modelled*.
* Parametric alternative: Gavel's fit, GPUs 1/2/4/8 w.p. 0.70/0.10/0.15/0.05 and a
  duration of ``10**U(1.5, 3)`` minutes w.p. 0.8, else ``10**U(3, 4)`` minutes.
* Inter-arrival gaps: Philly's quantiles p10 1 s, p50 19 s, p75 19 min, p90 2 h.

Every length distribution is an inverse CDF sampled with one uniform draw per job, so a
cap on the upper tail (``max_quantile``) and the expected length are exact and cheap.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from statistics import NormalDist
from typing import Literal

import numpy as np

__all__ = [
    "DURATION_MODELS",
    "EMPIRICAL",
    "PARAMETRIC",
    "PHILLY_BURSTY",
    "PHILLY_DURATION_HOURS",
    "PHILLY_DURATION_QUANTILES",
    "PHILLY_GPU_MIX",
    "PHILLY_INTERARRIVAL_QUANTILES",
    "BurstyArrivals",
    "DurationModel",
    "LengthDistribution",
    "interval_arrivals",
    "poisson_arrivals",
]

DurationModel = Literal["empirical", "parametric"]

_HOUR = 3600.0  # [s]

#: Quantile levels of :data:`PHILLY_DURATION_HOURS`.
PHILLY_DURATION_QUANTILES: tuple[float, ...] = (
    0.0, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 1.0,
)  # fmt: skip

#: Philly job durations at those quantiles, per GPU count.  [h]
PHILLY_DURATION_HOURS: dict[int, tuple[float, ...]] = {
    1: (1.0, 1.11, 1.2, 1.5, 1.7, 2.38, 2.97, 4.03, 6.2, 12.29, 38.91, 106.3, 512.7, 1443.0),
    2: (1.02, 1.63, 3.61, 7.39, 12.33, 19.64, 28.24, 47.57, 72.18, 106.2, 162.3, 226.3, 501.5,
        1431.0),
    4: (1.0, 1.47, 2.17, 4.05, 6.83, 12.54, 19.88, 26.08, 40.26, 56.42, 110.3, 225.0, 569.6,
        1441.0),
    8: (1.0, 1.42, 2.07, 3.87, 5.68, 10.58, 17.94, 29.58, 48.84, 73.95, 149.2, 240.1, 614.0,
        1441.0),
}  # fmt: skip

#: Share of Philly jobs (>= 1 h) by GPU count.
PHILLY_GPU_MIX: dict[int, float] = {1: 0.762, 2: 0.02, 4: 0.093, 8: 0.125}

#: Gavel's parametric fit of the GPU count.
PARAMETRIC_GPU_MIX: dict[int, float] = {1: 0.70, 2: 0.10, 4: 0.15, 8: 0.05}

#: Philly inter-arrival gap quantiles.  {quantile: gap [s]}
PHILLY_INTERARRIVAL_QUANTILES: dict[float, float] = {0.1: 1.0, 0.5: 19.0, 0.75: 1140.0, 0.9: 7200.0}


def _mean_of_inverse_cdf(
    levels: np.ndarray, values: np.ndarray, max_quantile: float, log10: bool
) -> float:
    """Mean of ``X = F^-1(U)``, ``U ~ U(0, max_quantile)``, ``F^-1`` piecewise linear.

    With ``log10`` the inverse CDF is linear in ``log10(X)`` between the points instead.
    """
    area = 0.0
    for q0, q1, x0, x1 in zip(levels[:-1], levels[1:], values[:-1], values[1:], strict=True):
        if q0 >= max_quantile:
            break
        top = min(q1, max_quantile)
        x_top = x0 + (x1 - x0) * (top - q0) / (q1 - q0)
        if not log10:
            area += (top - q0) * (x0 + x_top) / 2.0
        else:
            l0, l1 = math.log10(x0), math.log10(x1)
            slope = (l1 - l0) / (q1 - q0)  # d log10(x) / dq
            l_top = l0 + slope * (top - q0)
            if slope == 0.0:
                area += (top - q0) * x0
            else:
                area += (10.0**l_top - 10.0**l0) / (slope * math.log(10.0))
    return area / max_quantile


@dataclass(frozen=True, eq=False)
class LengthDistribution:
    """Joint distribution of a job's GPU count and solo length, as inverse CDFs.

    The GPU count is drawn from ``gpu_mix``; the length, given the count, by interpolating
    ``durations_s[count]`` between the quantile ``levels`` at a uniform draw (linearly,
    or linearly in ``log10`` of the length when ``log10``).

    Attributes:
        name: ``"empirical"`` or ``"parametric"``.
        gpu_mix: Probability of each GPU count; sums to 1.
        levels: Quantile levels, increasing from 0 to 1.  (Q,)
        durations_s: Length at each level, per GPU count.  {count: (Q,) [s]}
        log10: Interpolate in ``log10`` of the length rather than in the length.
    """

    name: str
    gpu_mix: Mapping[int, float]
    levels: np.ndarray  # (Q,)
    durations_s: Mapping[int, np.ndarray]  # {count: (Q,) [s]}
    log10: bool = False

    def gpu_probabilities(self, max_gpus: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """GPU counts and their probabilities, conditioned on ``count <= max_gpus``.

        Raises:
            ValueError: No count is allowed.
        """
        counts = np.array(sorted(self.gpu_mix), dtype=np.int64)
        probs = np.array([self.gpu_mix[c] for c in counts.tolist()], dtype=np.float64)
        if max_gpus is not None:
            keep = counts <= max_gpus
            if not keep.any():
                raise ValueError(
                    f"max_gpus={max_gpus} excludes every GPU count of the {self.name} "
                    f"distribution ({counts.tolist()})"
                )
            counts, probs = counts[keep], probs[keep]
        return counts, probs / probs.sum()

    def sample_gpus(
        self, num_jobs: int, rng: np.random.Generator, max_gpus: int | None = None
    ) -> np.ndarray:
        """Draw ``num_jobs`` GPU counts (one uniform each).  (J,) int64"""
        counts, probs = self.gpu_probabilities(max_gpus)
        cumulative = np.cumsum(probs)
        cumulative[-1] = 1.0  # guard against rounding leaving u > cumulative[-1]
        index = np.searchsorted(cumulative, rng.random(num_jobs), side="right")
        return counts[np.minimum(index, counts.size - 1)]

    def sample_durations_s(
        self, num_gpus: np.ndarray, rng: np.random.Generator, max_quantile: float = 1.0
    ) -> np.ndarray:
        """Draw one length per job given its GPU count (one uniform each).  (J,) [s]

        Args:
            num_gpus: GPU counts, each a key of ``durations_s``.  (J,)
            rng: Generator for the uniforms.
            max_quantile: Draw from the distribution below this quantile only, in (0, 1];
                cuts the tail (Philly's longest jobs run for weeks).
        """
        uniforms = rng.random(size=int(num_gpus.shape[0])) * max_quantile
        durations = np.empty(num_gpus.shape[0], dtype=np.float64)
        for count, values in self.durations_s.items():
            mask = num_gpus == count
            if not mask.any():
                continue
            if self.log10:
                durations[mask] = 10.0 ** np.interp(uniforms[mask], self.levels, np.log10(values))
            else:
                durations[mask] = np.interp(uniforms[mask], self.levels, values)
        return durations

    def mean_duration_s(self, num_gpus: int, max_quantile: float = 1.0) -> float:
        """Expected length of a job of ``num_gpus`` GPUs.  [s]"""
        return _mean_of_inverse_cdf(
            self.levels, self.durations_s[num_gpus], max_quantile, self.log10
        )

    def mean_gpu_seconds(self, max_gpus: int | None = None, max_quantile: float = 1.0) -> float:
        """Expected ``num_gpus * duration`` of one job.  [GPU s]"""
        counts, probs = self.gpu_probabilities(max_gpus)
        return float(
            sum(
                p * c * self.mean_duration_s(c, max_quantile)
                for c, p in zip(counts.tolist(), probs.tolist(), strict=True)
            )
        )


#: Philly's empirical mix and per-GPU-count length quantiles, interpolated linearly.
EMPIRICAL = LengthDistribution(
    name="empirical",
    gpu_mix=PHILLY_GPU_MIX,
    levels=np.array(PHILLY_DURATION_QUANTILES),
    durations_s={c: np.array(h) * _HOUR for c, h in PHILLY_DURATION_HOURS.items()},
)

# Gavel's mixture "10**U(1.5, 3) minutes w.p. 0.8, else 10**U(3, 4)" has log10(minutes)
# uniform on [1.5, 3] with mass 0.8 and on [3, 4] with mass 0.2: its inverse CDF is linear
# in log10 between (0, 1.5), (0.8, 3) and (1, 4). Same distribution, one uniform per job.
_PARAMETRIC_S = 60.0 * 10.0 ** np.array([1.5, 3.0, 4.0])  # [s]

#: Gavel's parametric fit; the length does not depend on the GPU count.
PARAMETRIC = LengthDistribution(
    name="parametric",
    gpu_mix=PARAMETRIC_GPU_MIX,
    levels=np.array([0.0, 0.8, 1.0]),
    durations_s={c: _PARAMETRIC_S for c in PARAMETRIC_GPU_MIX},
    log10=True,
)

DURATION_MODELS: dict[str, LengthDistribution] = {"empirical": EMPIRICAL, "parametric": PARAMETRIC}


def interval_arrivals(num_jobs: int, interval_s: float) -> np.ndarray:
    """Arrivals every ``interval_s`` seconds from 0.  (J,) [s]"""
    return np.arange(num_jobs, dtype=np.float64) * interval_s


def poisson_arrivals(num_jobs: int, mean_gap_s: float, rng: np.random.Generator) -> np.ndarray:
    """Poisson arrivals with mean gap ``mean_gap_s``; the first job arrives at 0.  (J,) [s]"""
    gaps = rng.exponential(mean_gap_s, size=max(num_jobs - 1, 0))
    return np.concatenate(([0.0], np.cumsum(gaps)))[:num_jobs]


@dataclass(frozen=True, slots=True)
class BurstyArrivals:
    """A two-state Markov-modulated arrival process with Philly's gap quantiles.

    Gaps come in runs: a *burst* run of short gaps (a user submitting a sweep), then a
    *quiet* run of long ones. Run lengths are geometric, with means ``mean_burst_run``
    and ``mean_burst_run * (1 - burst_fraction) / burst_fraction`` gaps, so a fraction
    ``burst_fraction`` of all gaps is in bursts. Within a state gaps are log-normal. The
    marginal gap distribution is thus the mixture ``w * LN(mu_b, s_b) + (1 - w) *
    LN(mu_q, s_q)``, fitted (:meth:`fit`) to reproduce Philly's quantiles exactly; the
    runs add the burstiness (correlated gaps) that i.i.d. draws would lack.

    To reach a target load all gaps are multiplied by one factor, so the quantiles scale
    with it: they are Philly's own when the requested mean gap is :attr:`natural_mean_gap_s`.

    Attributes:
        burst_fraction: Share of gaps drawn in the burst state, in (0, 1).
        mean_burst_run: Mean number of consecutive burst gaps, >= 1.
        burst_mu: Mean of ``ln(gap)`` in the burst state.  [ln s]
        burst_sigma: Standard deviation of ``ln(gap)`` in the burst state.
        quiet_mu: Mean of ``ln(gap)`` in the quiet state.  [ln s]
        quiet_sigma: Standard deviation of ``ln(gap)`` in the quiet state.
    """

    burst_fraction: float
    mean_burst_run: float
    burst_mu: float
    burst_sigma: float
    quiet_mu: float
    quiet_sigma: float

    @classmethod
    def fit(
        cls,
        quantiles: Mapping[float, float],
        burst_fraction: float = 0.6,
        mean_burst_run: float = 8.0,
    ) -> BurstyArrivals:
        """Fit the two log-normals to four gap quantiles, two per state.

        The two lowest quantiles pin the burst state and the two highest the quiet one.
        Each state's parameters are solved in closed form, given the other state's share
        of the mixture CDF at those points; a few fixed-point rounds converge because the
        states barely overlap. ``burst_fraction`` (the one free parameter) must lie between
        the second and third quantile levels, here 0.5 and 0.75; 0.6 is the middle.
        """
        (q1, x1), (q2, x2), (q3, x3), (q4, x4) = sorted(quantiles.items())
        if not q2 < burst_fraction < q3:
            raise ValueError(f"burst_fraction must be in ({q2}, {q3}), got {burst_fraction}")
        w = burst_fraction
        standard = NormalDist()

        def solve(xa: float, fa: float, xb: float, fb: float) -> tuple[float, float]:
            za, zb = standard.inv_cdf(fa), standard.inv_cdf(fb)
            sigma = (math.log(xb) - math.log(xa)) / (zb - za)
            return math.log(xa) - sigma * za, sigma

        burst, quiet = (0.0, 1.0), (math.log(x4), 1.0)
        for _ in range(50):
            quiet_cdf = NormalDist(*quiet).cdf
            burst = solve(
                x1, (q1 - (1 - w) * quiet_cdf(math.log(x1))) / w,
                x2, (q2 - (1 - w) * quiet_cdf(math.log(x2))) / w,
            )  # fmt: skip
            burst_cdf = NormalDist(*burst).cdf
            quiet = solve(
                x3, (q3 - w * burst_cdf(math.log(x3))) / (1 - w),
                x4, (q4 - w * burst_cdf(math.log(x4))) / (1 - w),
            )  # fmt: skip
        return cls(w, mean_burst_run, burst[0], burst[1], quiet[0], quiet[1])

    @property
    def natural_mean_gap_s(self) -> float:
        """Mean gap before scaling.  [s]"""
        w = self.burst_fraction
        return w * math.exp(self.burst_mu + self.burst_sigma**2 / 2) + (1 - w) * math.exp(
            self.quiet_mu + self.quiet_sigma**2 / 2
        )

    def cdf(self, gap_s: float) -> float:
        """Marginal CDF of an unscaled gap."""
        log_gap = math.log(gap_s)
        w = self.burst_fraction
        return w * NormalDist(self.burst_mu, self.burst_sigma).cdf(log_gap) + (1 - w) * (
            NormalDist(self.quiet_mu, self.quiet_sigma).cdf(log_gap)
        )

    def sample_gaps(self, num_gaps: int, mean_gap_s: float, rng: np.random.Generator) -> np.ndarray:
        """Draw ``num_gaps`` consecutive gaps scaled to mean ``mean_gap_s``.  (num_gaps,) [s]"""
        if num_gaps <= 0:
            return np.zeros(0)
        w = self.burst_fraction
        mean_quiet_run = self.mean_burst_run * (1 - w) / w
        start_in_burst = bool(rng.random() < w)
        pairs = math.ceil(2 * num_gaps / (self.mean_burst_run + mean_quiet_run)) + 8
        while True:
            burst_runs = rng.geometric(min(1.0, 1.0 / self.mean_burst_run), size=pairs)
            quiet_runs = rng.geometric(min(1.0, 1.0 / mean_quiet_run), size=pairs)
            if burst_runs.sum() + quiet_runs.sum() >= num_gaps:
                break
            pairs *= 2  # practically never: the draw above has twice the mean needed
        first, second = (burst_runs, quiet_runs) if start_in_burst else (quiet_runs, burst_runs)
        run_lengths = np.column_stack((first, second)).ravel()
        run_is_burst = np.tile([start_in_burst, not start_in_burst], pairs)
        in_burst = np.repeat(run_is_burst, run_lengths)[:num_gaps]
        normals = rng.standard_normal(num_gaps)
        log_gaps = np.where(
            in_burst,
            self.burst_mu + self.burst_sigma * normals,
            self.quiet_mu + self.quiet_sigma * normals,
        )
        return np.exp(log_gaps) * (mean_gap_s / self.natural_mean_gap_s)

    def arrivals(self, num_jobs: int, mean_gap_s: float, rng: np.random.Generator) -> np.ndarray:
        """Arrival times with the first job at 0.  (J,) [s]"""
        gaps = self.sample_gaps(num_jobs - 1, mean_gap_s, rng)
        return np.concatenate(([0.0], np.cumsum(gaps)))[:num_jobs]


#: Bursty arrivals fitted to Philly's inter-arrival quantiles.
PHILLY_BURSTY = BurstyArrivals.fit(PHILLY_INTERARRIVAL_QUANTILES)
