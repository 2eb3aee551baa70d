"""What a saved stable-baselines3 model says about itself, read without loading it.

A model zip holds a JSON ``data`` entry with the policy class (its module and methods) and
the algorithm's hyper-parameters. :func:`algorithm_of` reads the algorithm from it, so a
model file is loaded with the class that trained it whatever sits beside it.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import pickletools
import zipfile
from typing import Any

__all__ = ["ALGORITHM_NAMES", "algorithm_of", "policy_class_name"]

#: The algorithm keys (``TrainConfig.algorithm.algo``) and their SB3 class names.
ALGORITHM_NAMES: dict[str, str] = {"maskable_ppo": "MaskablePPO", "ppo": "PPO", "dqn": "DQN"}


def _data(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The zip's ``data`` entry as JSON; ``ValueError`` naming the file otherwise."""
    try:
        with zipfile.ZipFile(path) as archive:
            text = archive.read("data").decode("utf-8")
        data = json.loads(text)
    except FileNotFoundError:
        raise ValueError(f"{os.fspath(path)}: no such model file") from None
    except (OSError, KeyError, zipfile.BadZipFile, UnicodeDecodeError, json.JSONDecodeError):
        raise ValueError(
            f"{os.fspath(path)}: not a stable-baselines3 model (a zip with a JSON 'data' entry)"
        ) from None
    if not isinstance(data, dict):
        raise ValueError(f"{os.fspath(path)}: its 'data' entry is not a JSON object")
    return data


def policy_class_name(data: dict[str, Any]) -> str:
    """``module.Class`` of the saved policy class, read off its pickled reference without
    importing anything (``""`` if it was pickled by value)."""
    policy = data.get("policy_class")
    if not isinstance(policy, dict):
        return ""
    try:
        raw = base64.b64decode(str(policy.get(":serialized:", "")), validate=True)
        strings: list[str] = []
        for op, arg, _ in pickletools.genops(raw):
            if op.name == "GLOBAL" and isinstance(arg, str):
                return arg.replace(" ", ".")
            if op.name == "STACK_GLOBAL" and len(strings) >= 2:
                return f"{strings[-2]}.{strings[-1]}"
            if isinstance(arg, str):
                strings.append(arg)
    except (binascii.Error, ValueError):
        return ""
    return ""


def algorithm_of(path: str | os.PathLike[str]) -> str:
    """``"maskable_ppo"``, ``"ppo"`` or ``"dqn"``: the algorithm that saved ``path``.

    MaskablePPO: the policy class is named ``Maskable...`` (sb3-contrib's
    ``MaskableMultiInputActorCriticPolicy`` and its kin, this project's
    ``MaskableSlotPolicy``); DQN: the data has DQN's target-network settings; PPO: it has
    an on-policy rollout length.

    Raises:
        ValueError: The file is not a model, or none of the three saved it.
    """
    data = _data(path)
    policy = policy_class_name(data)
    if policy.rpartition(".")[2].startswith("Maskable"):
        return "maskable_ppo"
    if "target_update_interval" in data or "exploration_initial_eps" in data:
        return "dqn"
    if "n_steps" in data and "gae_lambda" in data:
        return "ppo"
    raise ValueError(
        f"{os.fspath(path)}: saved by none of {list(ALGORITHM_NAMES.values())} "
        f"(policy class {policy or 'unknown'!r})"
    )
