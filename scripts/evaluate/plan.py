"""Command-line arguments and the plan they resolve to (policies, workloads, seeds, runs)."""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpushare_env.evaluation.presets import EVALUATION_PRESETS, EvaluationPreset
from scripts.evaluate.common import (
    AGENT_ENV_KEYS,
    DECISIONS_PER_JOB,
    GANTT_MAX_JOBS,
    PROG,
    ZOO_DIR,
    PolicySpec,
    RunSpec,
    UsageError,
    WorkloadSpec,
    _one_line,
    _safe,
)
from scripts.evaluate.running import _agent_algorithm, _load_agent, _make_env


class _Parser(argparse.ArgumentParser):
    """argparse with a one-line error (no usage dump) and exit code 2."""

    def error(self, message: str) -> Any:
        raise UsageError(message)


def build_parser() -> argparse.ArgumentParser:
    """The command-line arguments."""
    parser = _Parser(
        prog=PROG,
        description=__doc__.split("\n\n")[0] if __doc__ else None,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Presets: "
        + "; ".join(f"{p.name}: {p.description}" for p in EVALUATION_PRESETS.values()),
    )
    parser.add_argument(
        "--preset",
        choices=sorted(EVALUATION_PRESETS),
        default=None,
        help="named set-up giving the default workloads, cluster, seeds, jobs (default thesis)",
    )
    parser.add_argument(
        "--policies",
        nargs="+",
        metavar="POLICY",
        help="baseline names (see baselines.available(); 'all' for every one), variants "
        "(baselines.variants(), e.g. gandiva_srpt; not in 'all'), a baseline or variant "
        "with parameters (NAME:KEY=VALUE:..., e.g. thesis:critical_path_factor=inf), saved "
        "agents (path/to/model.zip) and 'zoo' (the agents shipped in agents/zoo); default: "
        "all baselines + the shipped agents that fit the set-up",
    )
    parser.add_argument(
        "--workload",
        action="append",
        metavar="SPEC",
        help="workload preset name (thesis, thesis_poisson, philly, philly_bursty, ...) or "
        "a JSON dict of WorkloadConfig fields; repeatable",
    )
    parser.add_argument(
        "--trace",
        action="append",
        metavar="PATH",
        help="a CSV or Philly JSON trace: every policy runs that exact job list; repeatable",
    )
    parser.add_argument("--cluster", help="cluster preset name or a JSON dict")
    parser.add_argument(
        "--seeds",
        nargs="+",
        metavar="SEED",
        help="episode seeds: integers, ranges like 0-9, or comma lists",
    )
    parser.add_argument(
        "--num-jobs", type=str, metavar="N", help="jobs per episode (a trace: the first N)"
    )
    parser.add_argument(
        "--workers",
        type=str,
        metavar="N",
        help=f"parallel processes (default: all cores, {os.cpu_count()} here)",
    )
    parser.add_argument(
        "--max-decisions",
        metavar="N",
        help=f"truncate an episode after N decisions (default {DECISIONS_PER_JOB} per job "
        "+ 10,000); truncated runs are flagged",
    )
    parser.add_argument("--out", metavar="DIR", help="output folder (default results/<preset>)")
    parser.add_argument(
        "--headless",
        action="store_true",
        help="run heuristics on the simulator without the env (fastest; huge traces)",
    )
    parser.add_argument(
        "--reference", default="thesis", help="policy of the paired differences (thesis)"
    )
    parser.add_argument("--baseline", default="fifo", help="policy of the ratios (fifo)")
    parser.add_argument(
        "--gantt",
        nargs="+",
        metavar="POLICY",
        help="policies drawn as Gantt views on the first seed of each workload "
        "(default: the reference and the baseline; 'none' for no Gantt view)",
    )
    parser.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    parser.add_argument("--no-jobs-csv", action="store_true", help="skip jobs.csv")
    parser.add_argument("--quiet", action="store_true", help="no progress bar, no table")
    return parser


