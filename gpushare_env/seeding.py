"""The seeding rules, written once: what a seed means for an episode, a policy, a worker.

Every run of this project is named by integer seeds, and everything that turns a seed into
random draws calls a function of this module, so the headless runner, the evaluation
harness, the training envs and the benchmarks replay exactly the same episodes:

* :func:`episode_streams`: ``GPUShare-v0``'s ``reset(seed=s)`` seeds the env's generator
  with ``s`` and spawns two children, the workload's and the measurement noise's, so a
  change to one distribution leaves the other's draws alone. A headless run of episode
  ``s`` draws its jobs and noise from the same two children (tested against the env).
* :func:`trace_generator`: a trace is read with a fixed generator (the model of a row
  without one is drawn from it), so every episode and every env replays the same jobs.
* :func:`policy_seed`: a seeded heuristic (``random``) playing episode ``s`` is seeded
  with ``s`` too, so a (policy, episode) pair is one fixed run.
* :func:`worker_seed`: training worker ``i`` of a run seeded ``s`` shuffles its episode
  seeds with its own stream.
* :func:`parse_seeds`: the one spelling of a list of seeds on a command line
  (``0-99``, ``1,2,5``), for ``gpushare-train`` and ``gpushare-evaluate`` alike.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

__all__ = [
    "MAX_SEEDS",
    "TRACE_SEED",
    "episode_streams",
    "parse_seeds",
    "policy_seed",
    "trace_generator",
    "worker_seed",
]

#: Most seeds one list may name: far more runs than any machine finishes, few enough to
#: hold (a typo like ``0-99999999999`` would otherwise fill the memory).
MAX_SEEDS = 1_000_000
_RANGE = re.compile(r"(\d+)-(\d+)")


def parse_seeds(tokens: str | Sequence[str], *, allow_empty: bool = False) -> tuple[int, ...]:
    """Seeds from ``"3"``, ``"0-9"`` (both ends included), ``"0,1,5-7"`` or several such
    tokens, in the order given; with ``allow_empty``, ``""`` is no seed at all (an option
    that turns something off, as ``gpushare-train --eval-seeds ""``).

    Raises:
        ValueError: Naming the part that is wrong: not an integer or a range, a negative
            seed, an empty range (``5-2``), a seed given twice, more than
            :data:`MAX_SEEDS` seeds, or no seed at all (unless ``allow_empty``).
    """
    if isinstance(tokens, str):
        tokens = [tokens]
    seeds: list[int] = []
    for token in tokens:
        for part in (p.strip() for p in token.split(",")):
            if not part:
                continue
            match = _RANGE.fullmatch(part)
            if match:
                low, high = int(match.group(1)), int(match.group(2))
                if high < low:
                    raise ValueError(f"empty range {part!r}")
            else:
                try:
                    low = high = int(part)
                except ValueError:
                    raise ValueError(f"{part!r} is not a seed or a range such as 0-99") from None
                if low < 0:
                    raise ValueError(f"seeds must be >= 0, got {low}")
            if len(seeds) + high - low + 1 > MAX_SEEDS:
                raise ValueError(f"{part!r} makes more than {MAX_SEEDS:,} seeds")
            seeds.extend(range(low, high + 1))
    if not seeds and not allow_empty:
        raise ValueError("no seed given")
    seen: set[int] = set()
    for seed in seeds:
        if seed in seen:
            raise ValueError(f"seed {seed} is given twice")
        seen.add(seed)
    return tuple(seeds)


#: Seed of the generator a trace is read with (see :func:`trace_generator`).
TRACE_SEED = 0


def episode_streams(seed: int) -> tuple[np.random.Generator, np.random.Generator]:
    """The (workload, noise) generators of episode ``seed``.

    ``np.random.default_rng(seed)`` is the generator ``reset(seed=seed)`` gives the env
    (Gymnasium's ``np_random``: PCG64 of ``SeedSequence(seed)``); its two spawned
    children draw the jobs and the simulator's measurement noise. Both children are
    always spawned, so the noise does not depend on the workload source.
    """
    workload, noise = np.random.default_rng(seed).spawn(2)
    return workload, noise


def trace_generator() -> np.random.Generator:
    """A fresh generator of :data:`TRACE_SEED`: the one a trace is read with."""
    return np.random.default_rng(TRACE_SEED)


def policy_seed(episode_seed: int) -> int:
    """The seed of a heuristic's own generator when it plays episode ``episode_seed``.

    The episode seed itself: the harness records it as the policy's ``seed`` parameter
    (a seed given in the policy's name, ``random:seed=5``, wins over it).
    """
    return int(episode_seed)


def worker_seed(run_seed: int, worker: int) -> int:
    """The seed of training worker ``worker``'s stream (the order of its episode seeds).

    ``run_seed + worker``: stable-baselines3 seeds vectorised envs this way
    (``VecEnv.seed``, called again by every algorithm's ``set_random_seed``) and passes
    that seed to each worker's first ``reset``, so this is the stream a worker draws from
    whatever seed it was built with. Neighbouring run seeds share shifted streams (run 1's
    worker 0 is run 0's worker 1).
    """
    return int(run_seed) + int(worker)
