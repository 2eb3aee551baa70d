"""Compare the simulator's analytic sharing model with Gavel's measured co-location pairs.

Usage, from the repository root (docs/interference.md)::

    python docs/interference_comparison.py --out docs/interference_measured_vs_analytic.png

The measurements are the shipped table (``gpushare_env/sim/data/gavel_colocation.json``,
from ``stanford-futuredata/gavel``); the analytic model is the engine's
``LinearContention``: two workers of intensities ``u_a``, ``u_b`` on one GPU each run at
``min(1, 1/(u_a + u_b)) * 0.95`` of solo speed. A pair's normalised throughputs are each
job's throughput when sharing over its solo throughput; their sum is the pair's combined
normalised throughput (below 1: sharing does less work than running the jobs one at a time).

Left panel: per-job normalised throughput, predicted against measured, for every catalog
pair under the mapping the ``"measured"`` interference setting uses (``CATALOG_PROXIES``:
the same architecture for resnet50, a proxy of the same compute class for the others);
large markers are the pair of exact matches (``CATALOG_TO_GAVEL``). Right panel: the
distribution of the measured combined normalised throughput over every pair of single-GPU
job types that could share the GPU (each unordered pair once), against the range the
analytic model gives the catalog's pairs. Prints the figures as Markdown tables.
"""

from __future__ import annotations

import argparse
import itertools
import sys
from dataclasses import dataclass

import numpy as np

from gpushare_env.sim.catalog import MODELS
from gpushare_env.sim.gavel import (
    CATALOG_PROXIES,
    CATALOG_TO_GAVEL,
    ColocationTable,
    load_colocation,
)
from gpushare_env.sim.interference import LinearContention

GPUS = ("k80", "p100", "v100")


@dataclass(frozen=True)
class MappedPair:
    """One pair of catalog models that has a measured counterpart, on one GPU type."""

    gpu: str
    models: tuple[str, str]
    predicted: float  # per-job factor of the analytic model (the same for both jobs)
    measured: tuple[float, float] | None  # normalised (own, partner); None: could not share
    exact: bool  # both models have a same-architecture match (not proxies)


def analytic_factor(u_a: float, u_b: float) -> float:
    """Per-job speed factor the engine gives two workers of these intensities on one GPU."""
    return LinearContention().factor(u_a + u_b, 2)


def catalog_pairs() -> list[tuple[str, str]]:
    """Every pair of catalog models, each unordered pair once (a model with itself too)."""
    return list(itertools.combinations_with_replacement(sorted(MODELS), 2))


def analytic_combined() -> dict[tuple[str, str], float]:
    """Combined normalised throughput the analytic model gives each catalog pair."""
    return {
        (a, b): 2 * analytic_factor(MODELS[a].intensity, MODELS[b].intensity)
        for a, b in catalog_pairs()
    }


def mapped_pairs(table: ColocationTable) -> list[MappedPair]:
    """Every catalog pair with its Gavel counterpart under ``CATALOG_PROXIES``, on each
    GPU type."""
    rows = []
    for gpu in GPUS:
        for a, b in itertools.combinations_with_replacement(sorted(CATALOG_PROXIES), 2):
            measured = table.normalised(gpu, CATALOG_PROXIES[a], CATALOG_PROXIES[b])
            rows.append(
                MappedPair(
                    gpu,
                    (a, b),
                    analytic_factor(MODELS[a].intensity, MODELS[b].intensity),
                    None if measured is None else (measured.own, measured.partner),
                    a in CATALOG_TO_GAVEL and b in CATALOG_TO_GAVEL,
                )
            )
    return rows


def measured_combined(table: ColocationTable, gpu: str) -> tuple[np.ndarray, int]:
    """Combined normalised throughputs of the pairs of ``gpu`` that could share (each
    unordered pair once), and the number of pairs that could not."""
    values, infeasible = [], 0
    for a, b in table.unordered_pairs(gpu):
        pair = table.normalised(gpu, a, b)
        if pair is None:
            infeasible += 1
        else:
            values.append(pair.combined)
    return np.asarray(values), infeasible


def measured_per_job(table: ColocationTable, gpu: str) -> np.ndarray:
    """Each job's normalised throughput in every pair of ``gpu`` that could share (ordered
    pairs: each job of a pair once)."""
    pairs = table.gpu_types[gpu].pairs
    values = []
    for a in pairs:
        for b in pairs[a]:
            pair = table.normalised(gpu, a, b)
            if pair is not None:
                values.append(pair.own)
    return np.asarray(values)


def _share(mask: np.ndarray) -> str:
    """A share as a percentage with one decimal."""
    return f"{100 * float(np.mean(mask)):.1f} %"


