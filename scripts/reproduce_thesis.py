"""Reproduce the thesis experiment headless and print the markdown table.

All eight baselines on the ``thesis`` workload (100 jobs) on the ``thesis`` cluster
(4 nodes x 4 V100), seeds 0-2, jobs arriving one second apart and by a Poisson process;
per policy the mean over seeds of makespan, mean JCT and GPU utilisation, with the ratios
to ``fifo`` (the thesis's sequential scheduling without sharing); an extra row runs
``fifo`` one job at a time (``max_jobs=1``), the most literal reading of "sequential",
to show how much of the thesis's 4.1x / 3.6x comes from the baseline. Seeds follow
``GPUShare-v0``'s ``reset(seed=...)``, so the same episodes can be replayed in the env.

    python -m scripts.reproduce_thesis                 # the thesis grid, about a minute
    python -m scripts.reproduce_thesis --seeds 0 1 2 3 4 --policies fifo thesis
    python -m scripts.reproduce_thesis --env          # through GPUShare-v0 (windows of 16)
    python -m scripts.reproduce_thesis --interference measured   # Gavel's measured pairs
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

#: Label of the extra row: the literal sequential baseline, one job at a time.
SERIAL_LABEL = "fifo, 1 job at a time"


def main(argv: list[str] | None = None) -> int:
    """Run the grid and print the table (and the wall-clock time) to stdout."""
    import baselines
    from baselines.experiments import markdown_table, run_in_env, run_thesis_experiment
    from gpushare_env.sim import SimConfig
    from gpushare_env.sim.interference import INTERFERENCE_MODELS

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument(
        "--policies",
        nargs="+",
        default=baselines.available(),
        choices=baselines.available(),
        metavar="NAME",
        help=f"policies to run (default: all of {baselines.available()})",
    )
    parser.add_argument(
        "--no-serial",
        action="store_true",
        help="leave out the extra row of fifo running one job at a time (max_jobs=1)",
    )
    parser.add_argument(
        "--env",
        action="store_true",
        help="run through GPUShare-v0 and predict() (the env's 16-job windows apply)",
    )
    parser.add_argument(
        "--interference",
        choices=INTERFERENCE_MODELS,
        default="analytic",
        help="the sharing model (the simulator.interference setting; default analytic)",
    )
    args = parser.parse_args(argv)
    names = list(dict.fromkeys(["fifo", *args.policies]))  # ratios need fifo
    policies: dict[str, tuple[str, dict[str, Any]]] = {name: (name, {}) for name in names}
    if not args.no_serial:
        policies[SERIAL_LABEL] = ("fifo", {"max_jobs": 1})
    start = time.perf_counter()
    if args.env:
        config = {"simulator": {"interference": args.interference}}
        rows = run_in_env(policies, seeds=args.seeds, env_config=config)
    else:
        sim_config = SimConfig(interference=args.interference)
        rows = run_thesis_experiment(policies, seeds=args.seeds, config=sim_config)
    print(markdown_table(rows))
    print(f"({len(rows)} runs in {time.perf_counter() - start:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
