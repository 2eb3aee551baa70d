"""Forks of a simulator (``Simulator.fork``), headless and with the env's encoder.

A full fork is the same episode from the instant it was taken: the same decisions on it,
on its original and on a fork of the fork give bit-identical states (everything the
simulator shows: ``tests.forks.sim_snapshot``) and results, equal to those of a fresh
simulator that replayed every decision from the start; stepping one never changes
another; a pickled fork continues the same. A belief fork (``fork(belief=True)``) holds
the arrived jobs only, at the lengths a scheduler believes.

Hypothesis draws the episodes: small clusters and workloads (the openb pod list under
the requested-shares model among them), both sharing models, every interference model,
every ``duration_info``, windows, suspension rules and ``auto_advance``; the instant of
the fork (some drawn ones where a job is mid-sampling, suspending or resuming); the
driver (a heuristic's ``decide``, or random valid env actions).
"""

from __future__ import annotations

import math
import pickle
import statistics
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import baselines
from gpushare_env.envs import GPUShareEnv
from gpushare_env.envs.config import EnvConfig
from gpushare_env.envs.episodes import draw_episode
from gpushare_env.metrics import summarize_run
from gpushare_env.sim import Simulator, apply_decision, make_cluster
from gpushare_env.sim.engine import BELIEF_DEFAULT_PRIOR_S, DURATION_INFO, EpisodeOptions
from gpushare_env.sim.types import JobStatus
from tests.forks import (
    EVERY_STRATEGY,
    INSTANTS,
    LIGHT,
    arrived_ids,
    assert_same,
    at_instant,
    configs,
    shares_of,
    sim_snapshot,
)
from tests.test_headless_matches_env import examples

#: Decisions a drawn episode may take at most (the small ones below take a few hundred).
MAX_MOVES = 1500
#: A fork's whole state is compared with the reference's every this many moves (and at
#: the end), the clock, counters, observation, mask and reward terms after every move.
FULL_EVERY = 5

HEURISTICS = [*baselines.available(), *baselines.variants()]


# ------------------------------------------------------------------ episodes
def headless(config: dict[str, Any], seed: int) -> Simulator:
    """The simulator of a headless run of ``config`` on ``seed``, as the harness builds
    it (``gpushare_eval.runs.headless_setup``, ``run_headless``), settled."""
    cfg = EnvConfig.from_any(config)
    cluster = make_cluster(cfg.cluster)
    episode = draw_episode(cfg, cluster, seed)
    options = EpisodeOptions(auto_advance=cfg.auto_advance, max_time_s=cfg.limits.max_time_s)
    sim = Simulator(
        episode.jobs, cluster, cfg.sim_config(), rng=episode.noise_rng,
        windows=cfg.windows.windows(), episode=options,
    )  # fmt: skip
    if cfg.auto_advance:
        sim.settle()
    return sim


def encoded(config: dict[str, Any], seed: int) -> Simulator:
    """The simulator of ``GPUShare-v0``'s episode of ``config`` on ``seed``: it encodes
    observations, masks and rewards, and takes env actions (``Simulator.step``)."""
    env = GPUShareEnv(config)
    env.reset(seed=seed)
    sim = env._sim
    assert sim is not None
    return sim


def decision_mover(auto_advance: bool) -> Callable[[Simulator, Any], Any]:
    """Carry out a heuristic's decision as ``run_headless`` does; the events it ran."""

    def move(sim: Simulator, decision: Any) -> Any:
        events = apply_decision(sim, decision)
        if auto_advance:
            sim.settle()
        return events

    return move


def action_mover(sim: Simulator, action: int) -> Any:
    """Take env action ``action``: ``(reward, terminated, truncated, now_s, finished, steps)``."""
    return sim.step(action, False)


def over(sim: Simulator) -> bool:
    return sim.done or sim.truncated_by is not None


