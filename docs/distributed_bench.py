"""Time the same 200-run evaluation on the local process pool and on Ray (docs/distributed.md).

Usage: ``python docs/distributed_bench.py [--reps 3] [--multinode]``, from the repository
root with gpushare[ray] installed. Side by side, repetition by repetition: the local
pool (``--workers 2``), Ray on a local instance (``--backend ray --workers 2``, start-up
included) and, with ``--multinode``, Ray on a cluster of two one-CPU nodes started here
(``ray start --head`` + ``ray start --address``, each ``--block`` in a process group of
its own, ended by this script). Prints one JSON line per measurement and the medians.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

# 4 heuristics x 50 seeds of 60 jobs on the thesis cluster: 200 runs of ~0.2 s each
EVALUATION = ["--policies", "fifo", "fifo_pack", "thesis", "tiresias", "--workload", "thesis"]
EVALUATION += ["--cluster", "thesis", "--num-jobs", "60", "--seeds", "0-49"]
EVALUATION += ["--quiet", "--no-plots", "--no-jobs-csv", "--force"]
PORT = "6391"


# the local nodes share this machine: no token between them (Ray's documented opt-out)
NO_AUTH = {**os.environ, "RAY_AUTH_MODE": "disabled"}


def _evaluate(extra: list[str], env: dict[str, str] | None = None) -> float:
    """Wall time of one evaluation (a fresh process, as a user runs it)."""
    out = tempfile.mkdtemp(prefix="gpushare-bench-")
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "scripts.evaluate", *EVALUATION, "--out", out, *extra],
        check=True,
        env=env,
    )
    return time.perf_counter() - start


def _ray_start_time() -> float:
    """Seconds ``ray.init(num_cpus=2)`` takes, and the first trivial task's round trip."""
    code = (
        "import time, ray; t = time.perf_counter(); "
        "ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False); "
        "ray.get(ray.remote(lambda: 0).remote()); print(time.perf_counter() - t); ray.shutdown()"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    return float(result.stdout.strip().splitlines()[-1])


def _ray_node(args: list[str]) -> subprocess.Popen[bytes]:
    ray = os.path.join(os.path.dirname(sys.executable), "ray")
    return subprocess.Popen(
        [ray, "start", "--block", "--num-cpus", "1", "--include-dashboard", "false", *args],
        start_new_session=True,
        env=NO_AUTH,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--multinode", action="store_true")
    parser.add_argument("--multinode-only", action="store_true")
    args = parser.parse_args()
    times: dict[str, list[float]] = {}

    def record(name: str, seconds: float) -> None:
        times.setdefault(name, []).append(seconds)
        print(json.dumps({"measure": name, "seconds": round(seconds, 2)}), flush=True)

    for _ in range(0 if args.multinode_only else 1):
        record("serial (--workers 1)", _evaluate(["--workers", "1"]))
    for _ in range(0 if args.multinode_only else args.reps):
        record("local pool (--workers 2)", _evaluate(["--workers", "2"]))
        record(
            "ray local (--backend ray --workers 2)",
            _evaluate(["--backend", "ray", "--workers", "2"]),
        )
        record("ray.init + first task", _ray_start_time())
    if args.multinode or args.multinode_only:
        head = _ray_node(["--head", "--port", PORT])
        time.sleep(20)
        worker = _ray_node(["--address", f"127.0.0.1:{PORT}"])
        time.sleep(20)
        try:
            for _ in range(args.reps):
                extra = ["--backend", "ray", "--ray-address", f"127.0.0.1:{PORT}"]
                record("ray 2 nodes x 1 CPU (--ray-address)", _evaluate(extra, NO_AUTH))
        finally:
            for node in (worker, head):
                os.killpg(node.pid, signal.SIGTERM)
                node.wait(timeout=60)
    print(json.dumps({k: round(statistics.median(v), 2) for k, v in times.items()}))


if __name__ == "__main__":
    main()
