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

A policy may also be named with parameters, ``"NAME:KEY=VALUE:KEY=VALUE"`` (for example
``"thesis:critical_path_factor=inf:max_suspends=6"``), wherever a name is taken: by
``make``, ``gpushare-evaluate --policies`` and ``gpushare-train --bc-teacher``. Values are
read as JSON where they parse (numbers, ``true``, ``null``, ``[3600, 14400]``), with
``inf`` / ``-inf`` / ``nan`` as floats, and as strings otherwise.
"""

from __future__ import annotations

import inspect
import json
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

__all__ = ["POLICIES", "Policy", "available", "make", "parse_spec"]

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


def parse_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """Split ``"NAME:KEY=VALUE:..."`` into the policy name and its parameters.

    Raises:
        ValueError: a part without ``=``, an empty key, or a key given twice (the spec
            and the part are named).
    """
    name, *parts = spec.split(":")
    params: dict[str, Any] = {}
    for part in parts:
        key, sep, text = part.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ValueError(f"policy {spec!r}: expected KEY=VALUE after ':', got {part!r}")
        if key in params:
            raise ValueError(f"policy {spec!r}: parameter {key!r} given twice")
        params[key] = _parse_value(text.strip())
    return name.strip(), params


def _parse_value(text: str) -> Any:
    if text.lower() in ("inf", "+inf", "-inf", "nan"):
        return float(text)
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def make(name: str, env: Any = None, **params: Any) -> Policy:
    """Build the named policy.

    Args:
        name: One of ``available()``, optionally with parameters:
            ``"NAME:KEY=VALUE:..."`` (see :func:`parse_spec`).
        env: A ``GPUShare-v0`` env (wrapped or not) to act in through ``predict``;
            ``None`` to drive the headless runner only.
        **params: The policy's named parameters (``seed`` for all; see each class).

    Raises:
        ValueError: unknown name, a parameter the policy does not take (the allowed
            ones are listed), one given both in the name and as a keyword, or a malformed
            name.
    """
    if ":" in name:
        name, named = parse_spec(name)
        both = sorted(set(named) & set(params))
        if both:
            raise ValueError(f"policy {name!r}: parameters {both} given twice")
        params = {**named, **params}
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
