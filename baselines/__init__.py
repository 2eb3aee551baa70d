"""Heuristic schedulers behind one interface: ``make(name, env=None, **params)``.

Every policy decides from the simulator's read-only view (``decide(view)``) and exposes
stable-baselines3's ``predict(observation, state=None, episode_start=None,
deterministic=True) -> (action, state)`` when bound to a ``GPUShare-v0`` env, so the same
object evaluates in the env and drives the headless runner for long traces::

    import baselines, gymnasium as gym
    env = gym.make("GPUShare-v0")
    policy = baselines.make("thesis", env)
    obs, info = env.reset(seed=0)
    action, _ = policy.predict(obs)

    from gpushare_env.runner import run_headless
    result = run_headless(jobs, cluster, baselines.make("thesis"))

``available()`` lists the names. See DESIGN section 5 for the table of policies.
"""

from __future__ import annotations

import inspect
from typing import Any

from baselines.base import Policy
from baselines.fgd import FGD
from baselines.fifo import Fifo
from baselines.fifo_pack import FifoPack
from baselines.gandiva import Gandiva
from baselines.random_policy import RandomPolicy
from baselines.sjf_pack import SJFPack
from baselines.thesis import ThesisHeuristic
from baselines.tiresias import Tiresias

__all__ = ["POLICIES", "Policy", "available", "make"]

#: Policy classes by name, in the order of DESIGN 5's table.
POLICIES: dict[str, type[Policy]] = {
    "fifo": Fifo,
    "tiresias": Tiresias,
    "fifo_pack": FifoPack,
    "sjf_pack": SJFPack,
    "gandiva": Gandiva,
    "fgd": FGD,
    "random": RandomPolicy,
    "thesis": ThesisHeuristic,
}


def available() -> list[str]:
    """Names ``make`` accepts, in DESIGN 5's order."""
    return list(POLICIES)


def make(name: str, env: Any = None, **params: Any) -> Policy:
    """Build the named policy.

    Args:
        name: One of ``available()``.
        env: A ``GPUShare-v0`` env (wrapped or not) to act in through ``predict``;
            ``None`` to drive the headless runner only.
        **params: The policy's named parameters (``seed`` for all; see each class).

    Raises:
        ValueError: unknown name, or a parameter the policy does not take (the allowed
            ones are listed).
    """
    if name not in POLICIES:
        raise ValueError(f"unknown policy {name!r}; available: {available()}")
    cls = POLICIES[name]
    allowed = _parameters(cls)
    unknown = sorted(set(params) - set(allowed))
    if unknown:
        raise ValueError(f"policy {name!r}: unknown parameters {unknown}; allowed: {allowed}")
    return cls(env=env, **params)


def _parameters(cls: type[Policy]) -> list[str]:
    """Keyword parameters of a policy class's constructor (besides ``env``)."""
    names: list[str] = []
    for klass in cls.__mro__:
        if "__init__" not in vars(klass):
            continue
        for param in inspect.signature(vars(klass)["__init__"]).parameters.values():
            if param.name not in ("self", "env") and param.kind not in (
                param.VAR_POSITIONAL,
                param.VAR_KEYWORD,
            ):
                names.append(param.name)
        break
    return names
