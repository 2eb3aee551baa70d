"""``gpushare-train``: train a learned scheduler on ``GPUShare-v0`` and save it with its recipe.

Examples::

    # the shipped agent's recipe: thesis warm start + MaskablePPO on Philly-style medium
    gpushare-train --preset philly --bc-warmstart 30 --timesteps 200000 --n-envs 2 \\
        --seed 0 --out runs/mppo
    gpushare-train --algo dqn --cluster tiny --workload thesis --num-jobs 10 \\
        --timesteps 2000 --out runs/dqn-tiny
    gpushare-train --resume runs/mppo/model.zip --timesteps 100000 --out runs/mppo2
    # expert-iteration rounds: the clone plays, the rollout planner labels, in 2 processes
    gpushare-train --preset thesis --bc-warmstart 4 --dagger 3 --teacher lookahead:budget=10 \
        --label-workers 2 --timesteps 0 --out runs/ei

The output folder holds ``model.zip``, ``best_model.zip`` (best validation score
against ``thesis``), with ``--bc-warmstart`` ``bc_model.zip`` (the plain clone) and
``dagger_K.zip`` (after DAgger iteration ``K``) and ``labels/`` (each round's teacher
labels: the same command with the same ``--out`` goes on from the first round not
labelled), ``config.json`` (everything needed to reproduce the run) and ``tb/``
(TensorBoard: ``tensorboard --logdir runs``).
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import json
import re
import sys
import types
import typing
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from gpushare_env.seeding import parse_seeds

PROG = "gpushare-train"

#: Choices listed in ``--help`` (the config checks them too).
_CHOICES: dict[str, tuple[str, ...]] = {
    "algo": ("maskable_ppo", "ppo", "dqn"),
    "extractor": ("flat", "perm", "pointer"),
    "vec_env": ("auto", "subproc", "dummy", "ray"),
    "critic": ("features", "context"),
    "select_by": ("mean", "worst"),
}


#: Flags whose name is not the setting's (``--bc-warmstart`` sets ``imitation.bc_episodes``);
#: every other setting ``name`` is ``--name`` with dashes.
_FLAGS: dict[str, tuple[str, ...]] = {
    "bc_episodes": ("--bc-warmstart",),
    "bc_heuristic": ("--teacher", "--bc-teacher"),
    "bc_trace_heuristic": ("--bc-trace-teacher",),
    "bc_sharing_heuristic": ("--bc-sharing-teacher",),
    "bc_learning_rate": ("--bc-lr",),
    "dagger_iterations": ("--dagger",),
    "workloads": ("--workload",),
    "traces": ("--trace",),
    "env_overrides": ("--env",),
    "progress_bar": ("--no-progress",),
}

#: Metavars of flags that read better with one (``--dagger K``).
_METAVARS: dict[str, str] = {
    "bc_episodes": "N",
    "dagger_iterations": "K",
    "bc_suspend_weight": "W",
    "critic_warmup": "STEPS",
    "reward_reference": "HEURISTIC",
    "residual": "HEURISTIC",
    "reference_plays": "N",
    "curriculum_jobs": "N",
    "curriculum_steps": "STEPS",
    "bc_heuristic": "HEURISTIC",
    "bc_trace_heuristic": "HEURISTIC",
    "bc_sharing_heuristic": "MODEL=HEURISTIC",
    "time_constant_h": "TAU",
    "env_overrides": "JSON",
    "train_seeds": "SEEDS",
    "eval_seeds": "SEEDS",
    "net_arch": "SIZES",
    "bc_dataset": "ID",
    "label_workers": "N",
}

#: Settings the ``--preset`` gives unless their flag does.
_FROM_PRESET = ("cluster", "workloads", "num_jobs")


def _seeds(text: str) -> tuple[int, ...]:
    """Parse ``0-99``, ``1,2,5`` or a mix, in order (:func:`gpushare_env.seeding.parse_seeds`)."""
    try:
        return parse_seeds(text, allow_empty=True)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _sizes(text: str) -> tuple[int, ...]:
    """Parse layer sizes ``256,256``."""
    try:
        return tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a list of layer sizes such as 64,64"
        ) from None


def _json_object(text: str) -> dict[str, Any]:
    """Parse a JSON object (``{"jct": 1}``)."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise argparse.ArgumentTypeError(f"not JSON: {error} in {text!r}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"expected a JSON object {{...}}, got {text!r}")
    return value


