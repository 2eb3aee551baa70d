"""``gpushare-bench --harness`` and ``--vec-envs``: the evaluation harness's and the
training envs' speed on the local process pool and on Ray (docs/distributed.md).

``gpushare-bench --harness [--reps 3] [--multinode]``, with gpushare-env[ray] installed, times
the same 200-run evaluation side by side, repetition by repetition: the local
pool (``--workers 2``), Ray on a local instance (``--backend ray --workers 2``, start-up
included) and, with ``--multinode``, Ray on a cluster of two one-CPU nodes started here
(``ray start --head`` + ``ray start --address``, each ``--block`` in a process group of
its own, ended by this script). Prints one JSON line per measurement and the medians.

``gpushare-bench --vec-envs [--reps 3] [--vec-steps 2000]`` times the training envs
instead: env steps per second of ``DummyVecEnv``,
``SubprocVecEnv`` and ``RayVecEnv`` (``gpushare-train --vec-env dummy|subproc|ray``,
built by ``agents.envs.make_vec_env``) with 2 and 4 envs on ``GPUShare-v0``'s default
config, stepped as MaskablePPO collects (``env_method("action_masks")``, then ``step``
with a random valid action per env). Start-up (the envs built and reset; Ray's included)
is timed apart from the steps. Prints one JSON line per measurement and a Markdown table.
"""

from __future__ import annotations

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
        [sys.executable, "-m", "gpushare_eval.cli.evaluate", *EVALUATION, "--out", out, *extra],
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


VEC_ENVS = ("dummy", "subproc", "ray")


def _vec_env_speed(kind: str, n_envs: int, vec_steps: int) -> tuple[float, float]:
    """Seconds to build and reset ``n_envs`` envs of ``kind``, and env steps per second
    over ``vec_steps`` steps of all of them (random valid actions, a fixed seed)."""
    import numpy as np

    from agents.envs import make_vec_env

    start = time.perf_counter()
    vec = make_vec_env(
        [{}], range(1000), n_envs, seed=0, subprocess=kind == "subproc", ray=kind == "ray"
    )
    vec.reset()
    started = time.perf_counter() - start
    rng = np.random.default_rng(0)
    try:
        start = time.perf_counter()
        for _ in range(vec_steps):
            masks = np.stack(vec.env_method("action_masks"))
            actions = np.array([rng.choice(np.flatnonzero(mask)) for mask in masks])
            vec.step(actions)
        seconds = time.perf_counter() - start
    finally:
        vec.close()
    return started, n_envs * vec_steps / seconds


def vec_env_bench(reps: int, vec_steps: int) -> None:
    """Every kind with 2 and 4 envs, repetition by repetition; a Markdown table."""
    speeds: dict[tuple[int, str], list[float]] = {}
    starts: dict[tuple[int, str], list[float]] = {}
    for _ in range(reps):
        for n_envs in (2, 4):
            for kind in VEC_ENVS:
                started, speed = _vec_env_speed(kind, n_envs, vec_steps)
                speeds.setdefault((n_envs, kind), []).append(speed)
                starts.setdefault((n_envs, kind), []).append(started)
                line = {"vec_env": kind, "n_envs": n_envs, "start_s": round(started, 2)}
                print(json.dumps({**line, "steps_per_s": round(speed)}), flush=True)
    print("| envs | vec env | env steps/s, repetitions | median | start-up (s), median |")
    print("|---|---|---|---|---|")
    for (n_envs, kind), values in speeds.items():
        runs = ", ".join(f"{v:,.0f}" for v in values)
        start_s = statistics.median(starts[(n_envs, kind)])
        median = statistics.median(values)
        print(f"| {n_envs} | `{kind}` | {runs} | {median:,.0f} | {start_s:.1f} |")


def harness_bench(reps: int, multinode: bool, multinode_only: bool) -> None:
    """The evaluation on the local pool, on local Ray and (``multinode``) on two Ray nodes
    started here; one JSON line per measurement, then the medians."""
    times: dict[str, list[float]] = {}

    def record(name: str, seconds: float) -> None:
        times.setdefault(name, []).append(seconds)
        print(json.dumps({"measure": name, "seconds": round(seconds, 2)}), flush=True)

    for _ in range(0 if multinode_only else 1):
        record("serial (--workers 1)", _evaluate(["--workers", "1"]))
    for _ in range(0 if multinode_only else reps):
        record("local pool (--workers 2)", _evaluate(["--workers", "2"]))
        record(
            "ray local (--backend ray --workers 2)",
            _evaluate(["--backend", "ray", "--workers", "2"]),
        )
        record("ray.init + first task", _ray_start_time())
    if multinode or multinode_only:
        head = _ray_node(["--head", "--port", PORT])
        time.sleep(20)
        worker = _ray_node(["--address", f"127.0.0.1:{PORT}"])
        time.sleep(20)
        try:
            for _ in range(reps):
                extra = ["--backend", "ray", "--ray-address", f"127.0.0.1:{PORT}"]
                record("ray 2 nodes x 1 CPU (--ray-address)", _evaluate(extra, NO_AUTH))
        finally:
            for node in (worker, head):
                os.killpg(node.pid, signal.SIGTERM)
                node.wait(timeout=60)
    print(json.dumps({k: round(statistics.median(v), 2) for k, v in times.items()}))
