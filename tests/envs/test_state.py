"""Masks are exact, the incremental observation equals one built from scratch, and the
simulator's invariants hold after every step of random masked episodes."""

from __future__ import annotations

import copy
import math
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from gpushare_env.envs import FRAG_FEATURES, GPUShareEnv
from gpushare_env.envs.observation import FRAG_BIN_EDGES_GIB
from gpushare_env.rollout import Step, rollout
from gpushare_env.sim import ADVANCE, MODELS, Advance, InvalidDecision, Schedule, Suspend
from gpushare_env.workloads import UnfitJobError
from tests.envs.helpers import RandomValid, random_valid_action
from tests.jobs import job


def log_time(seconds: float) -> float:
    """The documented time feature, computed here by hand: min(1, log10(1 + s) / 7)."""
    return min(1.0, math.log10(1.0 + max(seconds, 0.0)) / 7.0)


def test_the_public_time_feature_is_the_documented_one() -> None:
    from gpushare_env.envs.observation import log_time as public

    for seconds in (-5.0, 0.0, 1.0, 3600.0, 86_400.0, 1e7, 1e9):
        assert public(seconds) == log_time(seconds)
    assert round(public(3600.0), 2) == 0.51 and public(1e9) == 1.0


def is_valid(env: GPUShareEnv, action: int) -> bool:
    """Try ``action`` on a copy of the simulator: valid iff the simulator accepts it."""
    try:
        decision = env.decode_action(action)
    except ValueError:  # an empty window slot
        return False
    sim = copy.deepcopy(env.simulator)
    try:
        if isinstance(decision, Schedule):
            sim.schedule(decision.job_id, decision.strategy)
        elif isinstance(decision, Suspend):
            sim.suspend(decision.job_id)
        else:
            assert isinstance(decision, Advance)
            sim.advance()
    except (InvalidDecision, RuntimeError):
        return False
    return True


#: A small heterogeneous cluster: two 16 GiB V100s (GPUs 0-1), four 40 GiB A100s (2-5).
MIXED = {
    "groups": [
        {"nodes": 1, "gpus_per_node": 2, "gpu_type": "v100"},
        {"nodes": 1, "gpus_per_node": 4, "gpu_type": "a100"},
    ]
}


def mixed_memory_jobs(count: int, seed: int) -> list:
    """Jobs of 20 GiB workers fit only the A100s of ``MIXED``, so the ``exclusive``
    strategy (best fit: the node with the fewest idle GPUs) can pick an idle V100 that is
    too small."""
    rng = np.random.default_rng(seed)
    return [
        job(
            i,
            float(10 * i),
            int(rng.integers(50, 400)),
            num_gpus=int(rng.choice([1, 1, 2])),
            memory_gib=float(rng.choice([6.0, 12.0, 20.0])),
        )
        for i in range(count)
    ]


def sparse_id_jobs(count: int) -> list:
    """Jobs with huge, scattered ids (as a trace may have): the encoder maps them."""
    return [
        job(10**9 + 7919 * i, float(5 * i), 60 + 17 * (i % 5), num_gpus=1 + i % 2)
        for i in range(count)
    ]