def _cluster(text: str) -> str | dict[str, Any]:
    """A cluster preset name, or a cluster dict as JSON (``{"nodes": 16, "gpus_per_node": 8}``)."""
    return _json_object(text) if text.lstrip().startswith("{") else text


def _optional(convert: Callable[[str], Any]) -> Callable[[str], Any]:
    """``convert``, or ``None`` for ``none``."""

    def parse(text: str) -> Any:
        return None if text.strip().lower() == "none" else convert(text)

    parse.__name__ = getattr(convert, "__name__", "value")
    return parse


def attribute_docs(cls: type) -> dict[str, str]:
    """The ``Attributes:`` entries of a class docstring, by name, each on one line."""
    docs: dict[str, str] = {}
    lines = inspect.getdoc(cls) or ""
    inside, name = False, ""
    for line in lines.splitlines():
        if line.strip() == "Attributes:":
            inside = True
            continue
        if not inside or not line.strip():
            continue
        if match := re.match(r"^    (\w+): (.*)$", line):
            name = match.group(1)
            docs[name] = match.group(2).strip()
        elif line.startswith("        ") and name:
            docs[name] += " " + line.strip()
        else:
            break
    return {key: text.replace("``", "") for key, text in docs.items()}


def _shown(default: Any) -> str:
    """A default as typed on the command line (``0-99``, ``256,256``, ``none``)."""
    if default is None:
        return "none"
    if isinstance(default, tuple):
        items = list(default)
        if len(items) > 2 and items == list(range(items[0], items[0] + len(items))):
            return f"{items[0]}-{items[-1]}"
        return ",".join(str(item) for item in items) or "none"
    return json.dumps(default) if isinstance(default, dict) else str(default)


def _add_option(
    group: argparse._ArgumentGroup, path: str, hint: Any, default: Any, doc: str
) -> None:
    """One generated option of setting ``path`` (``"imitation.bc_epochs"``)."""
    name = path.split(".", 1)[1]
    flags = _FLAGS.get(name, ("--" + name.replace("_", "-"),))
    shown = "from --preset" if name in _FROM_PRESET else _shown(default)
    help_text = f"{doc} (default: {shown})".replace("%", "%%")
    common: dict[str, Any] = {"dest": path, "default": argparse.SUPPRESS, "help": help_text}
    if name == "progress_bar":
        group.add_argument(*flags, action="store_const", const=False, **common)
        return
    if hint is bool:
        group.add_argument(*flags, action=argparse.BooleanOptionalAction, **common)
        return
    union = typing.get_origin(hint) in (typing.Union, types.UnionType)
    options = [arg for arg in typing.get_args(hint) if arg is not type(None)] if union else [hint]
    base = typing.get_origin(options[0]) or options[0]
    convert: Callable[[str], Any]
    if name == "env_overrides":
        convert = _json_object
    elif base is tuple and typing.get_args(options[0])[0] is int:
        convert = _seeds if name.endswith("seeds") else _sizes
    elif base is tuple:  # of names: the flag is repeated
        kind = _cluster if name == "clusters" else str
        each = name.upper().rstrip("S")
        group.add_argument(*flags, action="append", type=kind, metavar=each, **common)
        return
    elif name == "cluster":
        convert = _cluster
    elif base in (int, float):
        convert = base
    else:
        convert = str
    if union and type(None) in typing.get_args(hint) and convert is not str:
        convert = _optional(convert)
    choices = _CHOICES.get(name)
    metavar = _METAVARS.get(name, None if choices else name.upper())
    group.add_argument(*flags, type=convert, choices=choices, metavar=metavar, **common)


