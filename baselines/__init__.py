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

``available()`` lists the policies of docs/baselines.md's *At a glance* table; ``variants()``
lists the variants of this project that ``make`` also builds, each a published policy
with rules added and a name that says which (``gandiva_srpt``, ``gandiva_critical_path``);
``share_policies()`` lists FGD's six placement rules scheduling over time under the
requested-shares model (``share_random`` ... ``share_fgd``, ``baselines.share_rules``).
Every name is in one registry, ``REGISTRY`` (``POLICIES``, ``VARIANTS``, ``PLANNERS`` and
``SHARE_POLICIES`` are its groups); ``fgd``, the old name of ``min_frag``, is an alias
(``ALIASES``) that warns.

A policy declares what it needs of the setting it plays in: the placement strategies its
decisions use (``Policy.needs_strategies``) and so the sharing model
(``Policy.needs_sharing``: ``"shares"`` for a rule placing requested shares).
``make`` refuses it where they are missing (in an env: the env's ``strategies`` and
``simulator.sharing``; headless: the ones given), and ``env_overrides`` gives the env
settings that offer them (what ``gpushare-evaluate`` adds to a policy's runs).

A policy may also be named with parameters, ``"NAME:KEY=VALUE:KEY=VALUE"`` (for example
``"thesis:critical_path_factor=inf:max_suspends=6"``), wherever a name is taken: by
``make``, ``gpushare-evaluate --policies`` and ``gpushare-train --bc-teacher``. Values are
read as JSON where they parse (numbers, ``true``, ``null``, ``[3600, 14400]``), with
``inf`` / ``-inf`` / ``nan`` as floats, and as strings otherwise.
"""

from __future__ import annotations

import inspect
import json
import math
import warnings
from collections.abc import Sequence
from types import MappingProxyType
from typing import Any

from baselines.base import Policy, refusal, sharing_needed
from baselines.fifo import Fifo
from baselines.fifo_pack import FifoPack
from baselines.gandiva import Gandiva
from baselines.gandiva_critical_path import GandivaCriticalPath
from baselines.gandiva_srpt import GandivaSRPT
from baselines.lookahead import Lookahead
from baselines.mig.policies import MigFull, MigOracle, MigStatic, Miso
from baselines.min_frag import MinFrag
from baselines.random_policy import RandomPolicy
from baselines.share_rules import SHARE_RULE_POLICIES
from baselines.sjf_pack import SJFPack
from baselines.thesis import ThesisHeuristic
from baselines.tiresias import Tiresias
from gpushare_env.distribution import check_baselines
from gpushare_env.sim.placement import STRATEGIES

# another distribution installing ``baselines`` (OpenAI Baselines): an ImportError naming it
check_baselines()

__all__ = [
    "ALIASES",
    "MIG_POLICIES",
    "PLANNERS",
    "POLICIES",
    "REGISTRY",
    "SHARE_POLICIES",
    "VARIANTS",
    "Policy",
    "available",
    "env_overrides",
    "make",
    "mig_policies",
    "needs_repartition",
    "needs_sharing",
    "needs_strategies",
    "parse_spec",
    "parse_value",
    "planners",
    "resolve_name",
    "share_policies",
    "variants",
]

#: Every policy ``make`` builds, by its name (the class's ``name``), in groups:
#:
#: * ``"policy"``: the policies of docs/baselines.md's *At a glance* table, in its order
#:   (``available()``, ``gpushare-evaluate --policies all``);
#: * ``"variant"``: variants of this project, a published policy with rules added;
#: * ``"planner"``: policies that plan on forks of the simulator over a base heuristic
#:   (slow);
#: * ``"share_rule"``: FGD's six placement rules scheduling over time (the
#:   requested-shares model);
#: * ``"mig"``: MISO's MIG baselines (the mig model).
#:
#: What each needs of its setting is declared on its class (``Policy.needs_strategies``,
#: ``Policy.needs_sharing``), nowhere else.
REGISTRY: dict[str, tuple[str, type[Policy]]] = {
    cls.name: (group, cls)
    for group, classes in (
        ("policy", (Fifo, Tiresias, FifoPack, SJFPack, Gandiva, MinFrag, RandomPolicy,
                    ThesisHeuristic)),
        ("variant", (GandivaSRPT, GandivaCriticalPath)),
        ("planner", (Lookahead,)),
        ("share_rule", SHARE_RULE_POLICIES),
        ("mig", (MigFull, MigStatic, Miso, MigOracle)),
    )
    for cls in classes
}  # fmt: skip

#: Old names kept for one release: ``make`` builds the policy of the new name, with a
#: ``FutureWarning``. Records that store an old name (runs, zoo cards) stay readable.
ALIASES: MappingProxyType[str, str] = MappingProxyType({"fgd": "min_frag"})


def _group(group: str) -> MappingProxyType[str, type[Policy]]:
    """The policies of one group of ``REGISTRY``, by name, in its order (read-only)."""
    return MappingProxyType({name: cls for name, (g, cls) in REGISTRY.items() if g == group})


#: Policy classes by name, in the order of docs/baselines.md's *At a glance* table.
POLICIES = _group("policy")
#: Variants of this project by name: a published policy with rules added (not in the
#: *At a glance* table, so ``available()`` and ``gpushare-evaluate --policies all`` leave
#: them out).
VARIANTS = _group("variant")
#: Planners by name: policies that plan on forks of the simulator over a base heuristic
#: (slow: not in ``available()`` nor ``gpushare-evaluate --policies all``).
PLANNERS = _group("planner")
#: FGD's six rules over time by name, in the paper's order (``baselines.share_rules``).
SHARE_POLICIES = _group("share_rule")
#: MISO's MIG baselines by name (``baselines.mig``; the mig model only).
MIG_POLICIES = _group("mig")


def available() -> list[str]:
    """Names of the policies in ``POLICIES``, in its order (``make`` also takes ``variants()``)."""
    return list(POLICIES)


def share_policies() -> list[str]:
    """Names of FGD's six rules scheduling over time (``baselines.share_rules``; the
    requested-shares model only), which ``make`` also takes."""
    return list(SHARE_POLICIES)


def mig_policies() -> list[str]:
    """Names of MISO's MIG baselines on the simulator's mig model (``baselines.mig``),
    which ``make`` also takes."""
    return list(MIG_POLICIES)


def planners() -> list[str]:
    """Names of the planners (``PLANNERS``), which ``make`` also takes."""
    return list(PLANNERS)


def variants() -> list[str]:
    """Names of this project's variants of published policies, which ``make`` also takes."""
    return list(VARIANTS)