class Episode:
    """A reference episode, played on a fresh simulator: its moves, and after each the
    move's output and the simulator's snapshot, and which instants each state was at."""

    def __init__(
        self,
        make: Callable[[], Simulator],
        choose: Callable[[Simulator], Any],
        move: Callable[[Simulator, Any], Any],
        picklable: bool = True,
    ) -> None:
        self.make, self.move = make, move
        #: Whether a pickle replays it: a pickle replays the operations the core recorded,
        #: and ``Simulator.settle`` (a headless run's auto-advance) records none (see
        #: ``test_a_pickled_settled_headless_simulator_continues_as_it``).
        self.picklable = picklable
        sim = make()
        self.moves: list[Any] = []
        self.after: list[tuple[Any, dict[str, Any]]] = []
        self.instants: list[set[str]] = []  # before each move
        self.start = sim_snapshot(sim)
        while not over(sim) and len(self.moves) < MAX_MOVES:
            self.instants.append({name for name in INSTANTS if at_instant(sim, name)})
            chosen = choose(sim)
            self.after.append((move(sim, chosen), sim_snapshot(sim)))
            self.moves.append(chosen)
        self.end = sim
        self.metrics = summarize_run(sim.records(), sim.timeline())

    def __len__(self) -> int:
        return len(self.moves)

    def played(self, count: int) -> Simulator:
        """A fresh simulator after the first ``count`` moves."""
        sim = self.make()
        for chosen in self.moves[:count]:
            self.move(sim, chosen)
        return sim

    def state(self, count: int) -> dict[str, Any]:
        """The reference's snapshot after ``count`` moves."""
        return self.start if count == 0 else self.after[count - 1][1]

    def check(self, sim: Simulator, start: int, stop: int | None, what: str) -> None:
        """Play moves ``start:stop`` on ``sim`` (at move ``start``); each output and state
        must be the reference's, bit for bit (the whole snapshot at the start, every
        ``FULL_EVERY`` moves and at the end; its ``LIGHT`` part after every move)."""
        stop = len(self) if stop is None else stop
        assert_same(sim_snapshot(sim), self.state(start), f"{what} at move {start}")
        for i in range(start, stop):
            out = self.move(sim, self.moves[i])
            assert_same(out, self.after[i][0], f"{what}: the output of move {i}")
            full = (i - start) % FULL_EVERY == FULL_EVERY - 1 or i == stop - 1
            expected = self.after[i][1]
            if not full:
                expected = {key: expected[key] for key in LIGHT}
            assert_same(sim_snapshot(sim, light=not full), expected, f"{what} after move {i}")
        if stop == len(self):
            metrics = summarize_run(sim.records(), sim.timeline())
            assert_same(metrics, self.metrics, f"{what}: the final metrics")


def heuristic_episode(config: dict[str, Any], seed: int, policy_name: str) -> Episode:
    policy = baselines.make(policy_name)
    auto = EnvConfig.from_any(config).auto_advance

    def make() -> Simulator:
        sim = headless(config, seed)
        policy.reset(sim)
        return sim

    return Episode(make, policy.decide, decision_mover(auto), picklable=not auto)


def random_episode(config: dict[str, Any], seed: int, action_seed: int) -> Episode:
    rng = np.random.default_rng(action_seed)

    def choose(sim: Simulator) -> int:
        valid = np.flatnonzero(sim.action_mask)
        return int(valid[rng.integers(len(valid))])

    return Episode(lambda: encoded(config, seed), choose, action_mover)


def check_forks(episode: Episode, k: int, j: int) -> None:
    """Fork the original at move ``k``, the fork at move ``j`` (``k <= j``) and pickle
    that fork of a fork: the original, the fork, its fork and the pickled one play the
    rest of the episode exactly as the reference (a fresh simulator that played every
    move)."""
    original = episode.played(k)
    fork = original.fork()
    assert not fork.is_belief
    episode.check(fork, k, j, "the fork")
    fork_of_fork = fork.fork()
    pickled = pickle.loads(pickle.dumps(fork_of_fork)) if episode.picklable else None
    episode.check(original, k, None, "the original")
    episode.check(fork, j, None, "the fork")
    episode.check(fork_of_fork, j, None, "the fork of the fork")
    if pickled is not None:
        episode.check(pickled, j, None, "the pickled fork of the fork")


def two_points(episode: Episode, first: float, second: float) -> tuple[int, int]:
    """Moves ``k <= j`` before the end, at the drawn shares of the episode."""
    assume(len(episode) > 0)
    k = min(int(first * len(episode)), len(episode) - 1)
    j = k + int(second * (len(episode) - k))
    return k, j


# ------------------------------------------------------------- full forks


@examples(20)
@given(
    config=configs, policy=st.sampled_from(HEURISTICS), seed=st.integers(0, 10_000),
    first=shares_of, second=shares_of,
)  # fmt: skip
def test_a_fork_replays_a_heuristic_episode_bit_for_bit(
    config: dict[str, Any], policy: str, seed: int, first: float, second: float
) -> None:
    episode = heuristic_episode(config, seed, policy)
    k, j = two_points(episode, first, second)
    check_forks(episode, k, j)


