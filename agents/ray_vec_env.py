"""A stable-baselines3 ``VecEnv`` whose envs live in Ray actors (``--vec-env ray``).

Each env is built inside its own Ray actor from the same constructor
``DummyVecEnv`` / ``SubprocVecEnv`` take (:func:`agents.envs.make_env_fn`), so it may run
on any node of a Ray cluster; a step sends every actor its action at once and gathers
the results. An actor steps exactly as ``DummyVecEnv`` steps an env (SB3's VecEnv API:
``done = terminated or truncated``, ``info["TimeLimit.truncated"]``, reset on done with
``info["terminal_observation"]``), so the same seeds give the same observations,
rewards, dones and infos (tested). ``env_method("action_masks")``, ``get_attr`` and
``set_attr`` reach the env through the actor, as MaskablePPO needs.

Ray is imported here only: ``pip install 'gpushare-env[ray]'``. A Ray instance already
running (``ray.init(address=...)`` by the caller) is used; else a local one starts.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from stable_baselines3.common.vec_env.base_vec_env import (
    VecEnv,
    VecEnvIndices,
    VecEnvObs,
    VecEnvStepReturn,
)
from stable_baselines3.common.vec_env.subproc_vec_env import _stack_obs

__all__ = ["RayVecEnv"]


class _EnvActor:
    """One env in a Ray actor, stepped the way ``DummyVecEnv`` steps it."""

    def __init__(self, env_fn: Callable[[], gym.Env[Any, Any]]) -> None:
        self.env = env_fn()

    def spaces(self) -> tuple[gym.Space[Any], gym.Space[Any], str | None]:
        return self.env.observation_space, self.env.action_space, self.env.render_mode

    def reset(self, seed: int | None, options: dict[str, Any] | None) -> tuple[Any, dict[str, Any]]:
        maybe_options = {"options": options} if options else {}
        return self.env.reset(seed=seed, **maybe_options)

    def step(self, action: Any) -> tuple[Any, float, bool, dict[str, Any], dict[str, Any] | None]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        done = bool(terminated or truncated)
        info["TimeLimit.truncated"] = truncated and not terminated
        reset_info = None
        if done:
            info["terminal_observation"] = obs
            obs, reset_info = self.env.reset()
        return obs, float(reward), done, info, reset_info

    def get_attr(self, name: str) -> Any:
        return self.env.get_wrapper_attr(name)

    def set_attr(self, name: str, value: Any) -> None:
        setattr(self.env, name, value)

    def env_method(self, name: str, args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
        return self.env.get_wrapper_attr(name)(*args, **kwargs)

    def is_wrapped(self, wrapper_class: type[gym.Wrapper[Any, Any, Any, Any]]) -> bool:
        from stable_baselines3.common.env_util import is_wrapped

        return is_wrapped(self.env, wrapper_class)

    def render(self) -> Any:
        return self.env.render()

    def close(self) -> None:
        self.env.close()


class RayVecEnv(VecEnv):
    """``len(env_fns)`` envs, each in a Ray actor.

    Args:
        env_fns: Env constructors (picklable: Ray ships them to the actors).
        num_cpus: CPUs each actor reserves; default ``min(1, cluster CPUs / envs)``, so
            that every actor can be placed on a small machine.
        address: Ray cluster to join when Ray is not running yet (``None``: a new local
            instance, stopped by :meth:`close`).
    """

    def __init__(
        self,
        env_fns: Sequence[Callable[[], gym.Env[Any, Any]]],
        num_cpus: float | None = None,
        address: str | None = None,
    ) -> None:
        import ray

        self._started_ray = not ray.is_initialized()
        if self._started_ray:
            ray.init(address=address or "local", include_dashboard=False, log_to_driver=False)
        if num_cpus is None:
            total = float(ray.cluster_resources().get("CPU", 1.0))
            num_cpus = min(1.0, total / max(1, len(env_fns)))
        actor_class: Any = ray.remote(num_cpus=num_cpus)(_EnvActor)
        self._ray = ray
        self.actors: list[Any] = [actor_class.remote(fn) for fn in env_fns]
        observation_space, action_space, render_mode = ray.get(self.actors[0].spaces.remote())
        super().__init__(len(env_fns), observation_space, action_space)
        self.render_mode = render_mode
        self._pending: list[Any] = []
        self.closed = False

    def reset(self) -> VecEnvObs:
        calls = [
            actor.reset.remote(self._seeds[i], self._options[i])
            for i, actor in enumerate(self.actors)
        ]
        results = self._ray.get(calls)
        observations = [obs for obs, _ in results]
        self.reset_infos = [info for _, info in results]
        self._reset_seeds()
        self._reset_options()
        return _stack_obs(observations, self.observation_space)

    def step_async(self, actions: np.ndarray) -> None:
        self._pending = [
            actor.step.remote(action) for actor, action in zip(self.actors, actions, strict=True)
        ]

    def step_wait(self) -> VecEnvStepReturn:
        results = self._ray.get(self._pending)
        self._pending = []
        observations, rewards, dones, infos = [], [], [], []
        for i, (obs, reward, done, info, reset_info) in enumerate(results):
            observations.append(obs)
            rewards.append(reward)
            dones.append(done)
            infos.append(info)
            if reset_info is not None:
                self.reset_infos[i] = reset_info
        return (
            _stack_obs(observations, self.observation_space),
            np.array(rewards, dtype=np.float32),  # as DummyVecEnv's buffer
            np.array(dones, dtype=bool),
            infos,
        )

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self._ray.get([actor.close.remote() for actor in self.actors])
        for actor in self.actors:
            self._ray.kill(actor)
        if self._started_ray:
            self._ray.shutdown()

    def _targets(self, indices: VecEnvIndices) -> list[Any]:
        return [self.actors[i] for i in self._get_indices(indices)]

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        """An attribute of each env (its wrappers searched too)."""
        return list(self._ray.get([a.get_attr.remote(attr_name) for a in self._targets(indices)]))

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        """Set an attribute on each env (the outermost wrapper)."""
        self._ray.get([a.set_attr.remote(attr_name, value) for a in self._targets(indices)])

    def env_method(
        self,
        method_name: str,
        *method_args: Any,
        indices: VecEnvIndices = None,
        **method_kwargs: Any,
    ) -> list[Any]:
        """Call a method of each env (``action_masks`` for MaskablePPO)."""
        calls = [
            a.env_method.remote(method_name, method_args, method_kwargs)
            for a in self._targets(indices)
        ]
        return list(self._ray.get(calls))

    def env_is_wrapped(
        self, wrapper_class: type[gym.Wrapper[Any, Any, Any, Any]], indices: VecEnvIndices = None
    ) -> list[bool]:
        """Whether each env is wrapped in ``wrapper_class``."""
        return list(
            self._ray.get([a.is_wrapped.remote(wrapper_class) for a in self._targets(indices)])
        )

    def get_images(self) -> Sequence[np.ndarray | None]:
        """Each env's ``render()`` (``rgb_array`` envs)."""
        return list(self._ray.get([a.render.remote() for a in self.actors]))