def parse_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """Split ``"NAME:KEY=VALUE:..."`` into the policy name and its parameters.

    A value in square brackets may hold colons: a policy spec given as a parameter
    (``lookahead:base=[thesis:critical_path_factor=inf]``) stays whole, brackets included.

    Raises:
        ValueError: a part without ``=``, an empty key, a key given twice, or unbalanced
            brackets (the spec and the part are named).
    """
    name, *parts = _split_outside_brackets(spec)
    params: dict[str, Any] = {}
    for part in parts:
        key, sep, text = part.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ValueError(f"policy {spec!r}: expected KEY=VALUE after ':', got {part!r}")
        if key in params:
            raise ValueError(f"policy {spec!r}: parameter {key!r} given twice")
        params[key] = parse_value(text.strip())
    return name.strip(), params


def _split_outside_brackets(spec: str) -> list[str]:
    """``spec`` split at the colons outside square brackets."""
    parts, depth, start = [], 0, 0
    for i, char in enumerate(spec):
        if char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
            if depth < 0:
                raise ValueError(f"policy {spec!r}: ']' without its '[' at character {i}")
        elif char == ":" and depth == 0:
            parts.append(spec[start:i])
            start = i + 1
    if depth:
        raise ValueError(f"policy {spec!r}: '[' without its ']'")
    parts.append(spec[start:])
    return parts


