"""Behaviour cloning of a heuristic as a warm start for the learned policies.

The heuristics act through the env's own action space (``predict`` returns action
indices), so imitation is plain supervised learning: record (observation, mask, action,
return) along heuristic episodes of the training seeds, then minimise the cross-entropy
of the heuristic's action under the policy's *masked* logits (invalid actions get
``-inf``), plus, for actor-critic policies, the squared error of the value head against
the heuristic's discounted (scaled) returns, so PPO's fine-tuning starts from a critic
that already knows the scale of the rewards.
"""

from __future__ import annotations

import math
import os
import pickle
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.nn import functional as F

from agents.envs import make_env
from gpushare_env.rollout import Step, predict_action, rollout
from gpushare_env.seeding import policy_seed

__all__ = [
    "Demonstrations",
    "clone",
    "collect_demonstrations",
    "dagger",
    "discounted_returns",
    "label_pool",
    "load_demonstrations",
    "masked_logits_and_values",
    "save_demonstrations",
    "step_discounts",
]

_NEG = -1e9


@dataclass(slots=True)
class Demonstrations:
    """Decisions of a heuristic along whole episodes.

    Attributes:
        observations: Observation arrays by key.  # each (N, d)
        masks: Valid-action masks.  # (N, A) bool
        actions: The heuristic's actions.  # (N,)
        returns: Discounted returns of the scaled reward from each decision.  # (N,)
        episodes: Number of episodes.
        mean_jct_s: The heuristic's mean JCT per episode.  # [s]
    """

    observations: dict[str, np.ndarray]
    masks: np.ndarray
    actions: np.ndarray
    returns: np.ndarray
    episodes: int
    mean_jct_s: list[float]

    def __len__(self) -> int:
        return int(self.actions.shape[0])

    def extend(self, other: Demonstrations) -> Demonstrations:
        """Both data sets in one (DAgger's aggregation)."""
        return Demonstrations(
            observations={
                k: np.concatenate([v, other.observations[k]]) for k, v in self.observations.items()
            },
            masks=np.concatenate([self.masks, other.masks]),
            actions=np.concatenate([self.actions, other.actions]),
            returns=np.concatenate([self.returns, other.returns]),
            episodes=self.episodes + other.episodes,
            mean_jct_s=[*self.mean_jct_s, *other.mean_jct_s],
        )


_OBS = "observation."


