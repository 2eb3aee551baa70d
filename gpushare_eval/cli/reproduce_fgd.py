"""Reproduce FGD's experiment (Weng et al., ATC'23, Fig. 9a) and print it beside the paper's.

Each pod list is shuffled with a seed and resampled until it asks for 130% of the
cluster's GPU capacity; the tasks are placed one by one, never leaving, a task that fits
nowhere failing for good; after each arrival the GPU allocation ratio and the
fragmentation ratio are recorded against the arrived workload (``baselines.openb.protocol``).
Six policies (random, dotprod, clustering, packing, bestfit, fgd), seeds 42, 43, ...

    gpushare-reproduce-fgd                               # default pod list, GPU nodes, 10 seeds
    gpushare-reproduce-fgd --pods openb_pod_list_gpushare40.csv openb_pod_list_cpu050.csv
    gpushare-reproduce-fgd --seeds 3 --policies fgd bestfit --out /tmp/fgd

Writes ``OUT/fgd.csv`` (columns ``workload, policy, seed, arrived_pct, allocated_pct,
frag_ratio_pct``: one row per pod list, policy, seed and integer arrived percentage
0-130), ``OUT/fgd_table.md`` (the printed table) and, with matplotlib installed,
``OUT/fgd_<pod list>.png`` (median allocation and fragmentation curves). Prints the
unallocated GPU share (100 - allocation) at 90-130% arrived, median over seeds, beside the
published medians (``gpushare_eval/cli/fgd_published.py``). Runs in a pool of ``--workers``
processes; a progress bar shows with tqdm installed. See docs/fgd.md.
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import sys
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

import numpy as np

from baselines.openb import POLICIES
from baselines.openb.protocol import (
    ARTIFACT_FIRST_SEED,
    TUNING_RATIO,
    Workload,
    discretize,
    load_workload,
    run_seed,
)
from gpushare_env.workloads.openb import (
    OpenbNode,
    read_openb_nodes,
    shipped_node_list_path,
    shipped_pod_list_path,
)
from gpushare_eval.cli.fgd_published import ARRIVED_POINTS, published_unallocated

#: Columns of ``fgd.csv``.
CSV_COLUMNS: tuple[str, ...] = (
    "workload",
    "policy",
    "seed",
    "arrived_pct",
    "allocated_pct",
    "frag_ratio_pct",
)

_STATE: dict[str, Any] = {}  # a worker's workloads and nodes (set once per process)


def main(argv: list[str] | None = None) -> int:
    """Run the experiment, write the outputs and print the table; 0 on success."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.seeds < 1:
        parser.error(f"--seeds: need at least 1 seed, got {args.seeds}")
    if args.workers < 1:
        parser.error(f"--workers: need at least 1 worker, got {args.workers}")
    if not 0 < args.tuning_ratio <= 10:
        parser.error(f"--tuning-ratio: must be in (0, 10], got {args.tuning_ratio}")
    try:
        nodes = read_openb_nodes(args.nodes)
        if not any(node.num_gpu for node in nodes):
            raise ValueError(f"{args.nodes}: the cluster has no GPU")
        workloads = [load_workload(path, nodes) for path in args.pods]
    except (OSError, ValueError) as error:
        parser.error(str(error))
    names = [workload.name for workload in workloads]
    if len(set(names)) != len(names):
        parser.error(f"--pods: two pod lists share a name: {names}")
    seeds = list(range(args.first_seed, args.first_seed + args.seeds))
    jobs = [
        (index, policy, seed)
        for index in range(len(workloads))
        for policy in args.policies
        for seed in seeds
    ]
    start = time.perf_counter()
    results = _run(jobs, workloads, nodes, args.tuning_ratio, args.workers)
    elapsed = time.perf_counter() - start

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    order = _job_order(names, args.policies)
    rows = [row for key in sorted(results, key=order) for row in results[key]]
    _write_csv(out / "fgd.csv", rows)
    table = markdown_tables(rows, args.policies, seeds)
    (out / "fgd_table.md").write_text(table + "\n", encoding="utf-8")
    print(table)
    plotted = [] if args.no_plot else _plot(rows, args.policies, out)
    print(f"({len(jobs)} runs in {elapsed:.1f} s; wrote {out / 'fgd.csv'}", end="")
    print("".join(f", {path}" for path in plotted) + ")")
    return 0