def parse_value(text: str) -> Any:
    """A parameter's value as written on a command line (``KEY=VALUE``; also the values of
    ``gpushare-evaluate --sweep``): JSON, plus ``inf``/``nan`` and Python's spellings
    ``True``/``False``/``None`` in any case, which would otherwise pass as strings (and a
    string ``"False"`` is truthy); any other text stays text."""
    lowered = text.lower()
    if lowered in ("inf", "+inf", "-inf", "nan"):
        return float(text)
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered in ("none", "null"):
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def make(
    name: str,
    env: Any = None,
    *,
    strategies: Sequence[str] | None = None,
    sharing: str | None = None,
    **params: Any,
) -> Policy:
    """Build the named policy, for the setting it will play in.

    Args:
        name: One of ``available()``, ``variants()``, ``planners()`` or
            ``share_policies()`` (or an old name of ``ALIASES``, with a
            ``FutureWarning``), optionally with parameters: ``"NAME:KEY=VALUE:..."``
            (see :func:`parse_spec`).
        env: A ``GPUShare-v0`` env (wrapped or not) to act in through ``predict``;
            ``None`` to drive the headless runner only. The setting is the env's: its
            ``strategies`` and ``simulator.sharing``.
        strategies: Headless (``env=None``): the placement strategies the run offers
            (``EnvConfig.strategies``, what the env's actions would carry); the policy
            uses no other (``Policy.allowed_strategies``). ``None``: any.
        sharing: Headless: the run's sharing model (``None``: not checked).
        **params: The policy's named parameters (``seed`` for all; see each class).

    Raises:
        ValueError: unknown name, a parameter the policy does not take (the allowed
            ones are listed; for a ``gandiva`` parameter that moved to a variant, the
            variant's full name), one given both in the name and as a keyword, a
            malformed name, or a setting the policy cannot play in: a strategy it needs
            (``Policy.needs_strategies``) missing from the env's ``strategies`` (or the
            ``strategies`` given), or another sharing model than the one it needs.
    """
    if ":" in name:
        name, named = parse_spec(name)
        both = sorted(set(named) & set(params))
        if both:
            raise ValueError(f"policy {name!r}: parameters {both} given twice")
        params = {**named, **params}
    name = resolve_name(name)
    cls = _class_of(name)
    allowed = _parameters(cls)
    unknown = sorted(set(params) - set(allowed))
    if unknown:
        if name == "gandiva":
            _check_moved_gandiva_parameters(params)
        raise ValueError(f"policy {name!r}: unknown parameters {unknown}; allowed: {allowed}")
    if env is not None:
        if strategies is not None or sharing is not None:
            raise ValueError(
                f"policy {name!r}: strategies and sharing are the env's; give them only "
                "headless (env=None)"
            )
        env_config = getattr(env.unwrapped, "config", None)
        strategies = getattr(env.unwrapped, "strategies", None)
        sharing = getattr(getattr(env_config, "simulator", None), "sharing", None)
    if env is not None and cls.needs_repartition:
        raise ValueError(
            f"policy {name!r} re-partitions MIG GPUs (Repartition decisions), and "
            "GPUShare-v0 has no re-partition action: run it headless (gpushare-evaluate "
            "--headless, gpushare_env.runner.run_headless)"
        )
    policy = cls(env=env, **params)
    if strategies is not None:
        policy.allowed_strategies = tuple(strategies)
    problem = refusal(policy, strategies, sharing)
    if problem is not None:
        raise ValueError(problem)
    return policy


def resolve_name(name: str) -> str:
    """The registry's name of ``name``: itself, or the new name of an old one
    (``ALIASES``, with a ``FutureWarning`` saying which)."""
    new = ALIASES.get(name)
    if new is None:
        return name
    warnings.warn(
        f"policy {name!r} is now named {new!r} (the old name goes in the next release)",
        FutureWarning,
        stacklevel=3,
    )
    return new


def _class_of(name: str) -> type[Policy]:
    """The registry's class of ``name`` (a registry name, not an alias)."""
    entry = REGISTRY.get(name)
    if entry is None:
        raise ValueError(
            f"unknown policy {name!r}; available: {available()}; variants: {variants()}; "
            f"planners: {planners()}; under simulator.sharing='shares': {share_policies()}"
        )
    return entry[1]