CASES = {
    "tiny": ({"cluster": "tiny", "num_jobs": 14}, None),
    "thesis": ({"cluster": "thesis", "num_jobs": 20, "workload": "thesis_poisson"}, None),
    "medium-philly": ({"cluster": "medium", "num_jobs": 30, "workload": "philly"}, None),
    "mixed-memory": ({"cluster": MIXED, "num_jobs": 1}, mixed_memory_jobs(16, 0)),
    "sparse-ids": ({"cluster": "tiny"}, sparse_id_jobs(12)),
    "thesis-held-time": (
        {"cluster": "thesis", "num_jobs": 20, "workload": "thesis", "observe_held_time": True},
        None,
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_masks_are_exact(case: str) -> None:
    config, jobs = CASES[case]
    env = GPUShareEnv({**config, "pending_window": 4, "running_window": 3})
    rng = np.random.default_rng(0)
    options = None if jobs is None else {"jobs": jobs}
    _, info = env.reset(seed=0, options=options)
    checked = {True: 0, False: 0}
    for _ in range(45):
        mask = info["action_mask"]
        for action in range(env.action_space.n):
            valid = is_valid(env, action)
            assert valid == bool(mask[action]), (case, action, env.decode_action(action))
            checked[valid] += 1
        _, _, terminated, truncated, info = env.step(random_valid_action(info, rng))
        if terminated or truncated:
            _, info = env.reset(options=options)
    assert checked[True] > 100 and checked[False] > 100


def test_exclusive_mask_checks_memory_on_mixed_clusters() -> None:
    env = GPUShareEnv({"cluster": MIXED, "pending_window": 2, "running_window": 2})
    jobs = [job(0, 0.0, 100, memory_gib=6.0), job(1, 1.0, 100, memory_gib=20.0)]
    env.reset(seed=0, options={"jobs": jobs})
    env.step(0)  # job 0 exclusive: best fit puts it on the V100 node
    _, _, _, _, info = env.step(env.encode_decision(ADVANCE))  # job 1 arrives
    assert env.view.pending() == [1] and env.view.job(0).gpus[0] < 2
    mask = info["action_mask"]
    # the V100 node's idle GPUs (16 GiB) are too small: exclusive takes an idle 40 GiB GPU
    assert mask[0:4].all()
    assert [is_valid(env, a) for a in range(4)] == [True, True, True, True]
    env.step(0)
    (gpu,) = env.view.job(1).gpus
    assert env.view.gpu_memory_gib[gpu] >= 20.0


def test_a_job_no_gpu_set_can_hold_is_found_at_reset_not_as_a_deadlock() -> None:
    # two 20 GiB workers need two A100s, the cluster has one: it could never run, and
    # would leave the episode with no valid action (a "deadlock") at the end
    cluster = {
        "groups": [
            {"nodes": 1, "gpus_per_node": 2},
            {"nodes": 1, "gpus_per_node": 1, "gpu_type": "a100"},
        ]
    }
    unfit = job(0, 0.0, 10, num_gpus=2, memory_gib=20.0)
    fits = job(1, 0.0, 10)
    with pytest.raises(
        UnfitJobError,
        match=r"job 0 .*need 2 GPUs of >= 20 GiB, the cluster has only 1",
    ):
        GPUShareEnv({"cluster": cluster, "on_unfit": "error"}).reset(
            seed=0, options={"jobs": [unfit, fits]}
        )
    env = GPUShareEnv({"cluster": cluster})
    _, info = env.reset(seed=0, options={"jobs": [unfit, fits]})
    assert info["num_jobs"] == 1 and info["rejected_jobs"] == 1 and not info["deadlock"]
    terminated = truncated = False
    while not (terminated or truncated):
        action = int(np.flatnonzero(info["action_mask"])[0])
        *_, terminated, truncated, info = env.step(action)
    assert terminated and not info["deadlock"] and info["jobs_done"] == 1
    with pytest.raises(ValueError, match="no job of the workload fits"):
        env.reset(seed=0, options={"jobs": [unfit]})


def reference_observation(env: GPUShareEnv) -> dict[str, np.ndarray]:
    """The observation rebuilt from scratch through the read-only view (slow, obvious)."""
    view = env.view
    sim = env.simulator
    cluster = env.cluster
    g = cluster.num_gpus
    slots = view.max_jobs_per_gpu
    capacity = np.asarray(view.gpu_memory_gib)
    free = np.asarray(view.free_memory_gib)
    holders = np.asarray(view.holders)
    gpus = np.stack(
        [
            np.maximum(free, 0) / capacity,
            np.maximum(view.load, 0) / slots,
            holders / slots,
            view.gpu_node / max(cluster.num_nodes - 1, 1),
            view.gpu_speed / view.gpu_speed.max(),
            capacity / capacity.max(),
        ],
        axis=1,
    )
    category = np.searchsorted(np.asarray(FRAG_BIN_EDGES_GIB), free, side="right") + 1
    category[holders == 0] = 0
    category[holders >= slots] = len(FRAG_FEATURES) - 1
    frag = np.bincount(category, minlength=len(FRAG_FEATURES)) / g
    specs = [j.spec for j in sim.jobs.values()]
    jobs_total = len(specs)

    held_time = env.config.observation.held_time

    def rows(ids: list[int], width: int, running: bool) -> np.ndarray:
        out = np.zeros((width, 16 + running + (running and held_time)))
        for slot, job_id in enumerate(ids):
            j = view.job(job_id)
            predicted = j.predicted_remaining_s
            row = [1.0, math.log2(1 + j.num_gpus) / math.log2(1 + g)]
            row += [j.memory_gib / capacity.max(), j.intensity]
            row += [1.0 if j.model == name else 0.0 for name in MODELS]
            row += [log_time(j.total_wait_s if running else j.wait_s), float(j.sampled)]
            row += [float(predicted is not None), 0.0 if predicted is None else log_time(predicted)]
            row += [float(j.suspended), j.progress]
            if running:
                row.append(min(1.0, j.speed / view.gpu_speed.max()))
            if running and held_time:
                row.append(log_time(view.now_s - sim.jobs[job_id].held_since_s))
            out[slot] = row
        return out.reshape(-1)

    waiting = view.pending()
    median = float(np.median([s.memory_gib for s in specs]))
    shared = holders > 0
    fragmented = free[shared & ((free + 1e-9 < median) | (holders >= slots))].sum()
    reference = np.sort([s.memory_gib for s in specs])
    # FGD's expected fragment (Weng et al., ATC'23): a GPU's free memory times the share
    # of the workload's workers that cannot use it (all of it on a GPU without a slot)
    usable = np.searchsorted(reference, free + 1e-9, side="right") / len(reference)
    fgd = np.where(holders >= slots, free, free * (1.0 - usable)).sum()
    total_free = free.sum()
    can_advance = view.next_event_time() is not None
    global_ = [
        log_time(view.now_s),
        len(waiting) / jobs_total,
        max(0, len(waiting) - env.pending_window) / jobs_total,
        view.num_running / jobs_total,
        len(view.in_transition()) / jobs_total,
        view.jobs_in_system / jobs_total,
        sim.num_finished / jobs_total,
        np.minimum(view.load, 1.0).sum() / g,
        np.count_nonzero(holders) / g,
        total_free / capacity.sum(),
        fragmented / total_free if total_free > 1e-9 else 0.0,
        fgd / total_free if total_free > 1e-9 else 0.0,
        min(1.0, sum(view.job(j).num_gpus for j in waiting) / g),
        np.count_nonzero(holders == 0) / g,
        float(can_advance),
    ]
    return {
        "gpus": gpus.reshape(-1),
        "frag_hist": frag,
        "pending": rows(view.pending(env.pending_window), env.pending_window, False),
        "running": rows(view.running(env.running_window), env.running_window, True),
        "global": np.clip(np.asarray(global_), 0.0, 1.0),
    }


@pytest.mark.parametrize("case", list(CASES))
def test_incremental_observation_equals_reference(case: str) -> None:
    config, jobs = CASES[case]
    env = GPUShareEnv({**config, "pending_window": 6, "running_window": 5})
    options = None if jobs is None else {"jobs": jobs}
    rng = np.random.default_rng(1)
    obs, info = env.reset(seed=3, options=options)
    for _ in range(250):
        expected = reference_observation(env)
        for key, value in obs.items():
            np.testing.assert_allclose(value, expected[key], atol=2e-6, err_msg=key)
        # the mask's advance bit is the simulator's own answer
        assert info["action_mask"][-1] == (env.view.next_event_time() is not None)
        obs, _, terminated, truncated, info = env.step(random_valid_action(info, rng))
        if terminated or truncated:
            obs, info = env.reset(options=options)


def test_random_masked_policy_medium_philly_invariants() -> None:
    # 50 short episodes on the 64-GPU cluster with Philly-style jobs; the simulator's
    # invariants after every step, the observation in its space, a choice at every step
    env = GPUShareEnv(
        {"cluster": "medium", "workload": "philly", "num_jobs": 40, "max_decisions": 120}
    )
    policy = RandomValid(np.random.default_rng(0))
    steps = 0
    ended = {"terminated": 0, "truncated": 0}

    def check(step: Step) -> None:
        env.simulator.check_invariants()  # after every step, the last one included
        assert env.observation_space.contains(step.observation)
        assert step.action_mask is not None
        assert step.action_mask[:-1].any(), "asked although advance was the only choice"
        assert np.isfinite(step.reward)

    for seed in range(50):
        episode = rollout(policy, env, seed=seed, callback=check)
        steps += episode.steps
        ended["terminated" if episode.terminated else "truncated"] += 1
        assert episode.metrics["num_jobs"] == episode.info["jobs_done"]
    assert steps > 50 * 60 and ended["truncated"] > 0


def _with_option(
    config: dict[str, Any], option: str, seed: int, action_seed: int
) -> Iterator[tuple[GPUShareEnv, np.ndarray, np.ndarray]]:
    """Step an env with the observation ``option`` and one without it in lockstep (random
    valid actions, 300 at most); at each state check that the columns both have are equal
    and yield the env with its pending and running rows."""
    plain = GPUShareEnv(config)
    env = GPUShareEnv({**config, option: True})
    w, r = env.pending_window, env.running_window
    rng = np.random.default_rng(action_seed)
    obs_plain, _ = plain.reset(seed=seed)
    obs, info = env.reset(seed=seed)
    for _ in range(300):
        pending, running = obs["pending"].reshape(w, -1), obs["running"].reshape(r, -1)
        p, q = obs_plain["pending"].size // w, obs_plain["running"].size // r
        np.testing.assert_array_equal(pending[:, :p], obs_plain["pending"].reshape(w, p))
        np.testing.assert_array_equal(running[:, :q], obs_plain["running"].reshape(r, q))
        yield env, pending, running
        action = random_valid_action(info, rng)
        obs_plain, *_ = plain.step(action)
        obs, _, terminated, truncated, info = env.step(action)
        assert env.observation_space.contains(obs)
        if terminated or truncated:
            return


@pytest.mark.parametrize("cluster", ["medium", "mixed"])
def test_placement_features_describe_what_the_strategies_would_pick(cluster: str) -> None:
    from gpushare_env.envs.observation import PENDING_FEATURES, RUNNING_FEATURES

    config = {"cluster": cluster, "workload": "philly", "num_jobs": 80, "observe_held_time": True}
    p = len(PENDING_FEATURES)
    seen = {"pack": 0, "spread": 0, "shares": 0}
    for env, pending, running in _with_option(config, "observe_placement", 6, 4):
        assert (pending.shape[1], running.shape[1]) == (p + 2, len(RUNNING_FEATURES) + 2)
        view = env.view
        for slot, job_id in enumerate(view.pending(env.pending_window)):
            job = view.job(job_id)
            for column, strategy in ((p, "pack"), (p + 1, "spread")):
                gpus = view.find_placement(job_id, strategy)
                expected = 0.0
                if gpus is not None:
                    peak = max(view.load[g] for g in gpus) + job.intensity
                    expected = min(1.0, peak / view.max_jobs_per_gpu)
                    seen[strategy] += 1
                assert pending[slot, column] == pytest.approx(expected, abs=1e-6)
        for slot, job_id in enumerate(view.running(env.running_window)):
            shares = any(view.holders[g] > 1 for g in view.job(job_id).gpus)
            seen["shares"] += shares
            assert running[slot, -1] == float(shares)
    assert min(seen.values()) > 0


@pytest.mark.parametrize("option", ["observe_placement", "observe_drain", "observe_rivals"])
def test_placement_drain_and_rival_features_widen_the_rows(option: str) -> None:
    """Each option adds its columns to the spaces and the observations (values: the
    tests below, recomputed from the view)."""
    config = {"cluster": "tiny", "workload": "philly", "num_jobs": 5}
    plain = GPUShareEnv(config)
    env = GPUShareEnv({**config, option: True})
    obs, _ = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    widths = {key: obs[key].size for key in obs}
    plain_obs, _ = plain.reset(seed=0)
    wider = [key for key in obs if widths[key] > plain_obs[key].size]
    expected = {"observe_placement": ["pending", "running"], "observe_drain": ["pending",
                "running"], "observe_rivals": ["running"]}[option]  # fmt: skip
    assert wider == expected


@pytest.mark.parametrize("cluster", ["medium", "mixed"])
def test_drain_share_is_each_jobs_remaining_against_the_clusters_drain_time(cluster: str) -> None:
    from gpushare_env.envs.observation import PENDING_FEATURES, RUNNING_FEATURES

    config = {"cluster": cluster, "workload": "philly", "num_jobs": 80, "observe_placement": True}
    shares = []
    for env, pending, running in _with_option(config, "observe_drain", 7, 5):
        assert pending.shape[1] == len(PENDING_FEATURES) + 3
        assert running.shape[1] == len(RUNNING_FEATURES) + 2
        # the drain time from scratch, over every job in the system
        view = env.view
        in_system = view.pending() + view.running() + view.in_transition()
        remaining = {j: view.job(j).predicted_remaining_s or 0.0 for j in in_system}
        drain = sum(remaining[j] * view.job(j).num_gpus for j in in_system) / view.num_gpus
        windows = ((pending, view.pending(env.pending_window)),
                   (running, view.running(env.running_window)))  # fmt: skip
        for rows, ids in windows:
            assert not rows[len(ids) :, -1].any()
            for slot, job_id in enumerate(ids):
                left = remaining[job_id]
                expected = left / (left + drain) if left > 0 else 0.0
                assert rows[slot, -1] == pytest.approx(expected, abs=1e-6)
                shares.append(expected)
    # jobs with and without a prediction were seen, and shares spread out
    assert min(shares) == 0.0 and 0.0 < np.median([s for s in shares if s > 0]) < 1.0
    assert max(shares) > 0.5


@pytest.mark.parametrize("cluster", ["medium", "mixed"])
def test_rival_features_are_the_longest_wait_and_shortest_remaining_of_same_size_jobs(
    cluster: str,
) -> None:
    from gpushare_env.envs.observation import RUNNING_FEATURES, running_features

    # with every option the rival columns come before drain_share, which stays last
    columns = running_features(held_time=True, placement=True, drain=True, rivals=True)
    assert columns[-3:] == ("rival_wait", "rival_remaining", "drain_share")
    config = {"cluster": cluster, "workload": "philly", "num_jobs": 120, "observe_held_time": True}
    seen = {"rival": 0, "none": 0, "unpredicted": 0}
    for env, _, running in _with_option(config, "observe_rivals", 3, 4):
        assert running.shape[1] == len(RUNNING_FEATURES) + 3
        view = env.view
        waiting = [view.job(j) for j in view.pending()]  # the whole queue, not the window
        ids = view.running(env.running_window)
        assert not running[len(ids) :, -2:].any()
        for slot, job_id in enumerate(ids):
            rivals = [job for job in waiting if job.num_gpus == view.job(job_id).num_gpus]
            left = [j.predicted_remaining_s for j in rivals if j.predicted_remaining_s is not None]
            wait = log_time(max(j.wait_s for j in rivals)) if rivals else 0.0
            shortest = log_time(min(left)) if left else 0.0
            assert running[slot, -2] == pytest.approx(wait, abs=1e-6)
            assert running[slot, -1] == pytest.approx(shortest, abs=1e-6)
            seen["rival" if left else "unpredicted" if rivals else "none"] += 1
    assert min(seen.values()) > 0, seen