def parse_seeds(tokens: Sequence[str]) -> list[int]:
    """Seeds from tokens like ``3``, ``0-9`` or ``0,1,2`` (sorted, without repeats).

    Raises:
        UsageError: A token that is not a seed or a range, or a negative seed.
    """
    seeds: list[int] = []
    for token in tokens:
        for part in (p.strip() for p in token.split(",")):
            if not part:
                continue
            match = re.fullmatch(r"(\d+)-(\d+)", part)
            if match:
                low, high = int(match.group(1)), int(match.group(2))
                if high < low:
                    raise UsageError(f"--seeds: empty range {part!r}")
                seeds.extend(range(low, high + 1))
                continue
            try:
                seed = int(part)
            except ValueError:
                raise UsageError(
                    f"--seeds: {part!r} is not an integer or a range like 0-9"
                ) from None
            if seed < 0:
                raise UsageError(f"--seeds: seeds must be >= 0, got {seed}")
            seeds.append(seed)
    if not seeds:
        raise UsageError("--seeds: no seed given")
    return sorted(set(seeds))


def _positive_int(text: str | None, option: str) -> int | None:
    """``None`` or an int >= 1 from an option's text."""
    if text is None:
        return None
    try:
        value = int(text)
    except ValueError:
        raise UsageError(f"{option}: expected an integer >= 1, got {text!r}") from None
    if value < 1:
        raise UsageError(f"{option}: expected an integer >= 1, got {value}")
    return value


def _sha256(path: str | Path) -> str:
    """Hex SHA-256 of a file."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _json_arg(text: str, option: str) -> Any:
    """A JSON value from an option, or the text itself when it is not JSON-looking."""
    if not text.lstrip().startswith("{"):
        return text
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise UsageError(f"{option}: invalid JSON: {error.msg}") from None


def _check_cluster(cluster: Any) -> Any:
    """Validate a cluster spec (preset name or dict); returns the built cluster."""
    from gpushare_env.sim import make_cluster

    try:
        return make_cluster(cluster)
    except (TypeError, ValueError) as error:
        raise UsageError(f"--cluster: {_one_line(error)}") from None


def _resolve_workloads(
    args: argparse.Namespace, preset: EvaluationPreset, num_jobs: int | None, cluster: Any
) -> list[WorkloadSpec]:
    """The workloads to run: ``--workload`` / ``--trace``, else the preset's."""
    from gpushare_env.workloads import TraceError, WorkloadConfig, make_workload

    specs: list[WorkloadSpec] = []
    labels: set[str] = set()

    def unique(label: str) -> str:
        candidate, k = label, 2
        while candidate in labels:
            candidate, k = f"{label}_{k}", k + 1
        labels.add(candidate)
        return candidate

    for text in args.workload or []:
        value = _json_arg(text, "--workload")
        if isinstance(value, str) and Path(value).suffix.lower() in (".csv", ".json"):
            args.trace = [*(args.trace or []), value]
            continue
        try:
            config = WorkloadConfig.from_any(value)
        except (TypeError, ValueError) as error:
            raise UsageError(f"--workload: {_one_line(error)}") from None
        if isinstance(value, str):
            label = value
        else:
            base = value.get("preset", config.kind)
            digest = hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()
            label = f"{base}_{digest[:6]}"
        specs.append(WorkloadSpec(unique(label), value, num_jobs or preset.num_jobs))
    for text in args.trace or []:
        path = Path(text).expanduser()
        if not path.is_file():
            raise UsageError(f"--trace: no such file: {text}")
        if path.suffix.lower() not in (".csv", ".json"):
            raise UsageError(f"--trace: {text}: expected a .csv or .json trace")
        try:
            jobs = make_workload(str(path.resolve()), 0, num_jobs=num_jobs,
                                 cluster_gpus=cluster.num_gpus)  # fmt: skip
        except (TraceError, ValueError, OSError) as error:
            raise UsageError(f"--trace: {_one_line(error)}") from None
        if not jobs:
            raise UsageError(f"--trace: {text}: no usable jobs")
        label = unique(path.name)
        specs.append(WorkloadSpec(label, str(path.resolve()), num_jobs, _sha256(path), len(jobs)))
    if not specs:
        specs = [WorkloadSpec(w, w, num_jobs or preset.num_jobs) for w in preset.workloads]
    return specs


