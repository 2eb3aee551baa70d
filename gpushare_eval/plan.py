"""The plan of an evaluation: which policies, workloads and seeds, laid out as runs.

:func:`make_plan` validates a request (what ``gpushare-evaluate``'s options say, already
parsed) and resolves it against a preset: baselines by name (with parameters), saved
agents (checked against the env they will meet), workload presets, dicts and traces, the
cluster, the seeds. Anything it cannot use is a :class:`~gpushare_eval.specs.
PlanError` with a one-line message naming the option at fault.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agents import ZOO_DIR
from gpushare_env.envs import make_env
from gpushare_env.presets import EVALUATION_PRESETS, EvaluationPreset
from gpushare_env.seeding import policy_seed
from gpushare_env.sim.limits import MAX_JOBS
from gpushare_env.workloads import WorkloadConfig
from gpushare_eval.runs import agent_algorithm, load_agent
from gpushare_eval.specs import (
    AGENT_ENV_KEYS,
    AGENT_WINDOWS,
    DECISIONS_PER_JOB,
    GANTT_MAX_JOBS,
    RULE_KEYS,
    PlanError,
    PolicySpec,
    RunSpec,
    WorkloadSpec,
    one_line,
    safe_name,
)

__all__ = [
    "Plan",
    "agent_env_overrides",
    "agent_recorded_rules",
    "file_sha256",
    "make_plan",
    "seeded",
]


def file_sha256(path: str | Path) -> str:
    """Hex SHA-256 of a file (traces and saved agents, for ``config.json``)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _check_cluster(cluster: Any) -> Any:
    """Validate a cluster spec (preset name, dict or ``load=X``); returns the built
    cluster, or ``None`` for ``load=X`` (each trace gets its own, see
    :func:`~gpushare_env.workloads.sized_cluster`)."""
    from gpushare_env.sim import make_cluster
    from gpushare_env.workloads import parse_load_rule

    try:
        if parse_load_rule(cluster) is not None:
            return None
        return make_cluster(cluster)
    except (TypeError, ValueError) as error:
        raise PlanError(f"--cluster: {one_line(error)}") from None


def _resolve_workloads(
    workloads: Sequence[str | Mapping[str, Any]],
    traces: Sequence[str | Path],
    preset: EvaluationPreset,
    num_jobs: int | None,
    cluster_spec: Any,
) -> list[WorkloadSpec]:
    """The workloads to run: ``workloads`` then ``traces``, else the preset's.

    A workload given as a ``.csv`` / ``.json`` path is a trace. Under ``--cluster
    load=X`` every trace gets the smallest cluster of 8-GPU V100 nodes that its load
    fits in (:func:`~gpushare_env.workloads.sized_cluster`); generated workloads have no
    load of their own to size by, so they are refused there.
    """
    from gpushare_env.sim import make_cluster
    from gpushare_env.workloads import TraceError, WorkloadConfig, parse_load_rule, sized_cluster
    from gpushare_env.workloads.trace_cut import read_trace

    load = parse_load_rule(cluster_spec)
    cluster_gpus = None if load is not None else make_cluster(cluster_spec).num_gpus

    specs: list[WorkloadSpec] = []
    labels: set[str] = set()

    def unique(label: str) -> str:
        candidate, k = label, 2
        while candidate in labels:
            candidate, k = f"{label}_{k}", k + 1
        labels.add(candidate)
        return candidate

    if not workloads and not traces:
        workloads, traces = preset.workloads, preset.traces
    traces = list(traces)
    for value in workloads:
        if isinstance(value, str) and Path(value).suffix.lower() in (".csv", ".json"):
            traces.append(value)
            continue
        try:
            config = WorkloadConfig.from_any(value)
        except (TypeError, ValueError) as error:
            raise PlanError(f"--workload: {one_line(error)}") from None
        if isinstance(value, str):
            label = value
        else:
            base = value.get("preset", config.kind)
            digest = hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()
            label = f"{base}_{digest[:6]}"
        if load is not None:
            raise PlanError(
                f"--cluster {cluster_spec}: sizes a cluster per trace, but workload "
                f"{label!r} is generated (it has no load of its own); give a cluster "
                "preset or dict"
            )
        specs.append(WorkloadSpec(unique(label), value, num_jobs or preset.num_jobs))
    for text in traces:
        path = Path(text).expanduser()
        if not path.is_file():
            raise PlanError(f"--trace: no such file: {text}")
        if path.suffix.lower() not in (".csv", ".json"):
            raise PlanError(f"--trace: {text}: expected a .csv or .json trace")
        try:  # the whole trace is counted too: a cut one is noted (WorkloadSpec.trace_cut_note)
            read = read_trace(WorkloadConfig.from_any(str(path.resolve())), num_jobs,
                              cluster_gpus=cluster_gpus)  # fmt: skip
            own_cluster = sized_cluster(read.jobs, load) if load is not None and read.jobs else None
        except (TraceError, ValueError, OSError) as error:
            raise PlanError(f"--trace: {one_line(error)}") from None
        if not read.jobs:
            raise PlanError(f"--trace: {text}: no usable jobs")
        label = unique(path.name)
        specs.append(
            WorkloadSpec(
                label,
                str(path.resolve()),
                num_jobs,
                file_sha256(path),
                len(read.jobs),
                read.total_jobs,
                own_cluster,
            )
        )
    return specs


