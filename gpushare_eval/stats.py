"""Statistics for comparing policies over seeds: pure functions, no scipy needed.

Every function takes plain sequences of floats (one value per run) and returns floats or
small frozen dataclasses. Confidence intervals use Student's t distribution, computed
here from the regularised incomplete beta function (Numerical Recipes' continued
fraction, about 1e-12 accurate), so nothing here needs scipy. The evaluation harness and
the zoo cards both compute their intervals here; the tests compare them against a
published t table (and against scipy when it happens to be there).

Conventions:
    * The sample standard deviation uses ``n - 1`` degrees of freedom.
    * A statistic that is undefined (a CI from a single run, a ratio to a zero mean) is
      ``float("nan")``; NaN values in an input sample are dropped first.
    * Paired differences are ``policy - reference`` per matched run (same workload and
      seed), so a negative JCT difference means the policy is faster.

Example:
    >>> ci = mean_ci([10.0, 12.0, 14.0])
    >>> round(ci.mean, 3), round(ci.half_width, 3)
    (12.0, 4.968)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "MeanCI",
    "PairedDiff",
    "mean_ci",
    "paired_difference",
    "ratio_of_means",
    "t_cdf",
    "t_quantile",
]

_TINY = 1e-300


def _beta_continued_fraction(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz's method)."""
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    result = d
    for m in range(1, 1000):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > _TINY else _TINY)
        c = 1.0 + aa / c
        c = c if abs(c) > _TINY else _TINY
        result *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > _TINY else _TINY)
        c = 1.0 + aa / c
        c = c if abs(c) > _TINY else _TINY
        delta = d * c
        result *= delta
        if abs(delta - 1.0) < 1e-15:
            break
    return result