def _agent_env_overrides(path: Path) -> dict[str, Any]:
    """Observation-shaping env keys recorded beside a saved agent (``AGENT_ENV_KEYS``).

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
        return {k: data[k] for k in AGENT_ENV_KEYS if k in data}
    return {}


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
    """Split at commas outside brackets (a parameter may be a list: ``[3600, 14400]``)."""
    parts, depth, start = [], 0, 0
    for i, char in enumerate(text):
        depth += {"[": 1, "]": -1}.get(char, 0)
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
    known = [*names, *baselines.variants()]  # 'all' is DESIGN 5's policies only
    specs: list[PolicySpec] = []
    explicit = tokens is not None
    requested = [p.strip() for t in (tokens or ["all"]) for p in _split_commas(t) if p.strip()]
    if not requested:
        raise UsageError("--policies: no policy given")
    paths: list[Path] = []
    for token in requested:
        if token == "all":
            specs.extend(PolicySpec(label=n, name=n) for n in names if n not in
                         {s.label for s in specs})  # fmt: skip
        elif token in known:
            if token not in {s.label for s in specs}:
                specs.append(PolicySpec(label=token, name=token))
        elif token.split(":")[0].strip() in known and ":" in token:
            try:  # a baseline with parameters: check them now, not in every run
                name, params = baselines.parse_spec(token)
                baselines.make(name, **params)
            except (TypeError, ValueError) as exc:
                raise UsageError(f"--policies: {exc}") from None
            if token not in {s.label for s in specs}:
                specs.append(PolicySpec(label=token, name=name, params=params))
        elif token == "zoo":
            if not _zoo_models():
                raise UsageError(f"--policies: no shipped agent in {ZOO_DIR}")
            paths.extend(p for p in _zoo_models() if p not in paths)
        elif token.endswith(".zip"):
            path = Path(token).expanduser()
            if not path.is_file():
                raise UsageError(f"--policies: no such model file: {token}")
            paths.append(path)
        else:
            raise UsageError(
                f"--policies: unknown policy {token!r}; available: {', '.join(names)}; "
                f"variants: {', '.join(baselines.variants())}; or a saved agent "
                "path/to/model.zip"
            )
    if not explicit and include_zoo:
        zoo = _zoo_models()
        if zoo and headless:
            notes.append("shipped agents skipped: --headless runs heuristics only")
        elif zoo and not _rl_available():
            notes.append(
                "shipped agents skipped: torch / sb3-contrib not installed "
                "(pip install 'gpushare[rl]')"
            )
        elif zoo:
            paths.extend(zoo)
    if paths and headless:
        raise UsageError("--headless runs heuristics only; drop the .zip policies")
    if paths and not _rl_available():
        raise UsageError("saved agents need torch and sb3-contrib: pip install 'gpushare[rl]'")
    labels = {s.label for s in specs}
    for path in paths:
        label = path.stem if path.stem not in labels else f"{path.parent.name}/{path.stem}"
        labels.add(label)
        specs.append(
            PolicySpec(
                label=label,
                path=str(path.resolve()),
                env_overrides=_agent_env_overrides(path),
                params={"algorithm": _agent_algorithm(str(path)), "sha256": _sha256(path)},
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
            model = _load_agent(str(policy.path))
            env = _make_env({**env_config, **policy.env_overrides})
            problem = None
            if model.observation_space != env.observation_space:
                problem = (
                    "its observation space differs from this env's (model "
                    f"{_shapes(model.observation_space)}, env {_shapes(env.observation_space)}"
                    "): it was trained for another cluster or other windows"
                )
            elif model.action_space != env.action_space:
                problem = "its action space differs from this env's"
            env.close()
        except Exception as error:  # any load failure is reported the same way
            problem = f"cannot load it: {_one_line(error)}"
        if problem is None:
            kept.append(policy)
        elif explicit:
            raise UsageError(f"--policies: {policy.path}: {problem}")
        else:
            notes.append(f"shipped agent {Path(str(policy.path)).name} skipped: {problem}")
    return kept


@dataclass(slots=True)
class Plan:
    """Everything the command will run and write (built from the arguments).

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


