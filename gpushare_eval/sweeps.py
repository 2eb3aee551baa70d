"""Parameter sweeps: grids of heuristic parameters and env settings, and their table.

Two grids, which multiply (and run on either backend, as any evaluation):

* **A policy grid** in ``--policies``: braces list a parameter's values,
  ``thesis:max_suspends={2,4,8}`` is three policies (``thesis:max_suspends=2``, ...);
  several braces make their product. (Unquoted in a shell, bash expands the braces the
  same way; brackets stay a list-valued parameter, ``[3600, 14400]``.)
* **An env-setting grid**, ``--sweep KEY=V1,V2,...`` (repeatable): every workload runs
  under each setting, as a workload of its own labelled ``thesis[max_suspends_per_job=1]``.
  ``KEY`` is any ``GPUShare-v0`` config key (flat, as ``max_suspends_per_job``); a value
  is JSON (``1``, ``0.5``, ``null``, ``"tiny"``), ``None``, or a bare string.

:func:`sweep_table` turns the recorded rows into one tidy table, one row per swept
parameter, value and the rest of the configuration (the policy without that parameter,
the workload without that setting), with the mean of every headline metric over its
complete runs; ``gpushare-evaluate`` writes it as ``sweep.csv`` and draws one plot per
swept parameter (``plots/sweep_<parameter>.png``: mean JCT against the value).
"""

from __future__ import annotations

import csv
import itertools
import json
import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from gpushare_eval.report import HEADLINE_METRICS, RunStatus
from gpushare_eval.specs import PlanError, safe_name

__all__ = [
    "SWEEP_COLUMNS",
    "expand_grid",
    "parse_sweep",
    "setting_label",
    "sweep_table",
    "write_sweep",
]

#: Columns of ``sweep.csv`` (then the mean of each headline metric).
SWEEP_COLUMNS: tuple[str, ...] = ("parameter", "value", "policy", "workload", "runs")

_BRACES = re.compile(r"\{([^{}]*)\}")


def expand_grid(token: str) -> list[str]:
    """``"thesis:a={1,2}:b={x,y}"`` -> the four tokens of the product, in order; a token
    without braces is itself."""
    groups = _BRACES.findall(token)
    if not groups:
        return [token]
    pieces = _BRACES.split(token)  # text, group, text, group, ..., text
    choices = [[v.strip() for v in group.split(",")] for group in groups]
    if any(not v for values in choices for v in values):
        raise PlanError(f"--policies: {token!r}: an empty value in braces")
    expanded = []
    for combo in itertools.product(*choices):
        parts = [pieces[0]]
        for value, text in zip(combo, pieces[2::2], strict=True):
            parts += [value, text]
        expanded.append("".join(parts))
    return expanded


def parse_sweep(text: str) -> tuple[str, list[Any]]:
    """``"max_suspends_per_job=1,3,None"`` -> ``("max_suspends_per_job", [1, 3, None])``.

    Raises:
        PlanError: No ``=``, no key, or no value.
    """
    key, sep, values = text.partition("=")
    key = key.strip()
    if not sep or not key or not values.strip():
        raise PlanError(f"--sweep: expected KEY=V1,V2,..., got {text!r}")
    from baselines import parse_value  # the spelling of policy parameters

    parsed = [parse_value(v.strip()) for v in values.split(",") if v.strip()]
    unique: list[Any] = []
    for value in parsed:
        if value not in unique:
            unique.append(value)
    return key, unique


def setting_label(settings: Mapping[str, Any]) -> str:
    """``[key=value,...]``, the suffix of a workload run under env settings."""
    return "[" + ",".join(f"{k}={_text(v)}" for k, v in settings.items()) + "]"


def _text(value: Any) -> str:
    return "None" if value is None else value if isinstance(value, str) else json.dumps(value)


def _policy_parts(label: str) -> tuple[str, list[tuple[str, str]]]:
    """``"thesis:a=1:b=2"`` -> ``("thesis", [("a", "1"), ("b", "2")])``."""
    name, *rest = label.split(":")
    return name, [_pair(p) for p in rest if "=" in p]


def _workload_parts(label: str) -> tuple[str, list[tuple[str, str]]]:
    """``"thesis[a=1,b=2]"`` -> ``("thesis", [("a", "1"), ("b", "2")])``."""
    match = re.fullmatch(r"(.*)\[([^\[\]]*)\]", label)
    if not match:
        return label, []
    return match.group(1), [_pair(p) for p in match.group(2).split(",") if "=" in p]