def _regularised_beta(a: float, b: float, x: float) -> float:
    """The regularised incomplete beta function ``I_x(a, b)`` for ``x`` in [0, 1]."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    front = math.exp(log_front)
    # The continued fraction converges fast for x < (a + 1) / (a + b + 2); use symmetry else.
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_continued_fraction(a, b, x) / a
    return 1.0 - front * _beta_continued_fraction(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    """Cumulative distribution function of Student's t with ``df`` degrees of freedom.

    Args:
        t: The point.
        df: Degrees of freedom, > 0.

    Returns:
        ``P(T <= t)``.

    Raises:
        ValueError: If ``df`` is not positive.
    """
    if not df > 0:
        raise ValueError(f"degrees of freedom must be > 0, got {df}")
    if math.isnan(t):
        return math.nan
    if math.isinf(t):
        return 1.0 if t > 0 else 0.0
    tail = 0.5 * _regularised_beta(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t > 0 else tail


def t_quantile(p: float, df: float) -> float:
    """Inverse CDF of Student's t: the ``t`` with ``P(T <= t) = p``.

    Solved by bisection on :func:`t_cdf` to about 1e-12 relative accuracy.

    Args:
        p: Probability in (0, 1); ``0.975`` gives the two-sided 95% critical value.
        df: Degrees of freedom, > 0.

    Returns:
        The quantile.

    Raises:
        ValueError: If ``p`` is outside (0, 1) or ``df`` is not positive.
    """
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must be in (0, 1), got {p}")
    if not df > 0:
        raise ValueError(f"degrees of freedom must be > 0, got {df}")
    if p == 0.5:
        return 0.0
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    low, high = 0.0, 1.0
    while t_cdf(high, df) < p:
        low, high = high, high * 2.0
    for _ in range(200):
        middle = 0.5 * (low + high)
        if t_cdf(middle, df) < p:
            low = middle
        else:
            high = middle
        if high - low <= 1e-13 * max(1.0, high):
            break
    return 0.5 * (low + high)


def _clean(values: Sequence[float]) -> list[float]:
    """The finite-or-infinite, non-NaN values as floats."""
    return [float(v) for v in values if not math.isnan(float(v))]


@dataclass(frozen=True, slots=True)
class MeanCI:
    """A sample mean with its two-sided Student-t confidence interval.

    Attributes:
        n: Sample size (NaNs dropped).
        mean: Sample mean; NaN if ``n == 0``.
        std: Sample standard deviation (``n - 1`` dof); NaN if ``n < 2``.
        half_width: ``t_{(1+level)/2, n-1} * std / sqrt(n)``; NaN if ``n < 2``.
        level: Confidence level, e.g. 0.95.
    """

    n: int
    mean: float
    std: float
    half_width: float
    level: float = 0.95

    @property
    def low(self) -> float:
        """Lower end of the interval."""
        return self.mean - self.half_width

    @property
    def high(self) -> float:
        """Upper end of the interval."""
        return self.mean + self.half_width


def mean_ci(values: Sequence[float], level: float = 0.95) -> MeanCI:
    """Mean and Student-t confidence interval of independent runs.

    Args:
        values: One value per run (NaNs are dropped).
        level: Confidence level in (0, 1).

    Returns:
        The :class:`MeanCI`.

    Raises:
        ValueError: If ``level`` is outside (0, 1).
    """
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level}")
    sample = _clean(values)
    n = len(sample)
    if n == 0:
        return MeanCI(0, math.nan, math.nan, math.nan, level)
    mean = math.fsum(sample) / n
    if n == 1:
        return MeanCI(1, mean, math.nan, math.nan, level)
    std = math.sqrt(math.fsum((v - mean) ** 2 for v in sample) / (n - 1))
    half_width = t_quantile(0.5 + level / 2.0, n - 1) * std / math.sqrt(n)
    return MeanCI(n, mean, std, half_width, level)


@dataclass(frozen=True, slots=True)
class PairedDiff:
    """Paired differences ``policy - reference`` over matched runs, with a paired t-test.

    Attributes:
        n: Number of pairs (pairs with a NaN on either side are dropped).
        mean: Mean difference.
        half_width: Student-t half-width of the mean difference (NaN if ``n < 2``).
        t_stat: ``mean / (std / sqrt(n))``; NaN if ``n < 2`` or every difference is equal
            and zero spread makes it undefined (0/0), +-inf if equal and non-zero.
        p_value: Two-sided p-value of ``H0: mean difference = 0``; NaN when ``t_stat`` is.
        reference_mean: Mean of the reference over the same pairs.
        level: Confidence level.
    """

    n: int
    mean: float
    half_width: float
    t_stat: float
    p_value: float
    reference_mean: float
    level: float = 0.95

    @property
    def low(self) -> float:
        """Lower end of the interval of the mean difference."""
        return self.mean - self.half_width

    @property
    def high(self) -> float:
        """Upper end of the interval of the mean difference."""
        return self.mean + self.half_width

    @property
    def relative(self) -> float:
        """Mean difference / reference mean (``-0.1`` = 10% lower); NaN if the mean is 0."""
        if self.reference_mean == 0 or math.isnan(self.reference_mean):
            return math.nan
        return self.mean / self.reference_mean

    @property
    def significant(self) -> bool:
        """True if the confidence interval excludes zero."""
        return not math.isnan(self.half_width) and (self.low > 0 or self.high < 0)


def paired_difference(
    values: Sequence[float], reference: Sequence[float], level: float = 0.95
) -> PairedDiff:
    """Paired differences ``values[i] - reference[i]`` with a paired t confidence interval.

    Args:
        values: The policy's value per matched run.
        reference: The reference policy's value on the same runs, in the same order.
        level: Confidence level in (0, 1).

    Returns:
        The :class:`PairedDiff`.

    Raises:
        ValueError: If the two sequences differ in length, or ``level`` is outside (0, 1).
    """
    if len(values) != len(reference):
        raise ValueError(
            f"paired samples must have equal length, got {len(values)} and {len(reference)}"
        )
    pairs = [
        (float(v), float(r))
        for v, r in zip(values, reference, strict=True)
        if not (math.isnan(float(v)) or math.isnan(float(r)))
    ]
    differences = [v - r for v, r in pairs]
    ci = mean_ci(differences, level)
    reference_mean = math.fsum(r for _, r in pairs) / len(pairs) if pairs else math.nan
    t_stat = p_value = math.nan
    if ci.n >= 2:
        standard_error = ci.std / math.sqrt(ci.n)
        if standard_error > 0:
            t_stat = ci.mean / standard_error
            p_value = 2.0 * (1.0 - t_cdf(abs(t_stat), ci.n - 1))
        elif ci.mean != 0:
            t_stat = math.copysign(math.inf, ci.mean)
            p_value = 0.0
    return PairedDiff(ci.n, ci.mean, ci.half_width, t_stat, p_value, reference_mean, level)


def ratio_of_means(values: Sequence[float], reference: Sequence[float]) -> float:
    """``mean(values) / mean(reference)``; NaN if either is empty or the reference mean is 0.

    Args:
        values: The policy's values (NaNs dropped).
        reference: The reference's values (NaNs dropped).

    Returns:
        The ratio of the two means.
    """
    a, b = _clean(values), _clean(reference)
    if not a or not b:
        return math.nan
    denominator = math.fsum(b) / len(b)
    if denominator == 0:
        return math.nan
    return (math.fsum(a) / len(a)) / denominator
