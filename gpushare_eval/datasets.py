"""Playing a policy and keeping its episodes as a Minari dataset (``gpushare-collect``).

:func:`collect_dataset` lays out the episodes as ``gpushare-evaluate`` lays out runs
(:func:`~gpushare_eval.plan.make_plan`: the same presets, workloads, traces, clusters,
windows and policy names, a saved agent's recorded settings applied the same way), plays
each through the env with the policy that ``gpushare-evaluate`` would build
(:func:`~gpushare_eval.runs.make_policy`), and writes the dataset. What a dataset holds
and how to read it back for behaviour cloning: :mod:`agents.datasets`.

One dataset is one env (its spec is what ``recover_environment()`` builds), so it holds
one workload: a preset with several must be narrowed with a ``workloads`` entry.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from agents.datasets import INFO_KEYS, require_minari, step_info
from gpushare_env.envs import make_env
from gpushare_env.rollout import Episode, Step, rollout
from gpushare_env.workloads.trace_cut import TraceCutWarning
from gpushare_eval.plan import Plan, make_plan
from gpushare_eval.runs import make_policy
from gpushare_eval.specs import PlanError

__all__ = ["DISTRIBUTION", "collect_dataset", "plan_collection"]

#: The distribution a dataset's ``requirements`` name (with its installed version).
DISTRIBUTION = "gpushare-env"

# What Minari warns about when a piece of metadata is left out on purpose: the command
# line has no code permalink or e-mail to give (the description names the command).
_QUIET = ("`code_permalink` is set to None", "`author_email` is set to None")


def plan_collection(
    policy: str,
    *,
    seeds: Sequence[int],
    preset: str | None = None,
    workloads: Sequence[str | Mapping[str, Any]] = (),
    traces: Sequence[str | Path] = (),
    cluster: str | Mapping[str, Any] | None = None,
    num_jobs: int | None = None,
    max_decisions: int | None = None,
    window: int | None = None,
    agent_windows: str = "trained",
) -> Plan:
    """The episodes of a collection: ``policy`` on one workload, one episode per seed.

    The arguments are :func:`~gpushare_eval.plan.make_plan`'s.

    Raises:
        PlanError: What ``make_plan`` refuses; more than one policy or workload.
    """
    plan = make_plan(
        preset=preset,
        policies=[policy],
        workloads=workloads,
        traces=traces,
        cluster=cluster,
        seeds=seeds,
        num_jobs=num_jobs,
        max_decisions=max_decisions,
        window=window,
        agent_windows=agent_windows,
        gantt=["none"],
        jobs_csv=False,
        workers=1,
        headless=False,  # a dataset holds the env's observations, whatever the preset
    )
    if len(plan.policies) != 1:
        labels = ", ".join(p.label for p in plan.policies)
        raise PlanError(f"--policy: one policy per dataset, got {labels}")
    if len(plan.workloads) != 1:
        labels = ", ".join(w.label for w in plan.workloads)
        raise PlanError(
            f"one workload per dataset (its env spec is the dataset's), the set-up has "
            f"{labels}: choose one with --workload or --trace"
        )
    return plan


def _installed_version() -> str | None:
    from importlib import metadata

    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return None


def _episode_buffer(index: int, seed: int, steps: Sequence[Step], reset_info: Any) -> Any:
    """One played episode as Minari's ``EpisodeBuffer``: ``T + 1`` observations and infos
    (the first from ``reset``), ``T`` actions, rewards, terminations and truncations."""
    from minari.data_collector import EpisodeBuffer

    observations = [steps[0].observation, *(s.next_observation for s in steps)]
    infos = [step_info(reset_info), *(step_info(s.info) for s in steps)]
    return EpisodeBuffer(
        id=index,
        seed=seed,
        observations={k: [o[k] for o in observations] for k in observations[0]},
        actions=[s.action for s in steps],
        rewards=[float(s.reward) for s in steps],
        terminations=[bool(s.terminated) for s in steps],
        truncations=[bool(s.truncated) for s in steps],
        infos={k: [i[k] for i in infos] for k in INFO_KEYS},
    )


def collect_dataset(
    dataset_id: str,
    plan: Plan,
    *,
    author: str | None = None,
    description: str | None = None,
    force: bool = False,
    progress: Callable[[int, Episode], None] | None = None,
) -> Any:
    """Play every run of ``plan`` and write them as the local Minari dataset ``dataset_id``.

    The episodes are played by :func:`~gpushare_env.rollout.rollout` and handed to
    ``minari.create_dataset_from_buffers`` (Minari's ``DataCollector`` wrapper would need
    jax to assemble its buffers); the dataset is the same.

    Args:
        dataset_id: Minari's ``(namespace/)(env_name/)dataset_name(-v(version))``.
        plan: :func:`plan_collection`'s plan (one policy, one workload).
        author: The dataset's author (Minari metadata).
        description: Its description (default: what was played, where, with which seeds).
        force: Replace a local dataset of that id (else it is an error).
        progress: Called after each episode with its index and its
            :class:`~gpushare_env.rollout.Episode`.

    Returns:
        The ``minari.MinariDataset`` written.

    Raises:
        ImportError: Minari is not installed.
        FileExistsError: The dataset exists and ``force`` is false.
        ValueError: An episode ended without a step.
    """
    minari = require_minari()
    if dataset_id in minari.list_local_datasets():
        if not force:
            raise FileExistsError(
                f"a local Minari dataset {dataset_id!r} exists (--force replaces it)"
            )
        minari.delete_dataset(dataset_id)
    policy, workload = plan.policies[0], plan.workloads[0]
    if len({repr(r.env_config) for r in plan.runs}) != 1:  # never for plan_collection's
        raise ValueError("collect_dataset: the runs of a dataset share one env config")
    env = make_env(plan.runs[0].env_config)
    buffers = []
    try:
        for index, run in enumerate(plan.runs):
            steps: list[Step] = []
            with warnings.catch_warnings():  # a cut trace is in the plan's notes, once
                warnings.simplefilter("ignore", TraceCutWarning)
                episode = rollout(make_policy(run.policy, env), env, seed=run.seed,
                                  callback=steps.append)  # fmt: skip
            if not steps:
                raise ValueError(f"seed {run.seed}: the episode ended without a decision")
            buffers.append(_episode_buffer(index, run.seed, steps, episode.reset_info))
            if progress is not None:
                progress(index, episode)
        if description is None:
            description = (
                f"{policy.label} on {workload.label} ({len(plan.runs)} episodes, seeds "
                f"{', '.join(str(r.seed) for r in plan.runs)}) in GPUShare-v0 with this "
                "dataset's env spec; infos: " + ", ".join(INFO_KEYS) + "; written by "
                "gpushare-collect"
            )
        version = _installed_version()
        with warnings.catch_warnings():
            for message in _QUIET:
                warnings.filterwarnings("ignore", message=message)
            dataset = minari.create_dataset_from_buffers(
                dataset_id=dataset_id,
                buffer=buffers,
                env=env,
                eval_env=env.spec,  # the same env: said, not left to a warning
                algorithm_name=policy.label,
                author=author,
                description=description,
                requirements=[f"{DISTRIBUTION}=={version}"] if version else None,
                data_format="hdf5",
            )
    finally:
        env.close()
    return dataset