def build_parser() -> argparse.ArgumentParser:
    """The command's argument parser: one option group per ``TrainConfig`` group, its options
    generated from the group's fields (name, type, default, and help from its ``Attributes:``
    docstring), under the flag names of ``_FLAGS``."""
    from agents.train_config import GROUPS

    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Train MaskablePPO (default), PPO or DQN on GPUShare-v0. Each option group "
        "is a group of agents.training.TrainConfig (recorded in config.json).",
    )
    parser.add_argument(
        "--preset",
        default="philly",
        help="evaluation preset giving cluster, workloads and jobs per episode "
        "(default: %(default)s)",
    )
    for group_name, cls in GROUPS.items():
        summary = (inspect.getdoc(cls) or "").splitlines()[0].replace("``", "")
        group = parser.add_argument_group(f"{group_name} (TrainConfig.{group_name})", summary)
        docs = attribute_docs(cls)
        hints = typing.get_type_hints(cls)
        defaults = cls()
        for field in dataclasses.fields(cls):  # type: ignore[arg-type]
            path = f"{group_name}.{field.name}"
            default = getattr(defaults, field.name)
            _add_option(group, path, hints[field.name], default, docs.get(field.name, ""))
        if group_name == "envs":  # shorthands for two env_overrides keys
            group.add_argument(
                "--reward",
                type=_json_object,
                metavar="JSON",
                help='reward weights as JSON, e.g. \'{"jct": 1, "makespan": 0.1}\' '
                "(env_overrides key reward)",
            )
            group.add_argument(
                "--max-suspends-per-job",
                type=int,
                metavar="K",
                help="env key max_suspends_per_job: the suspension budget per job of the "
                "training envs (default 3), which binds the teacher and the reward reference "
                "too",
            )
    return parser


def config_from_args(args: argparse.Namespace) -> Any:
    """The ``TrainConfig`` of parsed arguments: the preset, then the options given."""
    from agents.train_config import GROUPS, TrainConfig

    nested: dict[str, dict[str, Any]] = {name: {} for name in GROUPS}
    for dest, value in vars(args).items():
        if "." in dest:
            group, name = dest.split(".", 1)
            nested[group][name] = tuple(value) if name == "workloads" else value
    env_overrides: dict[str, Any] = dict(nested["envs"].pop("env_overrides", None) or {})
    if args.reward is not None:
        env_overrides["reward"] = args.reward
    if args.max_suspends_per_job is not None:
        env_overrides["max_suspends_per_job"] = args.max_suspends_per_job
    if env_overrides:
        nested["envs"]["env_overrides"] = env_overrides
    return TrainConfig.from_preset(args.preset, **nested)


def check_inputs(config: Any) -> str | None:
    """What the run would fail on only after its set-up, found now (``None``: nothing).

    ``TrainConfig`` checks every setting and the env configs; this adds what needs the
    file system: the model to resume exists, ``out`` is not a file, and each trace
    workload reads (a bad row is named by file, line and field).
    """
    from agents.train_config import trace_paths
    from gpushare_env.workloads import TraceError, WorkloadConfig
    from gpushare_env.workloads.trace_cut import read_trace

    run = config.run
    if run.resume is not None:
        resume = Path(run.resume)
        if not (resume.is_file() or resume.with_name(resume.name + ".zip").is_file()):
            return f"--resume: no model file {str(resume)!r}"
    if Path(run.out).exists() and not Path(run.out).is_dir():
        return f"--out: {str(run.out)!r} is a file, not a folder"
    for workload in config.envs.workloads:
        spec = WorkloadConfig.from_any(workload)
        if spec.kind == "trace":
            try:
                read_trace(spec, config.envs.num_jobs)
            except TraceError as error:
                return f"--workload: {error}"
    for path in trace_paths(config.envs):
        if not Path(path).is_file():
            return f"--trace: no such file: {path}"
        try:
            read_trace(WorkloadConfig(kind="trace", path=path))
        except TraceError as error:
            return f"--trace: {error}"
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``gpushare-train``; returns the exit status (a bad option exits 2
    with a usage message, before anything is built)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        config = config_from_args(args)
    except (TypeError, ValueError) as error:
        parser.error(str(error))
    problem = check_inputs(config)
    if problem is not None:
        parser.error(problem)
    from agents.training import train

    command = [PROG, *(sys.argv[1:] if argv is None else list(argv))]
    path = train(config, command=command)
    print(f"saved {path} (recipe in {Path(path).parent / 'config.json'})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