def print_tables(table: ColocationTable) -> dict[str, float]:
    """Print the Markdown tables; return the analytic range and the V100 mapped-pair error."""
    combined = analytic_combined()
    low, high = min(combined.values()), max(combined.values())
    factors = [v / 2 for v in combined.values()]
    print(
        f"Analytic model, {len(combined)} catalog pairs: combined {low:.3f} to {high:.3f}, "
        f"per job {min(factors):.3f} to {max(factors):.3f}.\n"
    )
    print(
        "| GPU | pairs that share | pairs that cannot (0/0) | median | p10 | p90 | min | max "
        f"| sharing loses (< 1) | below analytic min ({low:.2f}) "
        f"| above analytic max ({high:.2f}) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for gpu in GPUS:
        values, infeasible = measured_combined(table, gpu)
        p10, p50, p90 = np.percentile(values, [10, 50, 90])
        print(
            f"| {gpu} | {len(values)} | {infeasible} | {p50:.3f} | {p10:.3f} | {p90:.3f} "
            f"| {values.min():.3f} | {values.max():.3f} | {_share(values < 1)} "
            f"| {_share(values < low)} | {_share(values > high)} |"
        )
    per_low = min(factors)
    print(f"\n| GPU | per-job values | median | p10 | p90 | below analytic min ({per_low:.3f}) |")
    print("|---|---|---|---|---|---|")
    for gpu in GPUS:
        values = measured_per_job(table, gpu)
        p10, p50, p90 = np.percentile(values, [10, 50, 90])
        print(
            f"| {gpu} | {len(values)} | {p50:.3f} | {p10:.3f} | {p90:.3f} "
            f"| {_share(values < per_low)} |"
        )
    print(
        "\n| GPU | catalog pair | Gavel pair | match | predicted per job "
        "| measured (own, partner) |"
    )
    print("|---|---|---|---|---|---|")
    errors: dict[tuple[str, bool], list[float]] = {}
    for row in mapped_pairs(table):
        gavel = " + ".join(CATALOG_PROXIES[m] for m in row.models)
        if row.measured is None:
            text = "cannot share (0/0)"
        else:
            text = f"{row.measured[0]:.3f}, {row.measured[1]:.3f}"
            errors.setdefault((row.gpu, row.exact), []).extend(
                row.predicted - m for m in row.measured
            )
        print(
            f"| {row.gpu} | {' + '.join(row.models)} | {gavel} | "
            f"{'exact' if row.exact else 'proxy'} | {row.predicted:.3f} | {text} |"
        )
    print(
        "\n| GPU | match | per-job values | mean error (predicted - measured) "
        "| mean abs. error | max abs. error |"
    )
    print("|---|---|---|---|---|---|")
    figures = {"low": low, "high": high}
    for (gpu, exact), values in sorted(errors.items()):
        error = np.asarray(values)
        kind = "exact" if exact else "proxy"
        figures[f"{gpu}_{kind}_mae"] = float(np.mean(np.abs(error)))
        print(
            f"| {gpu} | {kind} | {len(error)} | {np.mean(error):+.3f} "
            f"| {np.mean(np.abs(error)):.3f} | {np.max(np.abs(error)):.3f} |"
        )
    return figures


def draw(table: ColocationTable, figures: dict[str, float], out: str) -> None:
    """Draw the two panels (module docstring) to ``out``."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11.5, 4.6))
    styles = {"v100": ("o", "C0", "full"), "p100": ("s", "C1", "none")}
    labelled: set[tuple[str, bool]] = set()
    for row in mapped_pairs(table):
        if row.measured is None or row.gpu not in styles:
            continue
        marker, colour, fill = styles[row.gpu]
        key = (row.gpu, row.exact)
        label = f"{row.gpu}, {'exact match' if row.exact else 'proxies'}"
        left.plot(
            [row.predicted] * 2,
            row.measured,
            marker=marker,
            color=colour,
            fillstyle=fill,
            linestyle="none",
            markersize=10 if row.exact else 5,
            alpha=1.0 if row.exact else 0.7,
            label=None if key in labelled else label,
        )
        labelled.add(key)
    left.plot([0, 1.05], [0, 1.05], color="grey", linewidth=1, label="y = x")
    left.set(
        xlim=(0, 1.05),
        ylim=(0, 1.05),
        xlabel="analytic model: predicted per-job normalised throughput",
        ylabel="Gavel: measured per-job normalised throughput",
        title="(a) catalog pairs: analytic against measured",
    )
    left.text(
        0.03,
        0.97,
        f"V100 mean abs. error: exact {figures['v100_exact_mae']:.3f}, "
        f"proxies {figures['v100_proxy_mae']:.3f}\n"
        f"P100: exact {figures['p100_exact_mae']:.3f}, proxies {figures['p100_proxy_mae']:.3f}\n"
        "exact: resnet50 + resnet50 (ResNet-50, batch 64)",
        transform=left.transAxes,
        va="top",
        fontsize=8.5,
    )
    left.legend(loc="lower right", fontsize=8.5)
    for gpu, colour in zip(GPUS, ("C2", "C1", "C0"), strict=True):
        values = np.sort(measured_combined(table, gpu)[0])
        cdf = np.arange(1, len(values) + 1) / len(values)
        right.step(
            values,
            cdf,
            where="post",
            color=colour,
            linewidth=2.2 if gpu == "v100" else 1.3,
            label=f"{gpu}, measured ({len(values)} pairs)",
        )
    right.axvspan(
        figures["low"], figures["high"], color="grey", alpha=0.18, label="analytic model range"
    )
    rug = sorted(set(round(v, 6) for v in analytic_combined().values()))
    right.plot(rug, [0.01] * len(rug), "|", color="black", markersize=12, label="catalog pairs")
    right.axvline(1.0, color="black", linestyle=":", linewidth=1)
    right.set(
        xlim=(0, 2.1),
        ylim=(0, 1.02),
        xlabel="combined normalised throughput of a pair (own + partner)",
        ylabel="share of pairs (CDF)",
        title="(b) all single-GPU pairs that can share",
    )
    right.legend(loc="upper left", fontsize=8.5)
    fig.suptitle("Gavel's measured co-location pairs vs the analytic sharing model", fontsize=11)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    """Print the tables and write the figure."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="PNG to write")
    args = parser.parse_args(argv)
    table = load_colocation()
    figures = print_tables(table)
    draw(table, figures, args.out)
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
