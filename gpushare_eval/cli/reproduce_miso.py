"""Reproduce MISO's simulated evaluation (Li et al., SoCC 2022) and print it beside the
artifact's stored results.

The scenario: 8 A100-40GB GPUs, the 100 jobs of the artifact's ``trace_100_sc_old.json``
with their models and measured speeds per MIG profile, arrivals and checkpoint overheads
drawn as the artifact draws them (seed 9; ``gpushare_env.workloads.miso``). Each policy
runs two ways:

- ``artifact rules``: the artifact's 1 s time loop (``baselines.mig.artifact_loop``), with
  MISO's searches over its 18 partitions; all four policies;
- ``core``: this simulator's MIG model in continuous time (``sharing = "mig"``, NVIDIA's
  placement rules), the policies acting through its decisions (``baselines.mig``);
- ``core, step overheads``: the same with each restart charged what the artifact's 1 s
  step makes of it (``ceil(o) - 1`` s instead of ``o``).

    gpushare-reproduce-miso                 # the table, seed 9
    gpushare-reproduce-miso --seed 99 --out /tmp/miso

Writes ``OUT/miso.csv`` (policy, engine, average JCT, makespan), ``OUT/miso_table.md``
(the printed table) and, with matplotlib installed, ``OUT/miso_partitions_<policy>.png``:
each GPU's MIG partition over time, artifact rules above the core. See docs/mig.md.
"""

from __future__ import annotations

import argparse
import csv
import time
from pathlib import Path

import numpy as np

import baselines
from baselines.mig import run_artifact_loop
from gpushare_env.presets import MISO_SIMULATOR
from gpushare_env.runner import run_headless
from gpushare_env.sim import SimConfig, Simulator
from gpushare_env.sim.cluster import make_cluster
from gpushare_env.workloads.miso import (
    MISO_NUM_GPUS,
    MISO_SEED,
    MISO_STORED_AVG_JCT_S,
    miso_job_specs,
)
from gpushare_eval.plots import PartitionRow

__all__ = ["main", "run_core"]

#: The four policies, in the order of the paper's comparison.
ARTIFACT_POLICIES = ("mig_full", "mig_static", "miso", "mig_oracle")


#: The simulator's settings for MISO's scenario (the ``miso`` evaluation preset's).
MISO_SIM: dict[str, object] = dict(MISO_SIMULATOR)


def run_core(
    policy: str,
    seed: int = MISO_SEED,
    num_gpus: int = MISO_NUM_GPUS,
    restart: str = "drawn",
    partitions: list[PartitionRow] | None = None,
) -> tuple[float, float]:
    """``(average JCT, makespan)`` [s] of ``policy`` on the core's MIG model, each restart
    charged as ``restart`` says (``miso_job_specs``); each GPU's partition over time is
    appended to ``partitions`` when given."""
    cluster = make_cluster({"nodes": 1, "gpus_per_node": num_gpus, "gpu_type": "a100"})
    last: dict[int, tuple[tuple[int, ...], tuple[int | None, ...]]] = {}

    def record(sim: Simulator) -> None:
        for gpu in range(num_gpus):
            instances = sim.mig_instances(gpu)
            state = (
                tuple(int(inst.profile.split("g.", 1)[0]) for inst in instances),
                tuple(-1 if inst.mps else (inst.jobs or (None,))[0] for inst in instances),
            )
            if last.get(gpu) != state and partitions is not None:
                last[gpu] = state
                partitions.append((sim.now_s, gpu, *state))

    result = run_headless(
        miso_job_specs(seed, restart=restart),
        cluster,
        baselines.make(policy, sharing="mig"),
        SimConfig(**MISO_SIM),  # type: ignore[arg-type]
        rng=np.random.default_rng(seed),
        on_decision=record if partitions is not None else None,
    )
    jct = [r.finish_s - r.arrival_s for r in result.records]
    return float(np.mean(jct)), float(max(r.finish_s for r in result.records))


def _plots(panels: dict[str, dict[str, list[PartitionRow]]], end_s: float, out: Path) -> list[Path]:
    """One figure per policy: each GPU's partition over time, artifact rules and core."""
    try:
        import matplotlib  # noqa: F401

        from gpushare_eval.plots import plot_mig_partitions
    except ImportError:
        print("(plots skipped: matplotlib is not installed; pip install 'gpushare-env[plot]')")
        return []
    return [
        plot_mig_partitions(
            runs,
            MISO_NUM_GPUS,
            end_s,
            out / f"miso_partitions_{policy}.png",
            f"MISO's scenario: {policy}, each GPU's MIG partition over time",
        )
        for policy, runs in panels.items()
    ]


def main(argv: list[str] | None = None) -> int:
    """Run every policy both ways, write the outputs and print the table; 0 on success."""
    parser = argparse.ArgumentParser(
        prog="gpushare-reproduce-miso",
        description="MISO's simulated evaluation (SoCC'22) beside the artifact's results.",
    )
    parser.add_argument(
        "--seed", type=int, default=MISO_SEED, help="the artifact's seed (default 9)"
    )
    parser.add_argument("--out", type=Path, default=Path("out/miso"), help="output folder")
    args = parser.parse_args(argv)
    if args.seed < 0:
        parser.error(f"--seed: must be >= 0, got {args.seed}")
    rows = []
    start = time.perf_counter()
    panels: dict[str, dict[str, list[PartitionRow]]] = {}
    for policy in ARTIFACT_POLICIES:
        loop = run_artifact_loop(policy, args.seed)
        rows.append((policy, "artifact rules", loop.avg_jct_s, float(loop.makespan_s)))
        panels[policy] = {
            "artifact rules": [(e.time_s, e.gpu, e.partition, e.jobs) for e in loop.timeline]
        }
        for restart, engine in (("drawn", "core"), ("steps", "core, step overheads")):
            partitions: list[PartitionRow] | None = [] if restart == "drawn" else None
            jct, makespan = run_core(policy, args.seed, restart=restart, partitions=partitions)
            rows.append((policy, engine, jct, makespan))
            if partitions is not None:
                panels[policy][engine] = partitions
    elapsed = time.perf_counter() - start
    args.out.mkdir(parents=True, exist_ok=True)
    with open(args.out / "miso.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["policy", "engine", "avg_jct_s", "makespan_s"])
        writer.writerows((p, e, f"{j:.2f}", f"{m:.0f}") for p, e, j, m in rows)
    stored = MISO_STORED_AVG_JCT_S if args.seed == MISO_SEED else {}
    lines = [
        f"MISO's scenario, seed {args.seed}: average JCT [s]",
        "",
        "| policy | engine | avg JCT | stored (artifact) | gap |",
        "|---|---|---|---|---|",
    ]
    for policy, engine, jct, _ in rows:
        ref = stored.get(policy)
        gap = f"{100 * (jct / ref - 1):+.2f}%" if ref else "-"
        lines.append(
            f"| {policy} | {engine} | {jct:.2f} | {f'{ref:.2f}' if ref else '-'} | {gap} |"
        )
    table = "\n".join(lines)
    plots = _plots(panels, max(m for *_, m in rows), args.out)
    (args.out / "miso_table.md").write_text(table + "\n", encoding="utf-8")
    print(table)
    print(f"\n{len(rows)} runs in {elapsed:.1f} s; wrote {args.out}/miso.csv, miso_table.md")
    for path in plots:
        print(f"plot: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
