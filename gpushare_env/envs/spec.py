"""The env's spec as Markdown tables, built from the code: the actions, the observation
columns (the feature registry), the reward terms and the settings (their declarations,
``gpushare_env.sim.setting_table``).

docs/env.md holds these tables between ``<!-- generated: <name> -->`` and
``<!-- end generated: <name> -->`` markers: :func:`update_generated` rewrites them
(``python -m scripts.env_doc``), and a test fails when the page is out of date.
"""

from __future__ import annotations

import re

from gpushare_env.envs.config import FLAT_KEYS, REWARD_COMPONENTS
from gpushare_env.envs.features import BLOCKS, CLUSTER_SUMMARY
from gpushare_env.envs.observation import (
    FRAG_FEATURES,
    GLOBAL_FEATURES,
    GPU_FEATURES,
    pending_features,
    running_features,
)
from gpushare_env.sim.placement import SHARE_RULES, STRATEGIES
from gpushare_env.sim.setting_table import env_settings, sim_settings
from gpushare_env.sim.settings import Setting

__all__ = [
    "CONFIG_DOCS",
    "FEATURE_DOCS",
    "REWARD_DOCS",
    "config_rows",
    "doc_tables",
    "env_spec_markdown",
    "sim_config_rows",
    "update_generated",
]


def _feature_docs() -> dict[str, dict[str, str]]:
    """``FEATURE_DOCS`` from the registry; the running-only and pending-only columns of
    the job rows are listed with the pending ones, their doc saying so."""
    docs = {key: {f.name: f.doc for f in BLOCKS[key]} for key in ("gpus", "frag_hist", "global")}
    pending = {f.name: f for f in BLOCKS["pending"]}
    running = {f.name: f for f in BLOCKS["running"]}
    jobs: dict[str, str] = {}
    for name, feature in {**pending, **running}.items():
        where = (
            "" if name in pending and name in running
            else "pending only" if name in pending
            else "running only"
        )  # fmt: skip
        prefix = ", ".join(p for p in (where, feature.option and f"with {feature.option}") if p)
        jobs[name] = f"{prefix}: {feature.doc}" if prefix else feature.doc
    return {"gpus": docs["gpus"], "cluster": {f.name: f.doc for f in CLUSTER_SUMMARY},
            "frag_hist": docs["frag_hist"], "pending": jobs, "global": docs["global"]}  # fmt: skip


#: Meaning of every observation column (``log_time(t) = min(1, log10(1 + t[s]) / 7)``),
#: from the feature registry (``gpushare_env.envs.features``).
FEATURE_DOCS: dict[str, dict[str, str]] = _feature_docs()

#: Meaning of every reward term (``T = reward.time_scale_s``).
REWARD_DOCS: dict[str, str] = {
    "jct": "-(jobs in system) x elapsed / T; sums to -(total JCT) / T (default weight 1)",
    "makespan": "-elapsed / T from the first arrival to the last completion",
    "utilisation": "+(sum of min(1, U_g) / GPUs) x elapsed / T",
    "slowdown": "-(sum over jobs in system of 1 / solo duration) x elapsed; sums to "
    "-(sum of slowdowns)",
    "starvation": "-(sum of current waits) x elapsed / T^2; sums to -(sum over waiting "
    "stints of (wait / T)^2 / 2)",
    "overhead": "-(GPUs held by suspending / resuming jobs) x elapsed / T; sums to "
    "-(GPU-seconds lost to overheads) / T",
    "invalid": "-reward.invalid_penalty per invalid (no-op) action (default weight 1)",
    "delay": "-(jobs in system - their progress in solo seconds per second) x elapsed / T; "
    "sums to -(total JCT - total solo time) / T: waiting, sharing and overheads",
}


def _meaning(entry: Setting) -> str:
    """A setting's one line, its unit appended (``[s]``)."""
    return f"{entry.doc} [{entry.unit}]" if entry.unit else entry.doc


#: One line per configuration setting, by its path in the nested form (``windows.pending``),
#: in ``EnvConfig.paths()`` order: each setting's declaration's (``setting_table``).
CONFIG_DOCS: dict[str, str] = {entry.path: _meaning(entry) for entry in env_settings()}


def _flat_key(entry: Setting) -> str:
    """How the flat form sets a setting (Markdown): its flat key, or for a key its group's
    settings share, that key with the setting's name (``reward`` (``jct``))."""
    if FLAT_KEYS.get(str(entry.flat)) == entry.path:
        return f"`{entry.flat}`"
    return f"`{entry.flat}` (`{entry.name}`)"


def config_rows() -> list[tuple[str, str, object, str, str]]:
    """``(path, flat key, default, allowed, meaning)`` of every setting of ``EnvConfig``,
    from the declarations (the flat key in Markdown, as the table shows it)."""
    return [
        (entry.path, _flat_key(entry), entry.default, entry.allowed_text(), _meaning(entry))
        for entry in env_settings()
    ]


def sim_config_rows() -> list[tuple[str, str, object, str, str]]:
    """``(name, env path, default, allowed, meaning)`` of every setting of ``SimConfig``
    (the env path ``""`` for the two the env does not expose)."""
    return [
        (entry.name, entry.path if entry.env else "", entry.default, entry.allowed_text(),
         _meaning(entry))
        for entry in sim_settings()
    ]  # fmt: skip