def _recorded_env_config(path: Path) -> dict[str, Any]:
    """The env config recorded beside a saved agent (``{}`` if none).

    Looks for ``<stem>.json`` then ``config.json`` in the model's folder; reads an
    ``env_config`` / ``env`` / ``config`` mapping (or the top level).
    """
    for candidate in (path.with_suffix(".json"), path.parent / "config.json"):
        if not candidate.is_file():
            continue
        try:
            data = json.loads(candidate.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            continue
        if not isinstance(data, dict):
            continue
        for key in ("env_config", "env", "config"):
            if isinstance(data.get(key), dict):
                data = data[key]
                break
        return data
    return {}


def agent_env_overrides(path: Path) -> dict[str, Any]:
    """Observation-shaping env keys recorded beside a saved agent (``AGENT_ENV_KEYS``):
    what it observes and can address. Never the suspension rules (``RULE_KEYS``): every
    policy runs under the evaluation's."""
    data = _recorded_env_config(path)
    return {k: data[k] for k in AGENT_ENV_KEYS if k in data}


def agent_recorded_rules(path: Path) -> dict[str, Any]:
    """The suspension rules recorded beside a saved agent (``RULE_KEYS``, flat or in a
    ``limits`` group): what it was trained under. Not applied to its runs; the plan notes
    when they differ from the evaluation's."""
    data = _recorded_env_config(path)
    limits = data.get("limits")
    nested = limits if isinstance(limits, dict) else {}
    rules = {k: nested[k] for k in RULE_KEYS if k in nested}
    rules.update({k: data[k] for k in RULE_KEYS if k in data})
    return rules


def _note_agent_settings(
    policies: Sequence[PolicySpec], env_config: Mapping[str, Any], notes: list[str]
) -> None:
    """Say which env settings of a saved agent differ from the other policies' (its
    recorded windows and observation options), and when it was trained under other
    suspension rules than the ones it runs under (the evaluation's, as every policy)."""
    from gpushare_env.envs.config import EnvConfig

    base = EnvConfig.from_any(dict(env_config)).flat()
    for policy in policies:
        if not policy.is_agent:
            continue
        overrides = run_config({}, policy)  # what it brings of its own
        own = {k: v for k, v in overrides.items() if base.get(k) != v}
        if own:
            settings = ", ".join(f"{k}={v!r}" for k, v in own.items())
            notes.append(
                f"{policy.label} runs with the env settings it was trained with: {settings} "
                "(the other policies: the evaluation's); the suspension rules are the same "
                "for every policy"
            )
        recorded = agent_recorded_rules(Path(str(policy.path)))
        other = {k: v for k, v in recorded.items() if base.get(k) != v}
        if other:
            trained = ", ".join(f"{k}={v!r}" for k, v in other.items())
            applied = ", ".join(f"{k}={base[k]!r}" for k in other)
            notes.append(
                f"{policy.label} was trained under other suspension rules ({trained}); it "
                f"runs under this evaluation's ({applied}), as every policy"
            )


def _zoo_models() -> list[Path]:
    """Saved agents shipped in ``agents/zoo``."""
    if not ZOO_DIR.is_dir():
        return []
    return sorted(ZOO_DIR.glob("*.zip"))


def _rl_available() -> bool:
    """True if torch and sb3-contrib import."""
    try:
        import sb3_contrib  # noqa: F401
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


def _split_commas(text: str) -> list[str]:
    """Split at commas outside brackets (a parameter may be a list: ``[3600, 14400]``) and
    braces (a grid of values: ``{2,4,8}``, :func:`~gpushare_eval.sweeps.expand_grid`)."""
    parts, depth, start = [], 0, 0
    for i, char in enumerate(text):
        depth += {"[": 1, "]": -1, "{": 1, "}": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def _resolve_policies(
    tokens: Sequence[str] | None, headless: bool, include_zoo: bool, notes: list[str]
) -> list[PolicySpec]:
    """Baselines and saved agents from ``--policies`` (or the default set)."""
    import baselines

    names = baselines.available()
    shared = baselines.share_policies()
    mig = baselines.mig_policies()
    known = [
        *names,
        *baselines.variants(),
        *baselines.planners(),
        *shared,
        *mig,
    ]  # 'all': available()
    specs: list[PolicySpec] = []
    explicit = tokens is not None
    from gpushare_eval.sweeps import expand_grid

    split = [p.strip() for t in (tokens or ["all"]) for p in _split_commas(t) if p.strip()]
    requested = [grid_token for p in split for grid_token in expand_grid(p)]
    if not requested:
        raise PlanError("--policies: no policy given")
    paths: list[Path] = []
    for token in requested:
        if token == "all":
            specs.extend(_baseline_spec(n) for n in names if n not in
                         {s.label for s in specs})  # fmt: skip
        elif token == "share_all":
            specs.extend(_baseline_spec(n) for n in shared if n not in {s.label for s in specs})
        elif token in baselines.ALIASES:  # an old name: its runs play the new one
            new = baselines.ALIASES[token]
            notes.append(f"policy {token!r} is now named {new!r}: its runs play {new}")
            if token not in {s.label for s in specs}:
                specs.append(_baseline_spec(token, new))
        elif token in known:
            if token not in {s.label for s in specs}:
                specs.append(_baseline_spec(token))
        elif token.split(":")[0].strip() in known and ":" in token:
            try:  # a baseline with parameters: check them now, not in every run
                name, params = baselines.parse_spec(token)
                baselines.make(name, **params)
            except (TypeError, ValueError) as exc:
                raise PlanError(f"--policies: {exc}") from None
            if token not in {s.label for s in specs}:
                specs.append(_baseline_spec(token, name, params))
        elif token == "zoo":
            if not _zoo_models():
                raise PlanError(f"--policies: no shipped agent in {ZOO_DIR}")
            paths.extend(p for p in _zoo_models() if p not in paths)
        elif token.endswith(".zip"):
            path = Path(token).expanduser()
            if not path.is_file():
                raise PlanError(f"--policies: no such model file: {token}")
            paths.append(path)
        else:
            raise PlanError(
                f"--policies: unknown policy {token!r}; available: {', '.join(names)}; "
                f"variants: {', '.join(baselines.variants())}; planners: "
                f"{', '.join(baselines.planners())}; under the shares model: "
                f"{', '.join(shared)} (share_all: the six); under the mig model: "
                f"{', '.join(mig)}; or a saved agent path/to/model.zip"
            )
    if not explicit and include_zoo:
        zoo = _zoo_models()
        if zoo and headless:
            notes.append("shipped agents skipped: --headless runs heuristics only")
        elif zoo and not _rl_available():
            notes.append(
                "shipped agents skipped: torch / sb3-contrib not installed "
                "(pip install 'gpushare-env[rl]')"
            )
        elif zoo:
            paths.extend(zoo)
    if paths and headless:
        raise PlanError(
            "headless runs (--headless, or a preset that runs headless unless --env) take "
            "heuristics only; drop the .zip policies"
        )
    if paths and not _rl_available():
        raise PlanError("saved agents need torch and sb3-contrib: pip install 'gpushare-env[rl]'")
    labels = {s.label for s in specs}
    for path in paths:
        label = path.stem if path.stem not in labels else f"{path.parent.name}/{path.stem}"
        labels.add(label)
        specs.append(
            PolicySpec(
                label=label,
                path=str(path.resolve()),
                env_overrides=agent_env_overrides(path),
                params={"algorithm": agent_algorithm(str(path)), "sha256": file_sha256(path)},
            )
        )
    return specs


def _shapes(space: Any) -> str:
    """``{key: shape}`` of a Dict space (or its shape), for messages."""
    spaces = getattr(space, "spaces", None)
    if isinstance(spaces, Mapping):
        return "{" + ", ".join(f"{k}: {tuple(v.shape)}" for k, v in spaces.items()) + "}"
    return str(getattr(space, "shape", space))


def _check_agents(
    policies: list[PolicySpec],
    env_config: Mapping[str, Any],
    explicit: bool,
    notes: list[str],
) -> list[PolicySpec]:
    """Keep the agents whose observation and action spaces match the env they will meet.

    An explicitly named agent that does not fit is a usage error; a shipped one that
    does not fit is skipped with a note.
    """
    kept: list[PolicySpec] = []
    for policy in policies:
        if not policy.is_agent:
            kept.append(policy)
            continue
        try:
            model = load_agent(str(policy.path))
            env = make_env(run_config(env_config, policy))
            problem = None
            observation_space = env.observation_space
            from agents.residual import is_residual, proposal_space

            if is_residual(model):  # it reads its base heuristic's proposal too
                observation_space = proposal_space(observation_space, int(env.action_space.n))  # type: ignore[attr-defined]
            same = (model.observation_space, model.action_space) == (
                observation_space,
                env.action_space,
            )
            if not same:
                from agents.portable import NotPortableError, rebound_policy

                try:
                    rebound_policy(model.policy, observation_space, env.action_space)
                    notes.append(
                        f"{policy.label} plays on a cluster or with windows other than its "
                        "training's: its pointer network is rebound to them (agents.portable)"
                    )
                except NotPortableError as error:
                    problem = (
                        "its observation space differs from this env's (model "
                        f"{_shapes(model.observation_space)}, env "
                        f"{_shapes(env.observation_space)}): it was trained for another "
                        f"cluster or other windows, and {error}"
                    )
            env.close()
        except Exception as error:  # any load failure is reported the same way
            problem = f"cannot load it: {one_line(error)}"
        if problem is None:
            kept.append(policy)
        elif explicit:
            raise PlanError(f"--policies: {policy.path}: {problem}")
        else:
            notes.append(f"shipped agent {Path(str(policy.path)).name} skipped: {problem}")
    return kept


def _swept_workloads(
    workloads: list[WorkloadSpec], env_configs: dict[str, dict[str, Any]], sweep: Sequence[str]
) -> list[WorkloadSpec]:
    """Each workload under each combination of the ``--sweep`` settings (its env config
    entry added to ``env_configs``), each checked by the env's config."""
    from gpushare_env.envs.config import EnvConfig
    from gpushare_eval.sweeps import parse_sweep, setting_label

    grids = dict(parse_sweep(text) for text in sweep)
    swept: list[WorkloadSpec] = []
    for workload in workloads:
        for combo in itertools.product(*grids.values()):
            settings = dict(zip(grids, combo, strict=True))
            label = workload.label + setting_label(settings)
            config = {**env_configs[workload.label], **settings}
            try:
                EnvConfig.from_any(dict(config))
            except (TypeError, ValueError) as error:
                raise PlanError(f"--sweep: {one_line(error)}") from None
            env_configs[label] = config
            swept.append(dataclasses.replace(workload, label=label))
    return swept


@dataclass(slots=True)
class Plan:
    """Everything an evaluation will run and write (:func:`make_plan`).

    Attributes:
        preset: The preset providing the defaults.
        policies: Policies in report order.
        workloads: Workloads in report order.
        seeds: Seeds.
        cluster: Cluster spec (preset name or dict).
        env_base: Env config shared by all runs (before agent overrides).
        runs: The runs, in the deterministic order.
        out: Output folder.
        workers: Processes.
        notes: Remarks for the report (skipped agents, ...).
        reference: Policy of the paired differences.
        baseline: Policy of the ratios.
        title: The preset's name, or the custom workloads' labels.
    """

    preset: EvaluationPreset
    policies: list[PolicySpec]
    workloads: list[WorkloadSpec]
    seeds: list[int]
    cluster: Any
    env_base: dict[str, Any]
    runs: list[RunSpec]
    out: Path
    workers: int
    notes: list[str]
    reference: str = "thesis"
    baseline: str = "fifo"
    title: str = "thesis"


#: Windows of the baselines on a trace (the env's largest): a real queue runs into the
#: hundreds, and a policy that sees the first 16 jobs by arrival cannot order it (on Philly
#: VC 7f04ca, 972 jobs on 64 GPUs, ``thesis``'s mean JCT is 3.26 M s with windows of 16
#: and 0.92 M s with 1024; ``fifo_pack``'s 3.02 M s and 2.17 M s).
TRACE_WINDOW = 1024


_WINDOW_KEYS = ("pending_window", "running_window")


def _check_sharing(
    policies: Sequence[PolicySpec], env_configs: Mapping[str, Mapping[str, Any]]
) -> None:
    """Refuse a baseline on a workload whose sharing model is not the one it needs
    (``baselines.needs_sharing``: FGD's rules over time need shares; a workload's model
    is its own, an openb pod list's shares, or the one ``--sweep sharing=`` chooses)."""
    import baselines
    from gpushare_env.envs.config import EnvConfig

    needing: dict[str, list[str]] = {}
    for policy in policies:
        if not policy.is_agent:
            need = baselines.needs_sharing(policy.label)
            if need is not None:
                needing.setdefault(need, []).append(policy.label)
    for label, config in env_configs.items():
        sharing = EnvConfig.from_any(dict(config)).simulator.sharing
        for need, labels in needing.items():
            if sharing != need:
                raise PlanError(
                    f"--policies: {', '.join(labels)} place requested shares, and workload "
                    f"{label!r} runs under the {sharing} model; an openb pod list runs "
                    f"under {need} by itself (or --sweep sharing={need})"
                )


def _baseline_spec(label: str, name: str | None = None, params: Any = None) -> PolicySpec:
    """A baseline as ``--policies`` names it: its runs' env offers what it needs
    (``baselines.env_overrides``: the strategies it places with, added to the default
    ones)."""
    import baselines

    return PolicySpec(
        label=label,
        name=name if name is not None else label,
        params=dict(params or {}),
        env_overrides=baselines.env_overrides(label),
    )


def run_config(env_config: Mapping[str, Any], policy: PolicySpec) -> dict[str, Any]:
    """The env config of one policy's runs: a saved agent's recorded settings win, and an
    agent that recorded no windows keeps the env's default ones (its observation has
    their size), never the evaluation's (``TRACE_WINDOW``, ``--window``), unless it plays
    with the evaluation's windows (``PolicySpec.own_windows`` false)."""
    if not policy.own_windows:
        overrides = {k: v for k, v in policy.env_overrides.items() if k not in _WINDOW_KEYS}
        return {**env_config, **overrides}
    config = {**env_config, **policy.env_overrides}
    if policy.is_agent:
        for key in _WINDOW_KEYS:
            if key not in policy.env_overrides:
                config.pop(key, None)
    return config


def seeded(policy: PolicySpec, seed: int) -> PolicySpec:
    """The policy as a run with episode seed ``seed`` plays it: a baseline seeded by
    :func:`~gpushare_env.seeding.policy_seed` of it, unless its name gives a seed
    (``random:seed=5`` wins); a saved agent as it is (it acts deterministically)."""
    if policy.is_agent:
        return policy
    return dataclasses.replace(policy, params={"seed": policy_seed(seed), **policy.params})


def _window_for(workload: WorkloadSpec, window: int | None, preset: EvaluationPreset) -> int | None:
    """The windows a workload's baseline runs get (``None``: the env's default)."""
    if window is not None:
        return window
    if preset.window is not None:
        return preset.window
    return TRACE_WINDOW if workload.trace_jobs is not None else None


def make_plan(
    *,
    preset: str | None = None,
    policies: Sequence[str] | None = None,
    workloads: Sequence[str | Mapping[str, Any]] = (),
    traces: Sequence[str | Path] = (),
    cluster: str | Mapping[str, Any] | None = None,
    seeds: Sequence[int] | None = None,
    num_jobs: int | None = None,
    workers: int | None = None,
    max_decisions: int | None = None,
    out: str | Path | None = None,
    headless: bool | None = None,
    reference: str | None = None,
    baseline: str | None = None,
    gantt: Sequence[str] | None = None,
    jobs_csv: bool = True,
    sweep: Sequence[str] = (),
    window: int | None = None,
    agent_windows: str = "trained",
) -> Plan:
    """Validate a request and lay out its runs (policies x workloads x seeds, in order).

    Every argument left ``None`` / empty takes the preset's value.

    Args:
        preset: Name in :data:`~gpushare_env.presets.EVALUATION_PRESETS`
            (default ``thesis``).
        policies: Baseline names (``NAME:KEY=VALUE`` with parameters, ``all``), saved
            agent paths (``.zip``) and ``zoo``; ``None``: the preset's, else every
            baseline and the shipped agents that fit.
        workloads: Workload preset names or dicts of ``WorkloadConfig`` fields (a
            ``.csv`` / ``.json`` path is taken as a trace).
        traces: Trace files; every policy runs exactly their jobs.
        cluster: Cluster preset name or dict.
        seeds: Episode seeds (sorted, without repeats).
        num_jobs: Jobs per episode (a trace: the first ``num_jobs``).
        workers: Processes (default: every core; never more than runs).
        max_decisions: Decision cap per episode (default
            :data:`~gpushare_eval.specs.DECISIONS_PER_JOB` per job + 10,000).
        out: Output folder (default ``results/<title>``).
        headless: Run heuristics on the simulator without the env (``None``: as the
            preset says, :attr:`~gpushare_env.presets.EvaluationPreset.headless`).
        reference: Policy of the paired differences (``None``: ``thesis``, when it is
            evaluated; a policy named here must be).
        baseline: Policy of the ratios (``None``: ``fifo``, likewise).
        gantt: Policies drawn as Gantt views (``["all"]``, ``["none"]``; default: the
            reference and the baseline).
        jobs_csv: Keep the job records of every run (for ``jobs.csv``).
        sweep: Env-setting grids, ``KEY=V1,V2,...`` each
            (:mod:`~gpushare_eval.sweeps`): every workload runs under every
            combination, as a workload labelled ``NAME[KEY=V,...]``.
        window: Pending and running windows of the baselines' runs, in [1, 1024]: the
            first ``window`` waiting and running jobs they see and may address. ``None``:
            the preset's, else ``TRACE_WINDOW`` on a trace and the env's default (16) on
            a generated workload. Saved agents keep the windows they were trained with,
            unless ``agent_windows`` says otherwise.
        agent_windows: ``"trained"``: saved agents play with their training windows;
            ``"evaluation"``: with the runs' windows, as the baselines (pointer agents,
            rebound to them by ``agents.portable``; others are refused).

    Raises:
        PlanError: Anything unusable, with a one-line message.
    """
    if (preset or "thesis") not in EVALUATION_PRESETS:
        raise PlanError(f"--preset: unknown preset {preset!r}; available: "
                        f"{', '.join(sorted(EVALUATION_PRESETS))}")  # fmt: skip
    chosen = EVALUATION_PRESETS[preset or "thesis"]
    notes: list[str] = []
    seed_list = sorted({int(s) for s in seeds}) if seeds is not None else list(chosen.seeds)
    if not seed_list:
        raise PlanError("--seeds: no seed given")
    if seed_list[0] < 0:
        raise PlanError(f"--seeds: seeds must be >= 0, got {seed_list[0]}")
    for option, value in (("--num-jobs", num_jobs), ("--workers", workers),
                          ("--max-decisions", max_decisions)):  # fmt: skip
        if value is not None and value < 1:
            raise PlanError(f"{option}: expected an integer >= 1, got {value}")
    if num_jobs is not None and num_jobs > MAX_JOBS:
        raise PlanError(f"--num-jobs: at most {MAX_JOBS:,} jobs, got {num_jobs:,}")
    workers = workers or (os.cpu_count() or 1)
    cluster_spec = cluster if cluster is not None else chosen.cluster
    _check_cluster(cluster_spec)
    headless = chosen.headless if headless is None else headless
    if policies is None and chosen.policies is not None:
        policies = list(chosen.policies)
    policy_specs = _resolve_policies(policies, headless, chosen.include_zoo, notes)
    if agent_windows not in AGENT_WINDOWS:
        raise PlanError(
            f"--agent-windows: one of {', '.join(AGENT_WINDOWS)}, got {agent_windows!r}"
        )
    if agent_windows == "evaluation":
        policy_specs = [
            dataclasses.replace(p, own_windows=False) if p.is_agent else p for p in policy_specs
        ]
    workload_specs = _resolve_workloads(workloads, traces, chosen, num_jobs, cluster_spec)
    notes += [note for w in workload_specs if (note := w.trace_cut_note)]
    if window is not None and not 1 <= window <= TRACE_WINDOW:
        raise PlanError(f"--window: expected an integer in [1, {TRACE_WINDOW}], got {window}")
    if window is None and chosen.window is None:
        traced = [w.label for w in workload_specs if w.trace_jobs is not None]
        if traced:
            notes.append(
                f"windows: the baselines see and address the first {TRACE_WINDOW} waiting "
                f"and running jobs on the traces ({', '.join(traced)}; the env's default, "
                "16, hides most of a real queue); --window sets them"
            )
    labels = [p.label for p in policy_specs]
    for option, named in (("--reference", reference), ("--baseline", baseline)):
        if named is not None and named not in labels:
            raise PlanError(
                f"{option}: {named!r} is not among the evaluated policies ({', '.join(labels)})"
            )
    reference = reference if reference is not None else "thesis"
    baseline = baseline if baseline is not None else "fifo"
    gantt_tokens = list(gantt) if gantt is not None else [reference, baseline]
    if [t.lower() for t in gantt_tokens] == ["none"]:
        gantt_policies: set[str] = set()
    elif gantt is not None:
        unknown = [t for t in gantt_tokens if t not in labels and t != "all"]
        if unknown:
            raise PlanError(f"--gantt: {unknown[0]!r} is not among the evaluated policies")
        gantt_policies = set(labels) if "all" in gantt_tokens else set(gantt_tokens)
    else:
        gantt_policies = {t for t in gantt_tokens if t in labels} or {labels[0]}
    env_base: dict[str, Any] = {"cluster": cluster_spec, **dict(chosen.simulator)}
    runs: list[RunSpec] = []
    env_configs: dict[str, dict[str, Any]] = {}
    for workload in workload_specs:
        config = {**env_base, "workload": workload.spec, "num_jobs": workload.num_jobs}
        if workload.cluster is not None:
            config["cluster"] = dict(workload.cluster)
        cap_jobs = workload.size or workload.num_jobs or 100_000
        config["max_decisions"] = max_decisions or DECISIONS_PER_JOB * cap_jobs + 10_000
        size = _window_for(workload, window, chosen)
        if size is not None:
            config["pending_window"] = config["running_window"] = size
        brought = WorkloadConfig.from_any(workload.spec).describe_sharing()
        if brought:  # the workload's own sharing model
            notes.append(f"trace {workload.label}: {brought}, the workload's own")
        env_configs[workload.label] = config
    if sweep:
        workload_specs = _swept_workloads(workload_specs, env_configs, sweep)
    _check_sharing(policy_specs, {w.label: env_configs[w.label] for w in workload_specs})
    if any(p.is_agent for p in policy_specs):
        policy_specs = _check_agents(
            policy_specs, env_configs[workload_specs[0].label], policies is not None, notes
        )
        _note_agent_settings(policy_specs, env_configs[workload_specs[0].label], notes)
    for policy in policy_specs:
        for workload in workload_specs:
            too_big = (workload.size or workload.num_jobs or 0) > GANTT_MAX_JOBS
            for k, seed in enumerate(seed_list):
                config = run_config(env_configs[workload.label], policy)
                runs.append(
                    RunSpec(
                        index=len(runs),
                        policy=seeded(policy, seed),
                        workload=workload,
                        seed=seed,
                        env_config=config,
                        headless=headless,
                        record_series=k == 0,
                        record_gantt=k == 0 and policy.label in gantt_policies and not too_big,
                        keep_jobs=jobs_csv,
                    )
                )
    custom = bool(workloads or traces)
    title = "+".join(w.label for w in workload_specs) if custom else chosen.name
    return Plan(
        preset=chosen,
        policies=policy_specs,
        workloads=workload_specs,
        seeds=seed_list,
        cluster=cluster_spec,
        env_base=env_base,
        runs=runs,
        out=Path(out) if out else Path("results") / safe_name(title),
        workers=max(1, min(workers, len(runs))),
        notes=notes,
        reference=reference,
        baseline=baseline,
        title=title,
    )