def markdown_tables(
    rows: Sequence[dict[str, Any]], policies: Sequence[str], seeds: Sequence[int]
) -> str:
    """Per pod list, the unallocated GPU % at :data:`ARRIVED_POINTS`: ours (published)."""
    blocks = []
    for workload in dict.fromkeys(row["workload"] for row in rows):
        header = "| policy | " + " | ".join(f"{point}%" for point in ARRIVED_POINTS) + " |"
        lines = [
            f"**{workload}**: unallocated GPU % (100 - allocation ratio) at each arrived"
            f" workload, median of {len(seeds)} seeds ({_seed_text(seeds)}); the paper's"
            " artifact (median of seeds 42-51) in brackets.",
            "",
            header,
            "|---" * (len(ARRIVED_POINTS) + 1) + "|",
        ]
        for policy in policies:
            ours = unallocated_medians(rows, workload, policy)
            published = published_unallocated(workload, policy)
            cells = [
                _cell(value, None if published is None else published[i])
                for i, value in enumerate(ours)
            ]
            lines.append(f"| {policy} | " + " | ".join(cells) + " |")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def unallocated_medians(rows: Iterable[dict[str, Any]], workload: str, policy: str) -> list[float]:
    """Median over seeds of 100 - allocation at each of :data:`ARRIVED_POINTS`."""
    by_point: dict[int, list[float]] = {point: [] for point in ARRIVED_POINTS}
    for row in rows:
        if (row["workload"], row["policy"]) != (workload, policy):
            continue
        if row["arrived_pct"] in by_point and not math.isnan(row["allocated_pct"]):
            by_point[row["arrived_pct"]].append(100 - row["allocated_pct"])
    return [
        round(float(np.median(values)), 2) if values else math.nan for values in by_point.values()
    ]


# -- running -----------------------------------------------------------------------------


def _run(
    jobs: list[tuple[int, str, int]],
    workloads: list[Workload],
    nodes: list[OpenbNode],
    tuning_ratio: float,
    workers: int,
) -> dict[tuple[str, str, int], list[dict[str, Any]]]:
    results: dict[tuple[str, str, int], list[dict[str, Any]]] = {}
    progress = _progress(len(jobs))
    if workers == 1:
        _init_worker(workloads, nodes, tuning_ratio)
        for job in jobs:
            key, rows = _run_job(job)
            results[key] = rows
            progress.update(1)
    else:
        with ProcessPoolExecutor(
            max_workers=workers,
            initializer=_init_worker,
            initargs=(workloads, nodes, tuning_ratio),
        ) as pool:
            futures: list[Future[Any]] = [pool.submit(_run_job, job) for job in jobs]
            for future in as_completed(futures):
                key, rows = future.result()
                results[key] = rows
                progress.update(1)
    progress.close()
    return results


def _init_worker(workloads: list[Workload], nodes: list[OpenbNode], tuning_ratio: float) -> None:
    _STATE.update(workloads=workloads, nodes=nodes, tuning_ratio=tuning_ratio)


def _run_job(job: tuple[int, str, int]) -> tuple[tuple[str, str, int], list[dict[str, Any]]]:
    index, policy, seed = job
    workload: Workload = _STATE["workloads"][index]
    ratio = _STATE["tuning_ratio"]
    run = run_seed(workload, _STATE["nodes"], policy, seed, tuning_ratio=ratio)
    rows = [
        {"workload": workload.name, "policy": policy, "seed": seed, **row}
        for row in discretize(run, ratio)
    ]
    return (workload.name, policy, seed), rows


class _NoProgress:
    def update(self, count: int) -> None:
        """Nothing to show."""

    def close(self) -> None:
        """Nothing to close."""


def _progress(total: int) -> Any:
    try:
        from tqdm import tqdm
    except ImportError:
        return _NoProgress()
    return tqdm(total=total, unit="run", desc="fgd", file=sys.stderr)


def _job_order(workloads: Sequence[str], policies: Sequence[str]) -> Any:
    """Sort key of a result: pod lists and policies in the order given, then seeds."""
    workload_rank = {name: i for i, name in enumerate(workloads)}
    policy_rank = {policy: i for i, policy in enumerate(policies)}
    return lambda key: (workload_rank[key[0]], policy_rank[key[1]], key[2])


# -- outputs -----------------------------------------------------------------------------


def _write_csv(path: Path, rows: Sequence[dict[str, Any]]) -> None:
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=CSV_COLUMNS)
        writer.writeheader()
        for row in rows:
            writer.writerow(
                {
                    key: "" if isinstance(row[key], float) and math.isnan(row[key]) else row[key]
                    for key in CSV_COLUMNS
                }
            )