def _pair(text: str) -> tuple[str, str]:
    key, _, value = text.partition("=")
    return key, value


def _policy_label(name: str, params: Sequence[tuple[str, str]]) -> str:
    return ":".join([name, *(f"{k}={v}" for k, v in params)])


def _workload_label(name: str, settings: Sequence[tuple[str, str]]) -> str:
    return name + ("[" + ",".join(f"{k}={v}" for k, v in settings) + "]" if settings else "")


def sweep_table(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The tidy sweep table of ``runs.csv`` rows (empty when nothing was swept).

    A policy parameter is swept when one baseline's labels give it more than one value
    (its rows name it ``NAME:KEY``); an env setting, when the workloads' settings do
    (``KEY``). Means are over complete runs; ``runs`` counts them.
    """
    complete = [r for r in rows if r.get("status", RunStatus.COMPLETE.value) == "complete"]
    cells: dict[tuple[str, str, str, str], list[Mapping[str, Any]]] = {}
    order: list[tuple[str, str, str, str]] = []

    def add(key: tuple[str, str, str, str], row: Mapping[str, Any]) -> None:
        if key not in cells:
            cells[key] = []
            order.append(key)
        cells[key].append(row)

    policy_values: dict[str, set[str]] = {}
    setting_values: dict[str, set[str]] = {}
    for row in rows:
        name, params = _policy_parts(str(row["policy"]))
        for k, v in params:
            policy_values.setdefault(f"{name}:{k}", set()).add(v)
        for k, v in _workload_parts(str(row["workload"]))[1]:
            setting_values.setdefault(k, set()).add(v)
    for row in complete:
        name, params = _policy_parts(str(row["policy"]))
        base, settings = _workload_parts(str(row["workload"]))
        for i, (k, v) in enumerate(params):
            if len(policy_values[f"{name}:{k}"]) > 1:
                rest = _policy_label(name, params[:i] + params[i + 1 :])
                add((f"{name}:{k}", v, rest, str(row["workload"])), row)
        for i, (k, v) in enumerate(settings):
            if len(setting_values[k]) > 1:
                rest = _workload_label(base, settings[:i] + settings[i + 1 :])
                add((k, v, str(row["policy"]), rest), row)
    parameters = list(dict.fromkeys(key[0] for key in order))
    order.sort(key=lambda key: parameters.index(key[0]))  # stable: values stay in plan order
    table = []
    for key in order:
        runs = cells[key]
        entry: dict[str, Any] = dict(zip(SWEEP_COLUMNS, (*key, len(runs)), strict=True))
        for metric in HEADLINE_METRICS:
            values = [float(r[metric]) for r in runs if r.get(metric) not in (None, "")]
            values = [v for v in values if not math.isnan(v)]
            entry[metric] = sum(values) / len(values) if values else math.nan
        table.append(entry)
    return table


def write_sweep(
    out: Path, rows: Sequence[Mapping[str, Any]], plots: bool, metric: str = "mean_jct_s"
) -> list[Path]:
    """Write ``sweep.csv`` and, with ``plots``, one plot per swept parameter; returns the
    plots written. Nothing is written when nothing was swept."""
    table = sweep_table(rows)
    if not table:
        return []
    with open(out / "sweep.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=[*SWEEP_COLUMNS, *HEADLINE_METRICS])
        writer.writeheader()
        writer.writerows(table)
    if not plots:
        return []
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    written = []
    folder = out / "plots"
    folder.mkdir(exist_ok=True)
    for parameter in dict.fromkeys(e["parameter"] for e in table):
        entries = [e for e in table if e["parameter"] == parameter]
        values = list(dict.fromkeys(e["value"] for e in entries))
        fig, ax = plt.subplots(figsize=(6, 4))
        for line in dict.fromkeys((e["policy"], e["workload"]) for e in entries):
            points = {
                e["value"]: e[metric] for e in entries if (e["policy"], e["workload"]) == line
            }
            xs = [i for i, v in enumerate(values) if v in points]
            ax.plot(xs, [points[values[i]] for i in xs], marker="o", label=" / ".join(line))
        ax.set_xticks(range(len(values)), values)
        ax.set_xlabel(parameter)
        ax.set_ylabel(f"{metric} (mean over complete runs)")
        ax.legend(fontsize="small")
        fig.tight_layout()
        path = folder / f"sweep_{safe_name(parameter)}.png"
        fig.savefig(path, dpi=100)
        plt.close(fig)
        written.append(path)
    return written
