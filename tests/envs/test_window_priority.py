"""``windows.priority``: a share of the pending window chosen by least attained service."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import baselines
import gpushare_env  # noqa: F401
from gpushare_env.rollout import rollout

_HEAVY = {"cluster": "thesis", "workload": "philly_heavy", "num_jobs": 200, "pending_window": 8}


def _expected_window(view, width: int, by_priority: int) -> list[int]:
    """The rule, written out: the first ``width - by_priority`` by arrival, then the
    ``by_priority`` others with the least attained GPU-seconds (ties by arrival), listed
    in arrival order."""
    queue = view.pending()
    if len(queue) <= width:
        return queue
    first = width - by_priority
    attained = {job_id: view.job(job_id).attained_gpu_s for job_id in queue[first:]}
    chosen = sorted(queue[first:], key=lambda j: (attained[j], queue.index(j)))[:by_priority]
    return sorted(queue[:first] + chosen, key=queue.index)


@pytest.mark.parametrize("share", [0.25, 0.5, 1.0])
def test_the_window_follows_the_rule_along_a_trajectory(share: float) -> None:
    env = gym.make("GPUShare-v0", config={**_HEAVY, "window_priority": share})
    env_core = env.unwrapped
    assert env_core.config.windows.windows().priority_slots == round(8 * share)
    _, info = env.reset(seed=3)
    rng = np.random.default_rng(0)
    long_queues = reordered = 0
    for _ in range(2000):
        window = env_core.pending_window_ids()
        view = env_core.view
        assert window == _expected_window(view, 8, round(8 * share))
        if view.num_waiting > 8:
            long_queues += 1
            reordered += window != view.pending(8)
        action = int(rng.choice(np.flatnonzero(info["action_mask"])))
        _, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            break
    assert long_queues > 100 and reordered > 10  # the rule was exercised, not vacuous


def test_without_a_share_the_window_is_the_first_w_by_arrival() -> None:
    env = gym.make("GPUShare-v0", config=_HEAVY)
    _, info = env.reset(seed=3)
    rng = np.random.default_rng(1)
    for _ in range(500):
        assert env.unwrapped.pending_window_ids() == env.unwrapped.view.pending(8)
        action = int(rng.choice(np.flatnonzero(info["action_mask"])))
        _, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            break


@pytest.mark.parametrize("name", ["thesis", "tiresias", "gandiva", "fifo_pack", "sjf_pack"])
def test_a_heuristic_in_the_env_addresses_the_priority_window(name: str) -> None:
    env = gym.make("GPUShare-v0", config={**_HEAVY, "window_priority": 0.5})
    policy = baselines.make(name, env)
    seen = {"states": 0, "reordered": 0}

    def check(_step: object) -> None:
        env_core = env.unwrapped
        if env_core.view.num_waiting:
            assert policy.visible_pending(env_core.view) == env_core.pending_window_ids()
            seen["states"] += 1
            seen["reordered"] += env_core.pending_window_ids() != env_core.view.pending(8)

    episode = rollout(policy, env, seed=5, callback=check)  # encode_decision refuses
    assert episode.terminated and episode.info["metrics"]["num_jobs"] == 200  # every job ran
    assert seen["reordered"] > 0 or name == "fifo_pack"  # fifo_pack never suspends


@pytest.mark.parametrize("share", [-0.1, 1.5, float("nan"), "half"])
def test_a_bad_share_is_named(share: object) -> None:
    with pytest.raises(ValueError, match=r"windows\.priority must be a finite number"):
        gym.make("GPUShare-v0", config={**_HEAVY, "window_priority": share})