def make_plan(args: argparse.Namespace) -> Plan:
    """Validate the arguments and lay out the runs.

    Raises:
        UsageError: Any bad argument, with a one-line message.
    """
    preset = EVALUATION_PRESETS[args.preset or "thesis"]
    notes: list[str] = []
    seeds = parse_seeds(args.seeds) if args.seeds is not None else list(preset.seeds)
    num_jobs = _positive_int(args.num_jobs, "--num-jobs")
    max_decisions = _positive_int(args.max_decisions, "--max-decisions")
    workers = _positive_int(args.workers, "--workers") or (os.cpu_count() or 1)
    cluster_spec = _json_arg(args.cluster, "--cluster") if args.cluster else preset.cluster
    cluster = _check_cluster(cluster_spec)
    policies = _resolve_policies(args.policies, args.headless, preset.include_zoo, notes)
    workloads = _resolve_workloads(args, preset, num_jobs, cluster)
    labels = [p.label for p in policies]
    gantt_tokens = args.gantt if args.gantt is not None else [args.reference, args.baseline]
    if [t.lower() for t in gantt_tokens] == ["none"]:
        gantt_policies: set[str] = set()
    elif args.gantt is not None:
        unknown = [t for t in gantt_tokens if t not in labels and t != "all"]
        if unknown:
            raise UsageError(f"--gantt: {unknown[0]!r} is not among the evaluated policies")
        gantt_policies = set(labels) if "all" in gantt_tokens else set(gantt_tokens)
    else:
        gantt_policies = {t for t in gantt_tokens if t in labels} or {labels[0]}
    env_base: dict[str, Any] = {"cluster": cluster_spec}
    runs: list[RunSpec] = []
    env_configs: dict[str, dict[str, Any]] = {}
    for workload in workloads:
        config = {**env_base, "workload": workload.spec, "num_jobs": workload.num_jobs}
        cap_jobs = workload.size or workload.num_jobs or 100_000
        config["max_decisions"] = max_decisions or DECISIONS_PER_JOB * cap_jobs + 10_000
        env_configs[workload.label] = config
    if any(p.is_agent for p in policies):
        policies = _check_agents(
            policies, env_configs[workloads[0].label], args.policies is not None, notes
        )
    for policy in policies:
        for workload in workloads:
            too_big = (workload.size or workload.num_jobs or 0) > GANTT_MAX_JOBS
            for k, seed in enumerate(seeds):
                config = {**env_configs[workload.label], **policy.env_overrides}
                # a seed given in the name (random:seed=5) wins over the run's
                params = {**({} if policy.is_agent else {"seed": seed}), **policy.params}
                policy_for_run = (
                    policy if policy.is_agent else dataclasses.replace(policy, params=params)
                )
                runs.append(
                    RunSpec(
                        index=len(runs),
                        policy=policy_for_run,
                        workload=workload,
                        seed=seed,
                        env_config=config,
                        headless=args.headless,
                        record_series=k == 0,
                        record_gantt=k == 0 and policy.label in gantt_policies and not too_big,
                        keep_jobs=not args.no_jobs_csv,
                    )
                )
    custom = bool(args.workload or args.trace)
    title = "+".join(w.label for w in workloads) if custom else preset.name
    out = Path(args.out) if args.out else Path("results") / _safe(title)
    return Plan(
        preset=preset,
        policies=policies,
        workloads=workloads,
        seeds=seeds,
        cluster=cluster_spec,
        env_base=env_base,
        runs=runs,
        out=out,
        workers=max(1, min(workers, len(runs))),
        notes=notes,
        reference=args.reference,
        baseline=args.baseline,
        title=title,
    )
