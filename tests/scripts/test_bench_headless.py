"""``gpushare-bench``'s headless run: set up as ``gpushare-evaluate --headless`` sets a run
up, with its own windows and caps (unbounded, none) named in what it prints."""

from __future__ import annotations

from gpushare_env.runner import run_headless
from gpushare_env.seeding import policy_seed
from gpushare_eval.cli.benchmark import headless_benchmark
from gpushare_eval.runs import prepare_headless


def test_the_headless_benchmark_names_its_windows_and_caps_and_runs_the_env_s_episode():
    record = headless_benchmark(300, "medium", "fifo_pack", 2, 0.8)
    assert (record["windows"], record["caps"]) == ("unbounded", "none")
    config = {"cluster": "medium", "num_jobs": 300,
              "workload": {"preset": "philly", "load": 0.8, "num_cluster_gpus": 64},
              "simulator": {"interference": "analytic"}}  # fmt: skip
    episode = prepare_headless(config, 2)
    policy = episode.make_policy("fifo_pack", seed=policy_seed(2))
    result = run_headless(episode.jobs, episode.cluster, policy, episode.args.sim_config,
                          rng=episode.noise_rng)  # fmt: skip
    assert (record["jobs"], record["events"], record["decisions"]) == (
        len(episode.jobs), result.events, result.decisions,
    )  # fmt: skip
    assert record["mean_jct_h"] == round(result.metrics["mean_jct_s"] / 3600, 3)