@examples(20)
@given(
    config=configs, seed=st.integers(0, 10_000), action_seed=st.integers(0, 10_000),
    every_strategy=st.booleans(), first=shares_of, second=shares_of,
)  # fmt: skip
def test_a_fork_replays_random_env_actions_bit_for_bit(
    config: dict[str, Any],
    seed: int,
    action_seed: int,
    every_strategy: bool,
    first: float,
    second: float,
) -> None:
    if every_strategy and config["sharing"] in EVERY_STRATEGY:  # FGD's or MIG's rules
        config = {**config, "strategies": list(EVERY_STRATEGY[config["sharing"]])}
    episode = random_episode(config, seed, action_seed)
    k, j = two_points(episode, first, second)
    check_forks(episode, k, j)


@examples(20)
@given(
    config=configs, seed=st.integers(0, 10_000), action_seed=st.integers(0, 10_000),
    instant=st.sampled_from(INSTANTS), pick=st.integers(0, 10**6), later=shares_of,
)  # fmt: skip
def test_a_fork_mid_sampling_suspension_or_resumption_replays_bit_for_bit(
    config: dict[str, Any], seed: int, action_seed: int, instant: str, pick: int, later: float
) -> None:
    """Random env actions suspend often: fork where some job is in the drawn state."""
    config = {**config, "sample_iterations": 50}
    episode = random_episode(config, seed, action_seed)
    at = [i for i, found in enumerate(episode.instants) if instant in found]
    assume(at)
    k = at[pick % len(at)]
    original = episode.played(k)
    assert at_instant(original, instant)
    check_forks(episode, k, k + int(later * (len(episode) - k)))


