"""Fuzzing the env's actions: sequences mixing valid actions, integers outside the action
space, and values that are no integer at all.

An integer (Python, numpy, 0-d integer array) is played: a valid one as itself, an invalid
one as ``invalid_action`` says (a penalised no-op, or ``InvalidActionError``). Anything
else raises ``TypeError`` naming it, and changes nothing. Every episode then ends as
documented, terminated with every job finished or truncated with its reason.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpushare_env.envs import GPUShareEnv, InvalidActionError
from tests.fuzz.strategies import FUZZ

#: numpy overflow or an invalid value is a limit missing somewhere: fail on it
pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning")

#: What a step may be handed: a tag, turned into a value against the current mask.
_KINDS = (
    "valid",
    "valid",
    "valid",
    "masked",
    "outside",
    "huge",
    "numpy_int",
    "array_0d",
    "float",
    "numpy_float",
    "bool",
    "numpy_bool",
    "str",
    "none",
    "array_1d",
    "array_0d_float",
    "list",
)


def _action(kind: str, pick: int, mask: np.ndarray) -> tuple[Any, bool | None]:
    """The value of a ``kind`` of action, and whether it is an integer the env plays
    (``True`` valid, ``False`` invalid) or ``None`` for a value the env must refuse."""
    valid = np.flatnonzero(mask)
    masked = np.flatnonzero(~mask)
    size = mask.size
    if kind == "valid" and valid.size:
        return int(valid[pick % valid.size]), True
    if kind == "masked" and masked.size:
        return int(masked[pick % masked.size]), False
    if kind == "outside":
        return [-1, size, size + pick, -(2**31)][pick % 4], False
    if kind == "huge":
        return [2**63, -(2**63) - 1, 10**20, 2**64][pick % 4], False
    if kind == "numpy_int" and valid.size:
        dtype = [np.int8, np.uint16, np.int64, np.uint64][pick % 4]
        return dtype(valid[pick % valid.size]), True
    if kind == "array_0d" and valid.size:
        return np.array(valid[pick % valid.size], dtype=np.int64), True
    values: dict[str, Any] = {
        "float": [-0.5, 3.0, float("nan"), float("inf")][pick % 4],
        "numpy_float": np.float32(-0.5),
        "bool": bool(pick % 2),
        "numpy_bool": np.True_,
        "str": ["3", "advance", ""][pick % 3],
        "none": None,
        "array_1d": np.array([pick % size]),
        "array_0d_float": np.array(1.0),
        "list": [0],
    }
    if kind in values:
        return values[kind], None
    return int(valid[0]) if valid.size else 0, bool(valid.size)  # an empty mask: no choice


@FUZZ
@given(
    moves=st.lists(st.tuples(st.sampled_from(_KINDS), st.integers(0, 10**6)), max_size=60),
    mode=st.sampled_from(["noop", "raise"]),
    seed=st.integers(0, 3),
)
def test_any_action_sequence_plays_or_is_refused_by_its_kind(
    moves: list[tuple[str, int]], mode: str, seed: int
) -> None:
    env = GPUShareEnv(
        {"cluster": "tiny", "workload": "thesis_poisson", "num_jobs": 4, "invalid_action": mode}
    )
    _, info = env.reset(seed=seed)
    over = False
    for kind, pick in moves:
        if over:
            break
        value, plays = _action(kind, pick, info["action_mask"])
        before = (info["decisions"], info["time_s"], info["jobs_done"])
        if plays is None:
            with pytest.raises(TypeError, match="an action must be an integer"):
                env.step(value)
            continue
        if not plays and mode == "raise":
            with pytest.raises(InvalidActionError, match=f"action {int(value)}"):
                env.step(value)
            continue
        *_, terminated, truncated, info = env.step(value)
        assert info["invalid"] == (not plays)
        if not plays:  # a no-op: only the decision count moves
            assert (info["time_s"], info["jobs_done"]) == before[1:]
            assert info["decisions"] == before[0] + 1
            assert info["reward_terms"]["invalid"] == -env.config.reward.invalid_penalty
        over = terminated or truncated
        env.simulator.check_invariants()
    # then play it out: it ends as documented
    steps = 0
    while not over and steps < 500:
        valid = np.flatnonzero(info["action_mask"])
        *_, terminated, truncated, info = env.step(int(valid[0]))
        over = terminated or truncated
        steps += 1
    assert over
    if terminated:
        assert info["jobs_done"] == info["metrics"]["num_jobs"] == 4
    else:
        assert info["truncated_by"] in ("decisions", "time", "deadlock")
    env.simulator.check_invariants()


def test_decode_action_takes_the_same_integers_as_step() -> None:
    env = GPUShareEnv({"cluster": "tiny", "num_jobs": 3})
    env.reset(seed=0)
    advance = env.action_space.n - 1
    assert env.decode_action(np.int64(advance)) == env.decode_action(np.array(advance))
    for bad in (True, 1.0, "1", np.array([advance]), None):
        with pytest.raises(TypeError, match="an action must be an integer"):
            env.decode_action(bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="outside Discrete"):
        env.decode_action(10**20)