_COLUMNS = {
    "gpus": GPU_FEATURES,
    "cluster": tuple(f.name for f in CLUSTER_SUMMARY),
    "frag_hist": FRAG_FEATURES,
    "pending": pending_features(placement=True, drain=True),
    "running": running_features(held_time=True, placement=True, drain=True, rivals=True),
    "global": GLOBAL_FEATURES,
}
#: The running columns the table lists (the others are the pending columns).
_RUNNING_ONLY = ("speed", "held_time", "shares_gpu", "rival_wait", "rival_remaining")

_SHAPES = {
    "gpus": "G x 6 (flattened)",
    "cluster": "8 x 14 (flattened; one row per GPU type), with observation.cluster_summary, "
    "in place of gpus",
    "frag_hist": "10",
    "pending": "W x 16, +2 with observation.placement, +1 with observation.drain (flattened)",
    "running": "R x 17, +1 with observation.held_time, +1 with observation.placement, +2 "
    "with observation.rivals, +1 with observation.drain (flattened)",
    "global": "15",
}


def _actions_table() -> list[str]:
    return [
        "| index | action |",
        "|---|---|",
        "| `S * slot + s`, slot < W | schedule the slot-th job of the pending window "
        "(waiting jobs by arrival, suspended ones included; `windows.priority` below) with "
        f"strategy s of `strategies` (default `{STRATEGIES}`, S = {len(STRATEGIES)}; under "
        f"`simulator.sharing = shares` also FGD's rules `{SHARE_RULES}`) |",
        "| `S W + j`, j < R | suspend the j-th running job (in start order) |",
        "| `S W + R` | advance to the next event |",
    ]


def _observation_table() -> list[str]:
    out = ["| key | shape | column | meaning |", "|---|---|---|---|"]
    for key, columns in _COLUMNS.items():
        docs = FEATURE_DOCS["pending" if key == "running" else key]
        for i, name in enumerate(columns):
            if key == "running" and name not in _RUNNING_ONLY and i > 0:
                continue
            shape = _SHAPES[key] if i == 0 else ""
            label = f"`{key}`" if i == 0 else ""
            meaning = docs[name]
            if key == "running" and name == "valid":
                meaning = "the pending columns (wait = total wait so far), then:"
                name = "..."
            out.append(f"| {label} | {shape} | `{name}` | {meaning} |")
    return out


def doc_tables() -> dict[str, str]:
    """The generated tables by name (``actions``, ``observation``, ``rewards``,
    ``settings``, ``sim-settings``), each a Markdown table with its header."""
    rewards = ["| term | definition |", "|---|---|"]
    rewards += [f"| `{name}` | {REWARD_DOCS[name]} |" for name in REWARD_COMPONENTS]
    settings = ["| key | flat key | default | allowed | meaning |", "|---|---|---|---|---|"]
    settings += [
        f"| `{path}` | {flat} | `{default!r}` | {allowed} | {meaning} |"
        for path, flat, default, allowed, meaning in config_rows()
    ]
    simulator = ["| setting | env key | default | allowed | meaning |", "|---|---|---|---|---|"]
    simulator += [
        f"| `{name}` | {f'`{path}`' if path else 'none (headless only)'} | `{default!r}` | "
        f"{allowed} | {meaning} |"
        for name, path, default, allowed, meaning in sim_config_rows()
    ]
    tables = {
        "actions": _actions_table(),
        "observation": _observation_table(),
        "rewards": rewards,
        "settings": settings,
        "sim-settings": simulator,
    }
    return {name: "\n".join(rows) for name, rows in tables.items()}


def env_spec_markdown() -> str:
    """Markdown tables of the action layout, observation columns, rewards and settings."""
    tables = doc_tables()
    sections = [
        ("### Actions: `Discrete(S W + R + 1)`", "actions"),
        ("### Observation: `Dict` of flat `float32` `Box`es in [0, 1]", "observation"),
        ("### Rewards", "rewards"),
        ("### Configuration", "settings"),
        ("### Simulator settings (`SimConfig`, headless runs)", "sim-settings"),
    ]
    return "\n\n".join(f"{title}\n\n{tables[name]}" for title, name in sections) + "\n"


def _markers(name: str) -> tuple[str, str]:
    return f"<!-- generated: {name} -->", f"<!-- end generated: {name} -->"


def update_generated(text: str) -> str:
    """``text`` (a Markdown page) with every generated table between its markers
    rewritten from the code (``doc_tables``); the rest unchanged.

    Raises:
        ValueError: A table's markers are missing, or appear more than once.
    """
    for name, table in doc_tables().items():
        begin, end = _markers(name)
        pattern = re.compile(re.escape(begin) + r"\n.*?" + re.escape(end), re.DOTALL)
        found = pattern.findall(text)
        if len(found) != 1:
            raise ValueError(f"the page needs one {begin!r} ... {end!r} block (found {len(found)})")
        text = text.replace(found[0], f"{begin}\n{table}\n{end}")
    return text
