"""Training environments: seeded episode streams, reward scaling and vectorisation.

Training must draw its episodes from the training seeds only (the evaluation preset
``philly`` reserves :data:`~gpushare_env.presets.PHILLY_TEST_SEEDS` for the
test), so every training env resets with an explicit seed taken from a shuffled cycle of
the training seeds. The wrapper also forwards ``action_masks()`` (MaskablePPO reads it
through ``env_method`` under ``SubprocVecEnv``) and can scale the reward, which keeps
PPO's value targets near unit size (the ``jct`` term is in job-hours per decision).

One env config serves the agent and every heuristic it meets (cloned teachers, reward
references, evaluation baselines): the suspension rules (``limits``) are the simulator's
and bind all of them alike (the agent through the mask, a heuristic through
``SimView.can_suspend``), so no key is stripped for the heuristics.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, SupportsFloat

import gymnasium as gym
import numpy as np
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv, VecEnv, VecMonitor
from stable_baselines3.common.vec_env.base_vec_env import VecEnvObs, VecEnvStepReturn

from gpushare_env.envs import make_env
from gpushare_env.seeding import worker_seed

if TYPE_CHECKING:
    from agents.reference import Plays

__all__ = [
    "InProcessVecEnv",
    "SeededEpisodes",
    "make_env",
    "make_env_fn",
    "make_vec_env",
]


class SeededEpisodes(gym.Wrapper[Any, Any, Any, Any]):
    """Reset every episode with the next seed of a shuffled cycle; scale the reward.

    Args:
        env: A ``GPUShare-v0`` env.
        seeds: Episode seeds to draw from (each full cycle is reshuffled).
        stream_seed: Seed of the generator that shuffles the cycle (one per worker,
            :func:`gpushare_env.seeding.worker_seed`); a seeded ``reset`` replaces it.
        reward_scale: Factor applied to every reward (``info["reward_terms"]`` untouched).
        curriculum: ``(first, full, steps)``: episodes start with ``first`` jobs and grow
            in ten even stages to ``full`` (the env's ``num_jobs``) over this env's first
            ``steps`` steps (``reset(options={"num_jobs": n})`` of ``GPUShare-v0``: the
            short episode of each seed is the one an env of ``n`` jobs plays);
            ``None``: every episode full.
    """

    def __init__(
        self,
        env: gym.Env[Any, Any],
        seeds: Sequence[int],
        stream_seed: int = 0,
        reward_scale: float = 1.0,
        curriculum: tuple[int, int, int] | None = None,
    ) -> None:
        super().__init__(env)
        if not seeds:
            raise ValueError("SeededEpisodes: no training seed given")
        if curriculum is not None:
            first, full, steps = curriculum
            if not 1 <= first < full or steps < 1:
                raise ValueError(
                    f"SeededEpisodes: curriculum needs 1 <= first < full jobs and steps >= 1, "
                    f"got {curriculum}"
                )
        self.seeds = [int(s) for s in seeds]
        self.reward_scale = float(reward_scale)
        self.curriculum = curriculum
        self.steps = 0  # this env's steps so far (the curriculum's clock)
        self._rng = np.random.default_rng(stream_seed)
        self._order: list[int] = []

    def episode_jobs(self) -> int | None:
        """Jobs of the next episode under the curriculum (``None``: the env's own)."""
        if self.curriculum is None:
            return None
        first, full, steps = self.curriculum
        stage = min(10, 10 * self.steps // steps)  # 0..10
        jobs = first + (full - first) * stage // 10
        return None if jobs >= full else jobs

    def _next_seed(self) -> int:
        if not self._order:
            self._order = [int(s) for s in self._rng.permutation(self.seeds)]
        return self._order.pop()

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Reset with ``seed`` if given (re-seeding the cycle), else the next training seed."""
        if seed is not None:
            self._rng = np.random.default_rng(seed)
            self._order = []
        episode_seed = self._next_seed()
        jobs = self.episode_jobs()
        if jobs is not None:
            options = {**(options or {}), "num_jobs": jobs}
        obs, info = self.env.reset(seed=episode_seed, options=options)
        info["episode_seed"] = episode_seed
        return obs, info

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        """Step the env and scale its reward."""
        self.steps += 1
        obs, reward, terminated, truncated, info = self.env.step(action)
        return obs, float(reward) * self.reward_scale, terminated, truncated, info

    def action_masks(self) -> np.ndarray:
        """The wrapped env's valid-action mask (of the outermost wrapper that has one:
        ``agents.residual.HeuristicProposals`` may add an action).  # (A,) bool"""
        masks: Callable[[], np.ndarray] = self.env.get_wrapper_attr("action_masks")
        return masks()


class InProcessVecEnv(DummyVecEnv):
    """``DummyVecEnv`` (the envs stepped in turn in this process) without its per-step
    deep copies.

    SB3's ``DummyVecEnv`` deep-copies every step's list of info dicts and its observation
    buffers; with ``GPUShare-v0``'s infos (an action mask and the reward terms per env)
    those copies are most of the vec env's step time (docs/benchmarks.md, *Where a
    training step's time went*). Here the infos are handed on as the envs
    returned them (``GPUShare-v0`` builds a new dict with new arrays at every step, and
    nothing here keeps them), and the observations are copied once, with ``np.copy`` of
    each key's batch array (the rollout buffer stores the previous observation after the
    next step has refilled the buffers, so they must not be handed out as views).
    Otherwise the same class: same order of steps, resets and seeds, same results.
    """

    def step_wait(self) -> VecEnvStepReturn:
        for i, env in enumerate(self.envs):
            obs, reward, terminated, truncated, info = env.step(self.actions[i])
            self.buf_rews[i] = reward
            self.buf_dones[i] = done = terminated or truncated
            info["TimeLimit.truncated"] = truncated and not terminated
            if done:
                info["terminal_observation"] = obs
                obs, self.reset_infos[i] = env.reset()
            self.buf_infos[i] = info
            self._save_obs(i, obs)
        return (
            self._obs_from_buf(),
            np.copy(self.buf_rews),
            np.copy(self.buf_dones),
            list(self.buf_infos),
        )

    def _obs_from_buf(self) -> VecEnvObs:
        return {key: np.copy(value) for key, value in self.buf_obs.items()}


def make_env_fn(
    env_config: Mapping[str, Any],
    seeds: Sequence[int],
    stream_seed: int,
    reward_scale: float = 1.0,
    reward_reference: str | None = None,
    plays: Plays | None = None,
    curriculum: tuple[int, int, int] | None = None,
    residual: str | None = None,
) -> Callable[[], gym.Env[Any, Any]]:
    """A picklable constructor of one training env (for ``SubprocVecEnv``).

    ``reward_reference``: a heuristic whose ``jct`` term on the same episode is added
    back to the reward (:class:`agents.reference.RelativeReward`); ``None``: the plain
    reward. ``plays``: the agent's own finished plays, which replace the heuristic as
    the reference of a seed once there are any (the envs built in one process share it).
    ``curriculum``: ``(first, full, steps)`` of :class:`SeededEpisodes`.
    ``residual``: a base heuristic whose proposal the observation shows
    (:class:`agents.residual.HeuristicProposals`); ``None``: none.
    """
    config = dict(env_config)
    seed_list = [int(s) for s in seeds]

    def _init() -> gym.Env[Any, Any]:
        import torch

        torch.set_num_threads(1)  # a worker process must not grab every core
        env = make_env(config)
        if reward_reference is not None:
            from agents.reference import RelativeReward

            env = RelativeReward(env, config, reward_reference, plays)
        if residual is not None:
            from agents.residual import HeuristicProposals

            env = HeuristicProposals(env, residual)
        return SeededEpisodes(env, seed_list, stream_seed, reward_scale, curriculum)

    return _init


def make_vec_env(
    env_configs: Sequence[Mapping[str, Any]],
    seeds: Sequence[int],
    n_envs: int,
    seed: int,
    reward_scale: float = 1.0,
    subprocess: bool | None = None,
    reward_reference: str | None = None,
    reference_plays: int = 0,
    ray: bool = False,
    curriculum: tuple[int, int] | None = None,
    residual: str | None = None,
) -> VecEnv:
    """``n_envs`` training envs, env ``i`` on ``env_configs[i % len(env_configs)]``.

    Worker ``i`` shuffles the training seeds with its own stream
    (:func:`gpushare_env.seeding.worker_seed`), so the workers do not replay the same
    episodes in lock step.

    Args:
        env_configs: One or more env configs (several workloads alternate across workers).
        seeds: Training episode seeds.
        n_envs: Number of envs, >= 1.
        seed: The run's seed.
        reward_scale: Factor on every reward.
        subprocess: ``SubprocVecEnv`` (``True``) or ``DummyVecEnv`` (``False``); ``None``
            picks subprocesses when ``n_envs > 1``.
        reward_reference: Make the ``jct`` reward relative to this heuristic on the same
            episode (see :mod:`agents.reference`); ``None``: the plain reward.
        reference_plays: With ``reward_reference``, measure a seed the agent has
            finished before against the mean of its last this many plays of it
            (:class:`agents.reference.Plays`, one store for the envs of a process); 0:
            the heuristic always.
        curriculum: ``(first_jobs, steps)``: episodes grow from ``first_jobs`` jobs to
            each config's ``num_jobs`` over the first ``steps`` env steps of the run
            (counted over all envs; :class:`SeededEpisodes`); ``None``: full episodes.
        residual: Show this heuristic's proposal in every observation
            (:class:`agents.residual.HeuristicProposals`); ``None``: none.
        ray: Each env in a Ray actor (:class:`agents.ray_vec_env.RayVecEnv`; needs
            ``gpushare-env[ray]``); ``subprocess`` is then ignored.
    """
    if n_envs < 1:
        raise ValueError(f"n_envs must be >= 1, got {n_envs}")
    if reference_plays and reward_reference is None:
        raise ValueError("make_vec_env: reference_plays needs a reward_reference")
    plays = None
    if reference_plays:
        from agents.reference import Plays

        plays = Plays(reference_plays)

    def stages(config: Mapping[str, Any]) -> tuple[int, int, int] | None:
        if curriculum is None:
            return None
        first, steps = curriculum
        full = config.get("num_jobs")
        if not isinstance(full, int):  # SeededEpisodes checks the rest
            raise ValueError(
                f"make_vec_env: a curriculum needs each env config's num_jobs, got {full!r}"
            )
        return first, full, -(-steps // n_envs)

    fns = [
        make_env_fn(
            env_configs[i % len(env_configs)],
            seeds,
            worker_seed(seed, i),
            reward_scale,
            reward_reference,
            plays,
            stages(env_configs[i % len(env_configs)]),
            residual,
        )
        for i in range(n_envs)
    ]
    use_subprocess = n_envs > 1 if subprocess is None else subprocess
    vec: VecEnv
    if ray:
        from agents.ray_vec_env import RayVecEnv

        vec = RayVecEnv(fns)
    elif use_subprocess:
        vec = SubprocVecEnv(fns, start_method="fork")
    else:
        vec = InProcessVecEnv(fns)
    # SB3 hands worker i the seed ``seed + i`` at its first reset, which re-seeds its
    # cycle: the stream worker_seed names (and the one every SB3 algorithm sets again)
    vec.seed(seed)
    return VecMonitor(vec)
