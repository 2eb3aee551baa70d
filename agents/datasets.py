"""Episodes kept as Minari datasets, and behaviour-cloning demonstrations read from them.

`Minari <https://minari.farama.org>`_ is Farama's format for offline-RL data sets. A
``GPUShare-v0`` dataset (written by ``gpushare-collect``,
:func:`gpushare_eval.datasets.collect_dataset`) holds, per episode, the observations
(every key of the ``Dict`` space, ``T + 1`` rows), the actions and rewards (``T``), and
in its infos (``T + 1`` rows, the first from ``reset``) what :data:`INFO_KEYS` lists:
the action mask of each observation, the simulated time and the time the step let run.
Its env spec is the collecting env's (``gym.make("GPUShare-v0", config=...)``), so
``dataset.recover_environment()`` builds the same env.

:func:`demonstrations_from_dataset` turns a dataset into the
:class:`~agents.bc.Demonstrations` that behaviour cloning fits
(``gpushare-train --bc-dataset ID``). Minari is an optional extra
(``pip install 'gpushare-env[minari]'``; Python >= 3.11, numpy >= 2) and is imported only
here, inside the functions.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from agents.bc import Demonstrations

__all__ = [
    "INFO_KEYS",
    "MINARI_MISSING",
    "demonstrations_from_dataset",
    "load_dataset",
    "require_minari",
    "step_info",
]

#: The ``info`` entries a dataset keeps at every step (Minari needs the same keys, types
#: and shapes at every step): ``action_mask`` (the valid actions of the observation,
#: ``(A,)`` bool), ``time_s`` (the simulated clock [s]) and ``elapsed_s`` (the simulated
#: time the step let run [s]; 0 at ``reset``).
INFO_KEYS: tuple[str, ...] = ("action_mask", "time_s", "elapsed_s")

#: The message when Minari is not installed.
MINARI_MISSING = (
    "Minari is not installed: pip install 'gpushare-env[minari]' (needs Python >= 3.11 and "
    "numpy >= 2)"
)


def require_minari() -> Any:
    """The ``minari`` module, or an ``ImportError`` saying how to install it."""
    try:
        import minari
    except ImportError as error:
        raise ImportError(MINARI_MISSING) from error
    return minari


def step_info(info: dict[str, Any]) -> dict[str, Any]:
    """The :data:`INFO_KEYS` of an env ``info`` (``reset``'s or ``step``'s), typed alike."""
    return {
        "action_mask": np.asarray(info["action_mask"], dtype=bool),
        "time_s": float(info.get("time_s", 0.0)),
        "elapsed_s": float(info.get("elapsed_s", 0.0)),
    }


def load_dataset(dataset_id: str) -> Any:
    """``minari.load_dataset(dataset_id)`` from the local datasets (``MINARI_DATASETS_PATH``,
    default ``~/.minari/datasets``).

    Raises:
        ImportError: Minari is not installed.
        ValueError: No such local dataset (the message lists the local ones).
    """
    minari = require_minari()
    local = minari.list_local_datasets()
    if dataset_id not in local:
        known = ", ".join(sorted(local)) or "none"
        raise ValueError(f"no local Minari dataset {dataset_id!r}; local datasets: {known}")
    return minari.load_dataset(dataset_id)


def _check_spaces(dataset: Any, observation_space: Any, action_space: Any) -> None:
    """The dataset's spaces are the learner's (same keys, shapes and action count)."""
    theirs, ours = dataset.observation_space, observation_space
    if ours is not None:
        their_shapes = {k: tuple(v.shape) for k, v in theirs.spaces.items()}
        our_shapes = {k: tuple(v.shape) for k, v in ours.spaces.items()}
        if their_shapes != our_shapes:
            raise ValueError(
                f"dataset {dataset.spec.dataset_id!r}: its observations {their_shapes} are "
                f"not the learner's {our_shapes} (collect it with the training envs' "
                "cluster and windows)"
            )
    if action_space is not None and int(dataset.action_space.n) != int(action_space.n):
        raise ValueError(
            f"dataset {dataset.spec.dataset_id!r}: {dataset.action_space.n} actions, the "
            f"learner has {action_space.n}"
        )


def demonstrations_from_dataset(
    dataset_id: str,
    *,
    gamma: float = 0.99,
    reward_scale: float = 1.0,
    time_constant_s: float | None = None,
    observation_space: Any = None,
    action_space: Any = None,
) -> Demonstrations:
    """Every decision of a Minari dataset as behaviour-cloning demonstrations.

    The decision at step ``t`` is the pair (observation ``t``, action ``t``) under the
    mask of observation ``t`` (the infos' ``action_mask``: ``reset``'s for ``t = 0``); its
    return is the discounted sum of the recorded rewards from ``t`` on, as
    :func:`agents.bc.collect_demonstrations` computes it.

    Args:
        dataset_id: A local Minari dataset (written by ``gpushare-collect``).
        gamma: Discount per decision of the returns.
        reward_scale: Factor on the recorded rewards (the training envs').
        time_constant_s: Discount by simulated time instead (the infos' ``elapsed_s``).
        observation_space: The learner's; the dataset's must have the same keys and
            shapes (``None``: not checked).
        action_space: The learner's; the same number of actions (``None``: not checked).

    Raises:
        ImportError: Minari is not installed.
        ValueError: No such dataset, spaces that differ from the learner's, an episode
            without action masks, or an action its mask forbids.
    """
    from agents.bc import Demonstrations, discounted_returns, step_discounts

    dataset = load_dataset(dataset_id)
    _check_spaces(dataset, observation_space, action_space)
    observations: dict[str, list[np.ndarray]] = {}
    masks: list[np.ndarray] = []
    actions: list[np.ndarray] = []
    returns: list[np.ndarray] = []
    for episode in dataset.iterate_episodes():
        steps = len(episode.actions)
        if "action_mask" not in episode.infos:
            raise ValueError(
                f"dataset {dataset_id!r}, episode {episode.id}: no action_mask in its infos "
                "(record it with gpushare-collect)"
            )
        mask = np.asarray(episode.infos["action_mask"][:steps], dtype=bool)
        action = np.asarray(episode.actions, dtype=np.int64).reshape(steps)
        if steps and not mask[np.arange(steps), action].all():
            bad = int(np.flatnonzero(~mask[np.arange(steps), action])[0])
            raise ValueError(
                f"dataset {dataset_id!r}, episode {episode.id}, step {bad}: action "
                f"{int(action[bad])} is not valid under the recorded mask"
            )
        for key, value in episode.observations.items():
            observations.setdefault(key, []).append(np.asarray(value[:steps], dtype=np.float32))
        masks.append(mask)
        actions.append(action)
        elapsed = episode.infos.get("elapsed_s")
        elapsed_s = [0.0] * steps if elapsed is None else list(np.asarray(elapsed)[1 : steps + 1])
        rewards = np.asarray(episode.rewards, dtype=float) * reward_scale
        returns.append(
            discounted_returns(list(rewards), step_discounts(elapsed_s, gamma, time_constant_s))
        )
    if not actions:
        raise ValueError(f"dataset {dataset_id!r} holds no episode")
    return Demonstrations(
        observations={k: np.concatenate(v) for k, v in observations.items()},
        masks=np.concatenate(masks),
        actions=np.concatenate(actions),
        returns=np.concatenate(returns),
        episodes=len(actions),
        mean_jct_s=[math.nan] * len(actions),
    )