def _plot(rows: Sequence[dict[str, Any]], policies: Sequence[str], out: Path) -> list[Path]:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(plots skipped: matplotlib is not installed; pip install 'gpushare-env[plot]')")
        return []
    paths = []
    for workload in dict.fromkeys(row["workload"] for row in rows):
        figure, (left, right) = plt.subplots(1, 2, figsize=(10, 4), constrained_layout=True)
        for policy in policies:
            curve = _median_curve(rows, workload, policy)
            arrived = sorted(curve)
            (line,) = left.plot(arrived, [curve[a][0] for a in arrived], label=policy)
            right.plot(arrived, [curve[a][1] for a in arrived], label=policy)
            published = published_unallocated(workload, policy)
            if published is not None:  # the paper's medians as crosses of the same colour
                left.plot(
                    ARRIVED_POINTS,
                    [100 - value for value in published],
                    linestyle="none",
                    marker="x",
                    color=line.get_color(),
                )
        left.plot([0, 100], [0, 100], color="grey", linestyle=":", linewidth=1)
        left.set(
            xlabel="arrived workload [% of GPU capacity]",
            ylabel="GPU allocation ratio [%]",
            title=f"{workload}: allocation (median of seeds; x: published)",
        )
        left.set_ylim(80, 100)
        left.set_xlim(80, 130)
        right.set(
            xlabel="arrived workload [% of GPU capacity]",
            ylabel="fragmentation ratio [% of free GPU]",
            title="fragmentation (median of seeds)",
        )
        left.legend(loc="lower right")
        left.grid(alpha=0.3)
        right.grid(alpha=0.3)
        path = out / f"fgd_{workload}.png"
        figure.savefig(path, dpi=110)
        plt.close(figure)
        paths.append(path)
    return paths


def _median_curve(
    rows: Iterable[dict[str, Any]], workload: str, policy: str
) -> dict[int, tuple[float, float]]:
    values: dict[int, tuple[list[float], list[float]]] = {}
    for row in rows:
        if row["workload"] == workload and row["policy"] == policy:
            allocation, fragment = values.setdefault(row["arrived_pct"], ([], []))
            allocation.append(row["allocated_pct"])
            fragment.append(row["frag_ratio_pct"])
    return {
        arrived: (float(np.nanmedian(allocation)), float(np.nanmedian(fragment)))
        for arrived, (allocation, fragment) in values.items()
        if not all(math.isnan(value) for value in allocation)
    }


def _cell(ours: float, published: float | None) -> str:
    text = "-" if math.isnan(ours) else f"{ours:.2f}"
    return text if published is None else f"{text} ({published:.2f})"


def _seed_text(seeds: Sequence[int]) -> str:
    return str(seeds[0]) if len(seeds) == 1 else f"{seeds[0]}-{seeds[-1]}"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gpushare-reproduce-fgd", description=__doc__.splitlines()[0]
    )
    parser.add_argument(
        "--pods",
        nargs="+",
        default=[str(shipped_pod_list_path())],
        metavar="FILE",
        help="openb_pod_list_*.csv files (default: the shipped openb_pod_list_default.csv)",
    )
    parser.add_argument(
        "--nodes",
        default=str(shipped_node_list_path()),
        metavar="FILE",
        help="an openb_node_list_*.csv (default: the shipped GPU nodes, alibaba_openb)",
    )
    parser.add_argument("--seeds", type=int, default=10, help="seeds per run (default 10)")
    parser.add_argument(
        "--first-seed",
        type=int,
        default=ARTIFACT_FIRST_SEED,
        help=f"the first seed (default {ARTIFACT_FIRST_SEED}, as the artifact)",
    )
    parser.add_argument(
        "--policies",
        nargs="+",
        default=list(POLICIES),
        choices=list(POLICIES),
        metavar="NAME",
        help=f"policies to run (default: all of {', '.join(POLICIES)})",
    )
    parser.add_argument(
        "--tuning-ratio",
        type=float,
        default=TUNING_RATIO,
        help=f"GPU requests as a multiple of the GPU capacity (default {TUNING_RATIO})",
    )
    parser.add_argument(
        "--out", default=os.path.join("runs", "fgd"), help="output folder (default runs/fgd)"
    )
    parser.add_argument(
        "--workers", type=int, default=2, help="worker processes (default 2; 1: in-process)"
    )
    parser.add_argument("--no-plot", action="store_true", help="do not draw the PNG plots")
    return parser


if __name__ == "__main__":
    sys.exit(main())
