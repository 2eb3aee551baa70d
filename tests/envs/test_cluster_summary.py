"""``observation.cluster_summary``: ``obs["cluster"]``, one width for every cluster, and its
values recomputed GPU by GPU from the per-GPU table of a twin env on the same trajectory."""

from __future__ import annotations

import math
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import gpushare_env  # noqa: F401  (registers GPUShare-v0)
from gpushare_env.envs.features import GANG_WIDTHS, SUMMARY_FREE_BINS, SUMMARY_GPU_TYPES
from gpushare_env.envs.observation import CLUSTER_FEATURES, GPU_FEATURES
from gpushare_env.sim import make_cluster
from gpushare_env.sim.cluster import PRESETS


def _make(cluster: Any, summary: bool, **config: Any) -> gym.Env:
    settings = {"cluster": cluster, "workload": "philly_heavy", "num_jobs": 40, **config}
    return gym.make("GPUShare-v0", config={**settings, "observe_cluster_summary": summary})


def _by_gpu(cluster: Any, table: np.ndarray) -> np.ndarray:
    """The summary, one GPU at a time (what ``ClusterSummary`` vectorises)."""
    built = make_cluster(cluster)
    column = {name: k for k, name in enumerate(GPU_FEATURES)}
    out = np.zeros((len(SUMMARY_GPU_TYPES), len(CLUSTER_FEATURES)))
    names = {name: k for k, name in enumerate(CLUSTER_FEATURES)}
    for t, gpu_type in enumerate(SUMMARY_GPU_TYPES):
        mine = [g for g in range(built.num_gpus) if built.gpu_type[g] == gpu_type]
        if not mine:
            continue
        row = out[t]
        row[names["share"]] = len(mine) / built.num_gpus
        row[names["gpus"]] = math.log2(1 + len(mine)) / 16
        memory = sum(built.gpu_memory_gib[g] for g in mine)
        idle_on: dict[int, int] = {}
        for g in mine:
            free, workers = table[g, column["free_memory"]], table[g, column["workers"]]
            load = table[g, column["load"]] * built.max_jobs_per_gpu
            if workers == 0:
                row[names["idle"]] += 1 / len(mine)
                idle_on[built.gpu_node[g]] = idle_on.get(built.gpu_node[g], 0) + 1
            else:
                lows = (0.0, *SUMMARY_FREE_BINS[:-1])
                for lo, hi in zip(lows, SUMMARY_FREE_BINS, strict=True):
                    if (lo == 0 and free <= hi) or lo < free <= hi:
                        row[names[f"shared_free_{round(lo * 100)}_{round(hi * 100)}"]] += 1 / len(
                            mine
                        )
                row[names["shared_free_memory"]] += free * built.gpu_memory_gib[g] / memory
            row[names["compute_free"]] += max(0.0, 1.0 - load) / len(mine)
            row[names["contended"]] += (load > 1 + 1e-9) / len(mine)
        for w in GANG_WIDTHS:
            row[names[f"gangs_{w}"]] = sum(w * (n // w) for n in idle_on.values()) / len(mine)
    return out.ravel()


@pytest.mark.parametrize("cluster", ["thesis", "mixed", {"nodes": 3, "gpus_per_node": 8}])
def test_the_summary_is_the_per_gpu_table_summarised(cluster: Any) -> None:
    summarised, rows = _make(cluster, True), _make(cluster, False)
    rng = np.random.default_rng(0)
    obs, _ = summarised.reset(seed=2)
    table_obs, _ = rows.reset(seed=2)
    seen_busy = False
    for _ in range(150):
        table = table_obs["gpus"].reshape(-1, len(GPU_FEATURES))
        np.testing.assert_allclose(obs["cluster"], _by_gpu(cluster, table), atol=1e-6)
        assert summarised.observation_space.contains(obs)
        for key in ("pending", "running", "global", "frag_hist"):  # the rest is unchanged
            np.testing.assert_array_equal(obs[key], table_obs[key])
        summary = obs["cluster"].reshape(len(SUMMARY_GPU_TYPES), -1)
        present = summary[:, CLUSTER_FEATURES.index("share")] > 0
        seen_busy |= bool((summary[present, CLUSTER_FEATURES.index("idle")] < 1).any())
        mask = summarised.unwrapped.action_masks()
        assert np.array_equal(mask, rows.unwrapped.action_masks())
        action = int(rng.choice(np.flatnonzero(mask)))
        obs, _, done, cut, _ = summarised.step(action)
        table_obs, *_ = rows.step(action)
        if done or cut:
            break
    assert seen_busy  # the trajectory put work on the GPUs


def test_one_width_for_every_cluster_and_the_types_it_has() -> None:
    clusters = [*PRESETS, {"nodes": 30, "gpus_per_node": 8}]
    spaces = {str(c): _make(c, True).observation_space for c in clusters}
    assert len({repr(s) for s in spaces.values()}) == 1
    assert "gpus" not in spaces["medium"].spaces
    obs, _ = _make("mixed", True).reset(seed=0)
    summary = obs["cluster"].reshape(len(SUMMARY_GPU_TYPES), len(CLUSTER_FEATURES))
    share = dict(zip(SUMMARY_GPU_TYPES, summary[:, 0].tolist(), strict=True))
    assert share["v100"] == pytest.approx(32 / 72) and share["a100"] == pytest.approx(8 / 72)
    assert sum(share.values()) == pytest.approx(1.0)
    a100 = summary[SUMMARY_GPU_TYPES.index("a100")]
    gangs = {w: a100[CLUSTER_FEATURES.index(f"gangs_{w}")] for w in GANG_WIDTHS}
    assert gangs == {1: 1.0, 2: 1.0, 4: 1.0, 8: 0.0}  # nodes of 4 a100: no 8-GPU gang


def test_gpu_rows_and_the_summary_are_one_or_the_other() -> None:
    with pytest.raises(ValueError, match=r"observation\.cluster_summary replaces"):
        _make("thesis", True, gpu_rows=32)