@pytest.mark.parametrize("instant", INSTANTS)
def test_thesis_reaches_each_instant_and_forks_there(instant: str) -> None:
    """``thesis`` (a heuristic that suspends) reaches a job mid-sampling, suspending and
    resuming on this episode; fork at the first such instant and in the middle of them."""
    config = {"cluster": "thesis", "workload": "thesis_poisson", "num_jobs": 30,
              "sample_iterations": 50, "suspend_overhead_s": 120.0,
              "resume_overhead_s": 120.0, "auto_advance": True}  # fmt: skip
    episode = heuristic_episode(config, 3, "thesis")
    at = [i for i, found in enumerate(episode.instants) if instant in found]
    assert at, f"thesis never reached an instant {instant!r}"
    for k in (at[0], at[len(at) // 2]):
        assert at_instant(episode.played(k), instant)
        check_forks(episode, k, (k + len(episode)) // 2)


# ---------------------------------------------------------- independence
def play_out(sim: Simulator, choose: Callable[[Simulator], Any], move: Any) -> None:
    steps = 0
    while not over(sim) and steps < MAX_MOVES:
        move(sim, choose(sim))
        steps += 1


@examples(12)
@given(config=configs, seed=st.integers(0, 10_000), first=shares_of)
def test_stepping_a_fork_never_changes_its_original_nor_the_other_way(
    config: dict[str, Any], seed: int, first: float
) -> None:
    episode = random_episode(config, seed, seed)
    k, _ = two_points(episode, first, 0.0)
    original = episode.played(k)
    fork = original.fork()
    before = sim_snapshot(original)
    mask, now = original.action_mask.copy(), original.now_s
    rng = np.random.default_rng(seed + 1)  # other actions than the original's

    def choose(sim: Simulator) -> int:
        valid = np.flatnonzero(sim.action_mask)
        return int(valid[rng.integers(len(valid))])

    play_out(fork, choose, action_mover)
    assert_same(sim_snapshot(original), before, "the original after its fork played out")
    assert np.array_equal(original.action_mask, mask) and original.now_s == now
    ended = sim_snapshot(fork)
    episode.check(original, k, None, "the original")  # it still plays the reference
    assert_same(sim_snapshot(fork), ended, "the fork after its original played out")
    # a fork taken from the fork before it moves stays at the fork's instant
    second = original.fork()
    assert_same(sim_snapshot(second), sim_snapshot(original), "a fork of an ended episode")


@examples(8)
@given(config=configs, seed=st.integers(0, 10_000), policy=st.sampled_from(HEURISTICS))
def test_a_headless_fork_is_independent_of_its_original(
    config: dict[str, Any], seed: int, policy: str
) -> None:
    episode = heuristic_episode(config, seed, policy)
    k = len(episode) // 2
    original = episode.played(k)
    fork = original.fork()
    before = sim_snapshot(original)
    decide = baselines.make("fifo_pack" if policy != "fifo_pack" else "sjf_pack")
    decide.reset(fork)
    play_out(fork, decide.decide, decision_mover(EnvConfig.from_any(config).auto_advance))
    assert_same(sim_snapshot(original), before, "the original after its fork played out")
    ended = sim_snapshot(fork)
    episode.check(original, k, None, "the original")
    assert_same(sim_snapshot(fork), ended, "the fork after its original played out")
    fork.check_invariants()
    original.check_invariants()


# ---------------------------------------------------------------- pickling
@pytest.mark.parametrize("driver", ["headless", "env actions"])
def test_a_pickled_fork_continues_as_the_fork(driver: str) -> None:
    config = {"cluster": "tiny2", "workload": "philly_heavy", "num_jobs": 12,
              "auto_advance": driver != "headless"}  # fmt: skip
    if driver == "headless":
        episode = heuristic_episode(config, 5, "thesis")
    else:
        episode = random_episode(config, 5, 5)
    k = len(episode) // 2
    fork = episode.played(k).fork()
    copied = pickle.loads(pickle.dumps(fork))
    assert not copied.is_belief
    episode.check(copied, k, None, "the pickled fork")
    episode.check(fork, k, None, "the fork")


def test_a_pickled_settled_headless_simulator_continues_as_it() -> None:
    config = {"cluster": "tiny", "workload": "thesis_poisson", "num_jobs": 3}
    episode = heuristic_episode(config, 0, "fifo")
    for k in (0, len(episode) // 2):
        sim = episode.played(k)
        episode.check(pickle.loads(pickle.dumps(sim)), k, None, "the pickled simulator")
        episode.check(pickle.loads(pickle.dumps(sim.fork())), k, None, "its pickled fork")


def test_a_belief_fork_cannot_be_pickled_and_says_why() -> None:
    config = {"cluster": "tiny2", "workload": "philly_heavy", "num_jobs": 12}
    episode = random_episode(config, 5, 5)
    original = episode.played(len(episode) // 2)
    belief = original.fork(belief=True)
    with pytest.raises(TypeError, match=r"belief fork cannot be pickled.*pickle the simulator"):
        pickle.dumps(belief)
    with pytest.raises(TypeError, match="belief fork cannot be pickled"):
        pickle.dumps(belief.fork())  # a fork of a belief is a belief
    # its original still pickles, and continues the episode
    episode.check(pickle.loads(pickle.dumps(original)), len(episode) // 2, None, "the original")


# ------------------------------------------------------------ belief forks
def believed_prior(sim: Simulator) -> float:
    """The prior a belief fork of ``sim`` assumes by default: the median known solo
    duration of the arrived jobs (a finished job's true one; a sampled job's prediction
    under ``sampled``, the truth under ``oracle``), else ``BELIEF_DEFAULT_PRIOR_S``."""
    known = []
    for job_id in arrived_ids(sim):
        state = sim.jobs[job_id]
        if state.status == JobStatus.FINISHED:
            known.append(state.spec.solo_duration_s)
        elif sim.measured_step_time_s(job_id) is not None:
            known.append(state.spec.iterations * sim.measured_step_time_s(job_id))
    return statistics.median(known) if known else BELIEF_DEFAULT_PRIOR_S


@examples(20)
@given(
    config=configs, seed=st.integers(0, 10_000), first=shares_of,
    prior=st.one_of(st.none(), st.sampled_from([60.0, 5000.0])),
)  # fmt: skip
def test_a_belief_fork_holds_what_a_scheduler_knows(
    config: dict[str, Any], seed: int, first: float, prior: float | None
) -> None:
    episode = random_episode(config, seed, seed)
    k, _ = two_points(episode, first, 0.0)
    original = episode.played(k)
    before = sim_snapshot(original)
    info = original.duration_info
    belief = original.fork(belief=True, prior_s=prior)
    assert belief.is_belief and not original.is_belief
    arrived = arrived_ids(original)
    assert list(belief.jobs) == arrived and len(belief.jobs) == len(arrived)
    assert belief.core.inputs.jobs is None
    assert sorted(belief.core.rank_of) == sorted(arrived)
    assert [spec.job_id for spec in belief.core.specs] == arrived
    for future in (job_id for job_id in original.jobs if job_id not in arrived):
        assert future not in belief.jobs
        with pytest.raises(KeyError):
            belief.jobs[future]
    expected_prior = believed_prior(original) if prior is None else prior
    for job_id in arrived:
        truth, believed = original.jobs[job_id], belief.jobs[job_id]
        assert believed.noise == 0.0, job_id
        assert believed.status == truth.status and believed.gpus == truth.gpus
        assert belief.progress_of(job_id) == original.progress_of(job_id)
        if truth.status == JobStatus.FINISHED or info == "oracle":
            assert believed.spec == truth.spec, job_id
            assert belief.predicted_remaining_s(job_id) == original.predicted_remaining_s(job_id)
            continue
        measured = original.measured_step_time_s(job_id)
        if measured is not None:  # sampled: its noisy prediction
            expected = truth.spec.iterations * measured
            assert believed.spec.solo_duration_s == pytest.approx(expected, rel=1e-9), job_id
            assert belief.predicted_remaining_s(job_id) == pytest.approx(
                original.predicted_remaining_s(job_id), rel=1e-9
            )
        else:
            assert believed.spec.solo_duration_s == pytest.approx(expected_prior, rel=1e-9)
    # played out, it finishes exactly the arrived jobs; the original never moves
    policy = baselines.make("fifo_pack")
    policy.reset(belief)
    play_out(belief, policy.decide, decision_mover(EnvConfig.from_any(config).auto_advance))
    assert belief.done
    assert sorted(record.job_id for record in belief.records()) == sorted(arrived)
    assert_same(sim_snapshot(original), before, "the original after its belief played out")
    episode.check(original, k, None, "the original")


def test_a_belief_fork_keeps_no_sampling_noise() -> None:
    config = {"cluster": "tiny2", "workload": "philly_heavy", "num_jobs": 12}
    episode = random_episode(config, 5, 5)
    original = episode.played(len(episode) // 2)
    finished = [j for j in original.jobs if original.jobs[j].status == JobStatus.FINISHED]
    assert any(original.jobs[j].noise != 0.0 for j in finished)  # noise to zero
    belief = original.fork(belief=True)
    assert [j for j in belief.jobs if belief.jobs[j].noise != 0.0] == []


@pytest.mark.parametrize("info", DURATION_INFO)
def test_belief_lengths_by_duration_info(info: str) -> None:
    """A fixed episode mid-way: under ``oracle`` every believed remaining time is the
    truth; under ``sampled`` some job is believed at its sampled prediction and some at
    the prior; under ``none`` every unfinished job at the prior."""
    config = {"cluster": "thesis", "workload": "philly_heavy", "num_jobs": 40,
              "duration_info": info, "sample_iterations": 50}  # fmt: skip
    episode = random_episode(config, 11, 11)
    k = next(
        i
        for i, found in enumerate(episode.instants)
        if "sampling" in found and i > len(episode) // 4
    )
    original = episode.played(k)
    belief = original.fork(belief=True, prior_s=1234.5)
    unfinished = [j for j in arrived_ids(original) if original.jobs[j].status != JobStatus.FINISHED]
    assert unfinished and len(belief.jobs) < len(original.jobs)
    kinds = set()
    for job_id in unfinished:
        solo = belief.jobs[job_id].spec.solo_duration_s
        truth = original.jobs[job_id].spec
        if info == "oracle":
            assert belief.predicted_remaining_s(job_id) == original.predicted_remaining_s(job_id)
            assert solo == truth.solo_duration_s
            kinds.add("truth")
        elif info == "sampled" and original.jobs[job_id].sampled:
            assert solo != truth.solo_duration_s  # noisy
            assert math.isclose(
                solo, truth.iterations * original.measured_step_time_s(job_id), rel_tol=1e-9
            )
            kinds.add("sampled")
        else:
            assert math.isclose(solo, 1234.5, rel_tol=1e-9)
            kinds.add("prior")
    assert kinds == {"oracle": {"truth"}, "sampled": {"sampled", "prior"}, "none": {"prior"}}[info]


def test_belief_forks_refuse_a_bad_prior() -> None:
    sim = headless({"cluster": "tiny", "workload": "thesis", "num_jobs": 4}, 0)
    for bad in (0.0, -1.0, math.nan, math.inf):
        with pytest.raises(ValueError, match="prior_s must be a positive number"):
            sim.fork(belief=True, prior_s=bad)


def test_a_fork_of_a_belief_replays_the_belief() -> None:
    config = {"cluster": "thesis", "workload": "philly_heavy", "num_jobs": 20}
    original = random_episode(config, 2, 2).played(60)
    belief = original.fork(belief=True)
    rng = np.random.default_rng(0)

    def choose(sim: Simulator) -> int:
        valid = np.flatnonzero(sim.action_mask)
        return int(valid[rng.integers(len(valid))])

    episode = Episode(belief.fork, choose, action_mover)
    assert episode.end.done and episode.end.is_belief
    episode.check(belief, 0, None, "the belief")