def env_overrides(name: str, strategies: Sequence[str] = STRATEGIES) -> dict[str, Any]:
    """The env settings a policy's runs need beyond ``strategies`` (the env's default):
    ``{"strategies": [...]}`` with the strategies it needs appended, or ``{}``.

    ``name`` as ``make`` takes it (parameters allowed: a planner's needs are its
    base's). The sharing model is not set here: it is the workload's (an openb pod list
    runs under shares by itself) or the user's, and ``make`` refuses a policy under
    another one than it needs.
    """
    missing = [s for s in needs_strategies(name) if s not in strategies]
    return {"strategies": [*strategies, *missing]} if missing else {}


def needs_repartition(name: str) -> bool:
    """Whether the named policy re-partitions MIG GPUs (``Policy.needs_repartition``): it
    runs headless only."""
    return _class_of(resolve_name(name.split(":", 1)[0])).needs_repartition


def needs_strategies(name: str) -> tuple[str, ...]:
    """The strategies the named policy needs (``Policy.needs_strategies``; ``name`` as
    ``make`` takes it, parameters allowed: a planner's needs are its base's)."""
    spec, params = parse_spec(name) if ":" in name else (name, {})
    with warnings.catch_warnings():  # the caller's make() says it, once
        warnings.simplefilter("ignore", FutureWarning)
        spec = resolve_name(spec)
    if spec in PLANNERS:  # an instance's: its base's
        return make(spec, **params).needs_strategies
    return _class_of(spec).needs_strategies


def needs_sharing(name: str) -> str | None:
    """The sharing model the named policy needs (``Policy.needs_sharing``; ``None``:
    either)."""
    return sharing_needed(needs_strategies(name))


#: Parameters of the variants that a ``gandiva`` spec may carry (the spellings of
#: ``gandiva_srpt`` and ``gandiva_critical_path`` in shipped records); ``make`` refuses them.
_MOVED_FROM_GANDIVA = (
    "order",
    "critical_path_factor",
    "critical_path_scope",
    "critical_path_protect",
    "critical_path_consolidate",
)


def _check_moved_gandiva_parameters(params: dict[str, Any]) -> None:
    """Raise, naming the variant and its full spec, if ``params`` spell a variant as
    ``gandiva``.

    ``gandiva:order=srpt`` and ``gandiva:order=srpt:critical_path_*=...`` (as shipped agent
    records, training commands and reports write them) are the schedules of
    ``gandiva_srpt`` and ``gandiva_critical_path``. Such a spec is refused rather than
    aliased, so a table labelled ``gandiva`` always means Gandiva; the error gives the spec
    of the same schedule under the variant's name.

    Raises:
        ValueError: ``params`` use a parameter of ``_MOVED_FROM_GANDIVA`` (the variant's spec
            is in the message).
    """
    moved = [key for key in params if key in _MOVED_FROM_GANDIVA]
    if not moved:
        return
    message = (
        f"policy 'gandiva' is Gandiva as published (Xiao et al., OSDI'18) and no longer "
        f"takes {moved}: its old order='srpt' is now the policy 'gandiva_srpt', and its "
        "critical-path rules (which needed order='srpt') the policy 'gandiva_critical_path'"
    )
    order = params.get("order", "wait")
    rule = _is_finite(params.get("critical_path_factor", math.inf))
    add_ons = any(params.get(k) for k in ("critical_path_protect", "critical_path_consolidate"))
    if rule and order == "srpt":
        target = "gandiva_critical_path"
    elif not rule and not add_ons and order in ("wait", "srpt"):
        target = "gandiva" if order == "wait" else "gandiva_srpt"
    else:
        raise ValueError(message)  # not a valid old configuration: nothing to translate
    kept = {k: v for k, v in params.items() if k not in _MOVED_FROM_GANDIVA}
    if rule:  # a gandiva spec without a scope meant "all"; the variant's default is "started"
        kept["critical_path_factor"] = params["critical_path_factor"]
        kept["critical_path_scope"] = params.get("critical_path_scope", "all")
        for key in ("critical_path_protect", "critical_path_consolidate"):
            if key in params:
                kept[key] = params[key]
    spec = ":".join([target, *(f"{k}={_format_value(v)}" for k, v in kept.items())])
    raise ValueError(f"{message}; the same schedule is {spec!r}")


def _is_finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value)


def _format_value(value: Any) -> str:
    """``value`` as ``parse_spec`` reads it back."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, str):
        return value
    return json.dumps(value)


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