def save_demonstrations(demos: Demonstrations, path: str | Path) -> None:
    """Write ``demos`` to ``path`` (``.npz``), whole or not at all (a temporary file
    renamed), so an interrupted run leaves no half-written labels."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    arrays: dict[str, Any] = {
        "masks": demos.masks,
        "actions": demos.actions,
        "returns": demos.returns,
        "episodes": np.asarray(demos.episodes),
        "mean_jct_s": np.asarray(demos.mean_jct_s, dtype=np.float64),
        **{_OBS + key: value for key, value in demos.observations.items()},
    }
    with partial.open("wb") as file:
        np.savez(file, **arrays)
    os.replace(partial, path)


def load_demonstrations(path: str | Path) -> Demonstrations:
    """The data set :func:`save_demonstrations` wrote."""
    with np.load(Path(path)) as data:
        return Demonstrations(
            observations={k[len(_OBS) :]: data[k] for k in data.files if k.startswith(_OBS)},
            masks=data["masks"],
            actions=data["actions"],
            returns=data["returns"],
            episodes=int(data["episodes"]),
            mean_jct_s=[float(x) for x in data["mean_jct_s"]],
        )


class _Labelled:
    """A policy that acts as ``driver`` (the teacher itself when ``None``) and records
    the teacher's label of every state it is asked about (DAgger's labelling). With
    ``propose``, a teacher that takes proposals (``lookahead``'s ``suggest``) is first
    given the driver's own action in that state as one more candidate."""

    def __init__(self, teacher: Any, driver: Any = None, propose: bool = False) -> None:
        self.teacher = teacher
        self.driver = driver
        self.propose = propose and driver is not None and hasattr(teacher, "suggest")
        self.labels: list[int] = []

    def predict(
        self,
        observation: Any,
        state: Any = None,
        episode_start: Any = None,
        deterministic: bool = True,
        action_masks: np.ndarray | None = None,
    ) -> tuple[np.ndarray, Any]:
        """The driver's (deterministic, masked) action; the teacher's label is kept."""
        action = None
        if self.driver is not None:
            action = predict_action(self.driver, observation, action_masks)
            if self.propose:
                self.teacher.suggest(self.teacher.env.unwrapped.decode_action(action))
        label, _ = self.teacher.predict(observation, deterministic=True)
        self.labels.append(int(label))
        return np.asarray(label if action is None else action), state


def step_discounts(
    elapsed_s: Sequence[float], gamma: float, time_constant_s: float | None = None
) -> list[float]:
    """Each step's discount: ``gamma`` per decision, or with ``time_constant_s``
    ``exp(-elapsed_s / time_constant_s)`` (discounting by simulated time, ``agents.smdp``).

    Args:
        elapsed_s: Simulated time each step let run (``info["elapsed_s"]``).  # (T,) [s]
        gamma: Discount per decision.
        time_constant_s: Time constant of the discount by time, or ``None``.
    """
    if time_constant_s is None:
        return [gamma] * len(elapsed_s)
    return [math.exp(-float(dt) / time_constant_s) for dt in elapsed_s]


def discounted_returns(rewards: Sequence[float], discounts: Sequence[float]) -> np.ndarray:
    """The discounted return from each step: ``G_t = r_t + discounts[t] * G_{t+1}``.

    Args:
        rewards: Rewards of an episode's steps.  # (T,)
        discounts: Discount applied after each step.  # (T,)

    Returns:
        The returns.  # (T,) float32
    """
    returns = np.zeros(len(rewards), dtype=np.float32)
    running = 0.0
    for t in range(len(rewards) - 1, -1, -1):
        running = float(rewards[t]) + float(discounts[t]) * running
        returns[t] = running
    return returns


def _episode(
    env_config: Mapping[str, Any],
    name: str,
    seed: int,
    driver: Any,
    gamma: float,
    reward_scale: float,
    time_constant_s: float | None,
    propose: bool = False,
) -> Demonstrations:
    """One episode's decisions, labelled by ``name`` (see :func:`collect_demonstrations`)."""
    import baselines

    env = make_env(env_config)  # the learner's rules bind the teacher too
    teacher = _Labelled(baselines.make(name, env, seed=policy_seed(int(seed))), driver, propose)
    steps: list[Step] = []
    episode = rollout(teacher, env, seed=int(seed), callback=steps.append)
    keys = list(steps[0].observation) if steps else []
    part = Demonstrations(
        observations={
            k: np.stack([np.asarray(s.observation[k], dtype=np.float32) for s in steps])
            for k in keys
        },
        masks=(
            np.stack([np.asarray(s.action_mask) for s in steps]).astype(bool)
            if steps
            else np.zeros((0, 0), dtype=bool)
        ),
        actions=np.asarray(teacher.labels, dtype=np.int64),
        returns=discounted_returns(
            [step.reward * reward_scale for step in steps],
            step_discounts([s.info.get("elapsed_s", 0.0) for s in steps], gamma, time_constant_s),
        ),
        episodes=1,
        mean_jct_s=[float(episode.metrics.get("mean_jct_s", np.nan))],
    )
    env.close()
    return part


def _label_in_worker(
    env_config: Mapping[str, Any],
    name: str,
    seed: int,
    driver: bytes | None,
    gamma: float,
    reward_scale: float,
    time_constant_s: float | None,
    propose: bool = False,
) -> Demonstrations:
    """:func:`_episode` in a labelling process (``driver``: the pickled policy)."""
    policy = None if driver is None else pickle.loads(driver)
    return _episode(env_config, name, seed, policy, gamma, reward_scale, time_constant_s, propose)


def label_pool(workers: int) -> Executor:
    """A pool of ``workers`` labelling processes for :func:`collect_demonstrations`
    (``spawn``: fresh interpreters, each with one torch thread); close it when done."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from agents import eval_worker

    return ProcessPoolExecutor(
        max_workers=int(workers),
        mp_context=multiprocessing.get_context("spawn"),
        initializer=eval_worker.init_worker,
        initargs=(1,),
    )


def _joined(parts: Sequence[Demonstrations]) -> Demonstrations:
    """The episodes' decisions in order, as one data set."""
    filled = [part for part in parts if len(part)]
    if not filled:
        raise ValueError("collect_demonstrations: the episodes made no decision")
    keys = list(filled[0].observations)
    return Demonstrations(
        observations={k: np.concatenate([p.observations[k] for p in filled]) for k in keys},
        masks=np.concatenate([p.masks for p in filled]),
        actions=np.concatenate([p.actions for p in filled]),
        returns=np.concatenate([p.returns for p in filled]),
        episodes=sum(p.episodes for p in parts),
        mean_jct_s=[jct for p in parts for jct in p.mean_jct_s],
    )


def collect_demonstrations(
    env_configs: Sequence[Mapping[str, Any]],
    seeds: Sequence[int],
    heuristic: str | Sequence[str] = "thesis",
    gamma: float = 0.99,
    reward_scale: float = 1.0,
    driver: Any = None,
    time_constant_s: float | None = None,
    pool: Executor | None = None,
    propose: bool = False,
) -> Demonstrations:
    """Record ``heuristic``'s decision at every state of one episode per (config, seed).

    The teacher acts (or labels) under the same env config as the learner, suspension
    rules included: it reads them through ``SimView.can_suspend``, so its labels are
    actions the learner's mask allows.

    Args:
        env_configs: Env configs (alternated over the seeds: seed ``i`` uses config
            ``i % len``).
        seeds: Training episode seeds.
        heuristic: A name ``baselines.make`` takes (``available()`` or ``variants()``,
            with parameters or not, ``lookahead:budget=10`` too), or one per env config
            (the teacher of config ``k``).
        gamma: Discount per decision of the recorded returns (the RL algorithm's).
        reward_scale: Factor on the rewards (the training envs').
        driver: ``None``: the heuristic also acts (plain demonstrations). An SB3 model:
            it acts (deterministically, masked) while the heuristic only labels the states
            it visits (DAgger), so the clone learns to recover from its own mistakes.
        time_constant_s: Discount by simulated time instead (``agents.smdp``): a step
            that lets time run by ``dt`` counts ``exp(-dt / time_constant_s)``.
        pool: Label the episodes in these processes (:func:`label_pool`), each a whole
            episode with its own seed, gathered in seed order: the same data set as
            without (``None``: here, one after another). The driver plays there as its
            policy (``driver.policy``, deterministic actions as the model's).
        propose: With a driver: a teacher that takes proposals (``lookahead``) also rolls
            out the driver's action in each state as a candidate (expert iteration's
            search starting from the network); other teachers ignore it.
    """
    names = [heuristic] * len(env_configs) if isinstance(heuristic, str) else list(heuristic)
    if len(names) != len(env_configs):
        raise ValueError(
            f"collect_demonstrations: {len(names)} teachers for {len(env_configs)} env configs"
        )
    jobs = [
        (env_configs[i % len(env_configs)], names[i % len(env_configs)], int(seed))
        for i, seed in enumerate(seeds)
    ]
    if pool is None:
        parts = [
            _episode(config, name, seed, driver, gamma, reward_scale, time_constant_s, propose)
            for config, name, seed in jobs
        ]
    else:
        policy = None if driver is None else pickle.dumps(getattr(driver, "policy", driver))
        args = (gamma, reward_scale, time_constant_s, propose)
        futures = [
            pool.submit(_label_in_worker, dict(config), name, seed, policy, *args)
            for config, name, seed in jobs
        ]
        parts = [future.result() for future in futures]
    return _joined(parts)


def masked_logits_and_values(
    model: Any, obs: dict[str, torch.Tensor], masks: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The policy's action logits with invalid actions at ``-1e9``, and its values.

    Works for ``PPO`` / ``MaskablePPO`` (actor-critic: logits of ``action_net``, values of
    ``value_net``) and ``DQN`` (Q-values as logits, no values).
    """
    policy = model.policy
    if hasattr(policy, "q_net"):
        logits = policy.q_net(obs)
        values = None
    else:
        features = policy.extract_features(obs)
        if isinstance(features, tuple):
            latent_pi = policy.mlp_extractor.forward_actor(features[0])
            latent_vf = policy.mlp_extractor.forward_critic(features[1])
        else:
            latent_pi, latent_vf = policy.mlp_extractor(features)
        logits = policy.action_net(latent_pi)
        values = policy.value_net(latent_vf).squeeze(-1)
    return logits.masked_fill(~masks, _NEG), values


def clone(
    model: Any,
    demos: Demonstrations,
    epochs: int = 10,
    batch_size: int = 256,
    learning_rate: float = 1e-3,
    value_coef: float = 0.5,
    seed: int = 0,
    log: Any = None,
    action_weights: np.ndarray | None = None,
) -> list[dict[str, float]]:
    """Fit ``model``'s policy to the demonstrations (in place); per-epoch loss and accuracy.

    Args:
        model: A ``MaskablePPO``, ``PPO`` or ``DQN`` model.
        demos: Recorded heuristic decisions.
        epochs: Passes over the data.
        batch_size: Minibatch size.
        learning_rate: Adam step size (its own optimiser; the model's is left alone).
        value_coef: Weight of the value loss (actor-critic only).
        seed: Seed of the minibatch order.
        log: Optional callable ``log(epoch_summary)``.
        action_weights: Weight of each action's labels in the cross-entropy (a weighted
            mean), e.g. rare decisions up (``None``: all 1).  # (A,)
    """
    policy = model.policy
    policy.set_training_mode(True)
    device = policy.device
    optimiser = torch.optim.Adam(policy.parameters(), lr=learning_rate)
    rng = np.random.default_rng(seed)
    obs_all = {k: torch.as_tensor(v, device=device) for k, v in demos.observations.items()}
    masks_all = torch.as_tensor(demos.masks, device=device)
    actions_all = torch.as_tensor(demos.actions, device=device)
    returns_all = torch.as_tensor(demos.returns, device=device)
    weights_all = None
    if action_weights is not None:
        weights_all = torch.as_tensor(action_weights, dtype=torch.float32, device=device)
        weights_all = weights_all[actions_all]
    history: list[dict[str, float]] = []
    for epoch in range(epochs):
        order = torch.as_tensor(rng.permutation(len(demos)), device=device)
        totals = {"policy_loss": 0.0, "value_loss": 0.0, "accuracy": 0.0}
        for start in range(0, len(demos), batch_size):
            idx = order[start : start + batch_size]
            obs = {k: v[idx] for k, v in obs_all.items()}
            logits, values = masked_logits_and_values(model, obs, masks_all[idx])
            if weights_all is None:
                policy_loss = F.cross_entropy(logits, actions_all[idx])
            else:
                weights = weights_all[idx]
                losses = F.cross_entropy(logits, actions_all[idx], reduction="none")
                policy_loss = (losses * weights).sum() / weights.sum()
            loss = policy_loss
            value_loss = torch.zeros(())
            if values is not None and value_coef > 0:
                value_loss = F.mse_loss(values, returns_all[idx])
                loss = loss + value_coef * value_loss
            optimiser.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(policy.parameters(), 1.0)
            optimiser.step()
            n = int(idx.shape[0])
            totals["policy_loss"] += policy_loss.item() * n
            totals["value_loss"] += value_loss.item() * n
            totals["accuracy"] += (logits.argmax(-1) == actions_all[idx]).float().sum().item()
        summary = {k: v / len(demos) for k, v in totals.items()}
        summary["epoch"] = float(epoch)
        history.append(summary)
        if log is not None:
            log(summary)
    if hasattr(policy, "q_net_target"):
        policy.q_net_target.load_state_dict(policy.q_net.state_dict())
    policy.set_training_mode(False)
    return history


def dagger(
    model: Any,
    demos: Demonstrations,
    env_configs: Sequence[Mapping[str, Any]],
    seeds: Sequence[int],
    iterations: int,
    episodes_per_iteration: int,
    heuristic: str | Sequence[str] = "thesis",
    gamma: float = 0.99,
    reward_scale: float = 1.0,
    epochs: int = 3,
    batch_size: int = 256,
    learning_rate: float = 3e-4,
    log: Any = None,
    time_constant_s: float | None = None,
    action_weights: np.ndarray | None = None,
    pool: Executor | None = None,
    labels_dir: str | Path | None = None,
    propose: bool = False,
) -> tuple[Demonstrations, list[dict[str, float]]]:
    """DAgger (Ross et al., 2011) after behaviour cloning: the clone drives, the heuristic labels.

    Each iteration plays ``episodes_per_iteration`` new episodes (the next seeds of
    ``seeds``) with the current clone, records the heuristic's action at every state the
    clone visits, aggregates them with everything recorded so far and refits for
    ``epochs``. The clone's compounding errors (states the heuristic never visits) are
    what plain cloning cannot fix. ``action_weights`` weighs the labels in the refits
    (:func:`clone`). ``pool`` labels in processes (:func:`collect_demonstrations`).
    ``propose``: a teacher that takes proposals (``lookahead``) also rolls out the clone's
    own action in each state (:func:`collect_demonstrations`): expert iteration.

    With ``labels_dir``, iteration ``i``'s labels are saved as ``dagger_<i>.npz`` there,
    and an iteration whose file exists is not played nor labelled again: its labels are
    read back and the refit runs as before (a run restarted after a crash resumes at the
    first unlabelled iteration). The caller makes sure the files are this run's.

    Returns:
        The aggregated demonstrations and one summary per iteration.
    """
    history: list[dict[str, float]] = []
    for iteration in range(iterations):
        start = iteration * episodes_per_iteration
        batch = [int(s) for s in seeds[start : start + episodes_per_iteration]]
        if not batch:
            break
        saved = None if labels_dir is None else Path(labels_dir) / f"dagger_{iteration + 1}.npz"
        labelling = time.perf_counter()
        if saved is not None and saved.is_file():
            visited, seconds, loaded = load_demonstrations(saved), 0.0, True
        else:
            visited = collect_demonstrations(
                env_configs, batch, heuristic, gamma, reward_scale, driver=model,
                time_constant_s=time_constant_s, pool=pool, propose=propose,
            )  # fmt: skip
            seconds, loaded = time.perf_counter() - labelling, False
            if saved is not None:
                save_demonstrations(visited, saved)
        demos = demos.extend(visited)
        fit = clone(
            model, demos, epochs=epochs, batch_size=batch_size,
            learning_rate=learning_rate, seed=iteration + 1, action_weights=action_weights,
        )  # fmt: skip
        summary = {
            "iteration": float(iteration + 1),
            "decisions": float(len(demos)),
            "clone_mean_jct_s": float(np.mean(visited.mean_jct_s)),
            "labels": float(len(visited)),
            "label_seconds": seconds,
            "labels_per_s": len(visited) / seconds if seconds > 0 else 0.0,
            "labels_loaded": float(loaded),
            **fit[-1],
        }
        history.append(summary)
        if log is not None:
            log(summary)
    return demos, history
