"""The one interface every baseline implements.

A baseline decides from the simulator's read-only ``SimView`` (``decide``). The same
object drives the headless runner (``gpushare_env.runner.run_headless``) and, bound to a
``GPUShare-v0`` env, acts through the env's action space with stable-baselines3's
``predict`` protocol, so one evaluation loop serves heuristics and learned agents.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gpushare_env.sim import Decision, SimView

__all__ = ["Policy"]


class Policy:
    """Base class: subclasses set ``name`` and implement ``decide``.

    Args:
        env: A ``GPUShare-v0`` env (wrapped or not) the policy acts in through ``predict``;
            ``None`` for headless use.
        seed: Seed of the policy's own generator (only ``random`` draws from it).
    """

    name = "policy"

    def __init__(self, env: Any = None, seed: int | None = 0) -> None:
        self.env = env
        self.rng = np.random.default_rng(seed)
        self.pending_window: int | None = None
        self.running_window: int | None = None
        self._view: SimView | None = None

    def reset(
        self, view: SimView, pending_window: int | None = None, running_window: int | None = None
    ) -> None:
        """Start an episode; ``pending_window`` / ``running_window`` bound what is visible."""
        self._view = view
        self.pending_window = pending_window
        self.running_window = running_window

    def decide(self, view: SimView) -> Decision:
        """The next decision at the current instant."""
        raise NotImplementedError

    # ----------------------------------------------------- SB3 predict protocol
    def predict(
        self,
        observation: Any,
        state: Any = None,
        episode_start: Any = None,
        deterministic: bool = True,
    ) -> tuple[np.ndarray, Any]:
        """SB3-style ``predict``: reads the bound env's view and returns an action index."""
        if self.env is None:
            raise RuntimeError(f"{self.name}: predict() needs the env given to baselines.make")
        env = self.env.unwrapped
        view = env.view
        if self._view is not view:
            self.reset(view, env.config.pending_window, env.config.running_window)
        action = env.encode_decision(self.decide(view))
        return np.asarray(action), state
