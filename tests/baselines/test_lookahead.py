"""``lookahead``: a rollout scheduler over a heuristic, planning on forks.

* Without alternatives, or with alternatives that always propose what the base decides,
  it is its base to the last digit, headless and through the env (and plans nothing).
* Its choice follows what the scheduler knows: on two waiting jobs whose sampled
  predictions rank them the other way round from their true lengths, a belief-fork
  lookahead starts the one predicted shorter, an oracle one the one truly shorter,
  whichever of the two its base proposes.
* Planning never reaches the truth unless asked: without ``oracle`` every fork it takes
  is a belief (no future job, no job table of the inputs, believed lengths); with it,
  full forks.
* Bad parameters are clear ``ValueError`` s, and usage errors of ``gpushare-evaluate``.
* Through ``gpushare-evaluate`` it gives the same metrics headless and in the env, and
  an oracle run is marked ``oracle`` in ``runs.csv``.
"""

from __future__ import annotations

import csv
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import baselines
from baselines.base import Policy
from baselines.lookahead import Lookahead
from gpushare_env.envs import GPUShareEnv
from gpushare_env.envs.config import EnvConfig
from gpushare_env.envs.episodes import draw_episode
from gpushare_env.runner import RunResult, run_headless
from gpushare_env.sim import (
    ADVANCE,
    Decision,
    JobSpec,
    Schedule,
    SimConfig,
    Simulator,
    SimView,
    make_cluster,
)
from gpushare_env.sim.types import JobStatus
from gpushare_eval.cli import evaluate
from tests.forks import assert_same
from tests.test_headless_matches_env import _assert_same_both_ways

#: Small episodes where thesis suspends, resumes and migrates (flat env config keys).
CONFIGS = [
    {"cluster": "tiny2", "workload": "philly_heavy", "num_jobs": 30},
    {"cluster": "thesis", "workload": "thesis_poisson", "num_jobs": 40,
     "pending_window": 4, "running_window": 4},
]  # fmt: skip


def headless_run(policy: Policy, config: dict[str, Any], seed: int) -> RunResult:
    """``policy`` on the episode ``GPUShare-v0`` plays for ``config`` and ``seed``, on the
    simulator directly (as ``gpushare-evaluate --headless`` runs it)."""
    cfg = EnvConfig.from_any(config)
    cluster = make_cluster(cfg.cluster)
    episode = draw_episode(cfg, cluster, seed)
    return run_headless(
        episode.jobs, cluster, policy, cfg.sim_config(), rng=episode.noise_rng,
        windows=cfg.windows.windows(), auto_advance=cfg.auto_advance,
    )  # fmt: skip


def env_run(name: str, config: dict[str, Any], seed: int, **params: Any) -> tuple[list[int], Any]:
    """The actions of ``name``'s predict loop in ``GPUShare-v0``, and the final metrics."""
    env = GPUShareEnv(config)
    policy = baselines.make(name, env, **params)
    obs, info = env.reset(seed=seed)
    actions: list[int] = []
    done = False
    while not done:
        action, _ = policy.predict(obs, deterministic=True)
        actions.append(int(action))
        obs, _, terminated, truncated, info = env.step(int(action))
        done = terminated or truncated
    assert terminated
    return actions, info["metrics"]


# ------------------------------------------------------- its base, to the digit
@pytest.mark.parametrize("alternatives", [[], ["thesis"]], ids=["none", "thesis"])
@pytest.mark.parametrize("config", CONFIGS, ids=["tiny2", "thesis_windows"])
def test_without_other_proposals_it_is_its_base_headless(
    config: dict[str, Any], alternatives: list[str]
) -> None:
    thesis = headless_run(baselines.make("thesis"), config, 1)
    lookahead = baselines.make("lookahead", alternatives=alternatives)
    planned = headless_run(lookahead, config, 1)
    assert isinstance(lookahead, Lookahead)
    assert thesis.metrics["suspends"] > 0  # the base has state the copies must follow
    assert_same(planned.records, thesis.records, "records")
    assert_same(planned.metrics, thesis.metrics, "metrics")
    assert planned.steps == thesis.steps == lookahead.decisions
    assert lookahead.planned == lookahead.rollouts == lookahead.deviations == 0


@pytest.mark.parametrize("alternatives", [[], ["thesis"]], ids=["none", "thesis"])
def test_without_other_proposals_it_is_its_base_through_the_env(alternatives: list[str]) -> None:
    config = CONFIGS[1]
    actions, metrics = env_run("thesis", config, 2)
    planned_actions, planned_metrics = env_run("lookahead", config, 2, alternatives=alternatives)
    assert planned_actions == actions
    assert_same(planned_metrics, metrics, "final info['metrics']")


# -------------------------------------------- it plans on what the scheduler knows
class _FixedNoise:
    """A stand-in generator: the simulator's one draw of sampling noise per job (in job-id
    order) is these values."""

    def __init__(self, noise: list[float]) -> None:
        self.noise = np.asarray(noise, dtype=float)

    def normal(self, loc: float, scale: float, size: int) -> np.ndarray:
        return self.noise[:size].copy()


class _FirstWaiting(Policy):
    """Place the first waiting job that fits (by arrival, then id), else let time run."""

    name = "first_waiting"
    pick = 0

    def decide(self, view: SimView) -> Decision:
        fitting = [j for j in self.visible_pending(view) if view.fits(j)[0]]
        return Schedule(fitting[self.pick], "pack") if fitting else ADVANCE


class _LastWaiting(_FirstWaiting):
    """Place the last waiting job that fits, else let time run."""

    name = "last_waiting"
    pick = -1


@pytest.fixture
def two_picks(monkeypatch: pytest.MonkeyPatch) -> None:
    """``first_waiting`` and ``last_waiting``, which ``baselines.make`` builds (this test only)."""
    monkeypatch.setitem(baselines.REGISTRY, "first_waiting", ("policy", _FirstWaiting))
    monkeypatch.setitem(baselines.REGISTRY, "last_waiting", ("policy", _LastWaiting))


def two_sampled_jobs(solo_s: tuple[float, float], noise: tuple[float, float]) -> Simulator:
    """One GPU for one job at a time and two jobs that arrived at 0 (ids 0 and 1, truly
    ``solo_s`` long), each started once (which samples it: its prediction is its length
    times ``1 + noise``) and suspended: both wait, and either may be resumed first."""
    jobs = [
        JobSpec(job_id=i, arrival_s=0.0, model="resnet50", batch_size=64, num_gpus=1,
                iterations=1000, memory_gib=4.0, intensity=0.8, iter_time_s=solo / 1000)
        for i, solo in enumerate(solo_s)
    ]  # fmt: skip
    cluster = make_cluster(
        {"nodes": 1, "gpus_per_node": 1, "gpu_type": "v100", "max_jobs_per_gpu": 1}
    )
    config = SimConfig(
        duration_info="sampled", sample_iterations=0, sample_noise=0.5, min_service_s=0.0,
        max_suspends_per_job=None,
    )  # fmt: skip
    sim = Simulator(jobs, cluster, config, rng=_FixedNoise(list(noise)))  # type: ignore[arg-type]
    sim.advance()  # the arrivals
    for job_id in (0, 1):
        sim.schedule(job_id, "pack")
        sim.suspend(job_id)
        while sim.jobs[job_id].status != JobStatus.SUSPENDED:
            sim.advance()
    for job_id, solo, error in zip((0, 1), solo_s, noise, strict=True):
        assert sim.jobs[job_id].sampled
        predicted = sim.predicted_remaining_s(job_id)
        assert predicted == pytest.approx(solo * (1 + error))
    return sim


SHORT_S, LONG_S = 1000.0, 1500.0


@pytest.mark.usefixtures("two_picks")
@pytest.mark.parametrize("oracle", [False, True], ids=["belief", "oracle"])
@pytest.mark.parametrize(
    ("truly_short", "predicted_short"), [(0, 1), (1, 0), (0, 0), (1, 1)],
    ids=["base_right_prediction_wrong", "base_wrong_prediction_wrong",
         "base_right_prediction_right", "base_wrong_prediction_right"],
)  # fmt: skip
def test_the_choice_follows_the_prediction_on_belief_forks_and_the_truth_on_full_ones(
    truly_short: int, predicted_short: int, oracle: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Resuming the shorter job first minimizes the sum of the two finish times (the
    # objective, mean_jct). The base resumes job 0, the alternative job 1.
    solo = [LONG_S, LONG_S]
    solo[truly_short] = SHORT_S
    noise = [0.0, 0.0]
    if predicted_short != truly_short:  # predicted 1,900 s and 750 s: the other way round
        noise[truly_short], noise[1 - truly_short] = 0.9, -0.5
    sim = two_sampled_jobs((solo[0], solo[1]), (noise[0], noise[1]))
    predicted = [float(sim.predicted_remaining_s(j) or math.nan) for j in (0, 1)]
    assert (predicted[predicted_short] < predicted[1 - predicted_short]) and (
        solo[truly_short] < solo[1 - truly_short]
    )
    forks: list[Simulator] = []
    fork = Simulator.fork

    def recorded(self: Simulator, belief: bool = False, **kwargs: Any) -> Simulator:
        forks.append(made := fork(self, belief, **kwargs))
        return made

    monkeypatch.setattr(Simulator, "fork", recorded)
    lookahead = baselines.make(
        "lookahead", base="first_waiting", alternatives=["last_waiting"], oracle=oracle,
        budget=None,
    )  # fmt: skip
    lookahead.reset(sim)
    decision = lookahead.decide(sim)
    assert isinstance(lookahead, Lookahead) and lookahead.planned == 1
    assert decision == Schedule(truly_short if oracle else predicted_short, "pack")
    # each rollout played on a fork holding the lengths it should: the truth, or the
    # sampled predictions
    assert len(forks) == 2 and all(f.is_belief != oracle for f in forks)
    held = predicted if not oracle else solo
    for made in forks:
        for job_id in (0, 1):
            assert made.jobs[job_id].spec.solo_duration_s == pytest.approx(held[job_id])


# ------------------------------------------------- what its rollouts may read
@pytest.mark.parametrize("oracle", [False, True], ids=["belief", "oracle"])
def test_its_rollouts_fork_beliefs_only_unless_it_is_an_oracle(
    oracle: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every fork a whole run takes is a belief (no job table of the inputs, the arrived
    jobs only, none of the jobs still to come), or with ``oracle`` a full fork."""
    seen: list[tuple[bool, int, list[int]]] = []
    fork = Simulator.fork

    def recorded(self: Simulator, belief: bool = False, **kwargs: Any) -> Simulator:
        made = fork(self, belief, **kwargs)
        future = [j for j in self.jobs if self.jobs[j].status == JobStatus.FUTURE]
        if belief:
            assert made.is_belief and made.core.inputs.jobs is None
            assert len(made.jobs) == self.num_arrived
            assert list(made.jobs) == [j for j in self.jobs if j not in future]
            for job_id in made.jobs:
                assert made.jobs[job_id].noise == 0.0
        else:
            assert not made.is_belief and list(made.jobs) == list(self.jobs)
        seen.append((belief, len(future), list(made.jobs)))
        return made

    monkeypatch.setattr(Simulator, "fork", recorded)
    config = {"cluster": "thesis", "workload": "thesis_poisson", "num_jobs": 30}
    lookahead = baselines.make("lookahead", oracle=oracle)
    assert isinstance(lookahead, Lookahead)
    result = headless_run(lookahead, config, 0)
    assert len(result.records) == 30 and lookahead.rollouts == len(seen) > 0
    assert {belief for belief, _, _ in seen} == {not oracle}
    assert any(future for _, future, _ in seen)  # forks taken while jobs were to come


# --------------------------------------------------------------- parameters
@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"objective": "latency"}, r"objective must be one of \['mean_jct', 'makespan'\]"),
        ({"horizon": 0}, "lookahead: horizon must be a positive number or None, got 0"),
        ({"horizon": -1.5}, "horizon must be a positive number"),
        ({"horizon": math.nan}, "horizon must be a positive number"),
        ({"horizon": math.inf}, "horizon must be a positive number"),
        ({"horizon": "long"}, "horizon must be a positive number"),
        ({"budget": -1}, "lookahead: budget must be a number >= 0 or None, got -1"),
        ({"budget": math.nan}, "budget must be a number >= 0"),
        ({"margin": -0.01}, "lookahead: margin must be a number >= 0, got -0.01"),
        ({"margin": math.inf}, "margin must be a number >= 0"),
        ({"max_rollout_decisions": 0}, "max_rollout_decisions must be a whole number >= 1"),
        ({"max_rollout_decisions": 2.5}, "max_rollout_decisions must be a whole number >= 1"),
        ({"prior_s": 0.0}, "prior_s must be a positive number of seconds"),
        ({"alternatives": ["gandiva", "nope"]}, "unknown policy 'nope'"),
        ({"alternatives": "[sjf_pack:unsampled=never]"}, "unsampled must be one of"),
        ({"base": "nope"}, "unknown policy 'nope'"),
        ({"base": "lookahead"}, "lookahead: the base must be a heuristic, not another lookahead"),
        ({"depth": 3}, r"policy 'lookahead': unknown parameters \['depth'\]; allowed: "),
    ],
    ids=lambda value: str(value) if isinstance(value, dict) else "",
)  # fmt: skip
def test_bad_parameters_are_value_errors_that_say_what_is_wrong(
    params: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        baselines.make("lookahead", **params)


@pytest.mark.parametrize(
    "params",
    [{"budget": "lots"}, {"margin": "wide"}, {"prior_s": "long"}, {"oracle": "flase"},
     {"advance": "flase"}],
    ids=lambda params: ",".join(params),
)  # fmt: skip
def test_parameters_of_the_wrong_type_are_value_errors(params: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=f"lookahead: {next(iter(params))}"):
        baselines.make("lookahead", **params)


def test_an_alternative_that_sees_the_future_is_refused_or_makes_it_an_oracle() -> None:
    try:
        policy = baselines.make("lookahead", alternatives=["gandiva", "lookahead:oracle=true"])
    except ValueError:
        return
    assert policy.oracle


def test_the_spec_spelling_of_its_parameters_builds_the_same_planner() -> None:
    by_spec = baselines.make("lookahead:alternatives=[gandiva,sjf_pack]:oracle=true:margin=0.05")
    by_keywords = baselines.make(
        "lookahead", alternatives=["gandiva", "sjf_pack"], oracle=True, margin=0.05
    )
    assert by_spec.params() == by_keywords.params()
    assert by_spec.oracle and not baselines.make("lookahead").oracle
    assert not baselines.make("thesis").oracle  # Policy.oracle: False unless set


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ("lookahead:objective=latency", "lookahead: objective must be one of"),
        ("lookahead:base=lookahead", "the base must be a heuristic"),
        ("lookahead:alternatives=[gandiva,nope]", "unknown policy 'nope'"),
        ("lookahead:margin=-1", "lookahead: margin must be a number >= 0"),
        ("lookahead:depth=3", "unknown parameters ['depth']"),
    ],
)
def test_gpushare_evaluate_refuses_a_bad_lookahead_as_a_usage_error(
    spec: str, words: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert evaluate.main(["--policies", "thesis", spec, "--out", str(out)]) == 2
    captured = capsys.readouterr()
    (line,) = captured.err.splitlines()
    assert line.startswith("gpushare-evaluate: error: --policies: ") and words in line, line
    assert captured.out == "" and not out.exists()


# ------------------------------------------------------------ in the harness
@pytest.mark.parametrize("policy", ["lookahead", "lookahead:oracle=true:horizon=2"])
@pytest.mark.parametrize("config", CONFIGS, ids=["tiny2", "thesis_windows"])
def test_the_harness_gives_the_same_metrics_headless_and_in_the_env(
    policy: str, config: dict[str, Any]
) -> None:
    _assert_same_both_ways(policy, config, 4)


def test_gpushare_evaluate_runs_it_headless_and_in_the_env_alike(tmp_path: Path) -> None:
    """The same runs.csv rows (but ``mode`` and ``wall_s``) both ways; the oracle run is
    marked ``oracle`` (the others 0) and named as such in the summary."""
    common = [
        "--policies", "thesis", "lookahead", "lookahead:oracle=true", "--workload", "thesis",
        "--cluster", "tiny", "--num-jobs", "12", "--seeds", "0-1", "--workers", "1",
        "--quiet", "--no-plots",
    ]  # fmt: skip
    tables = []
    for mode in ("--headless", "--env"):
        out = tmp_path / mode.strip("-")
        assert evaluate.main([*common, mode, "--out", str(out)]) == 0
        with open(out / "runs.csv", newline="", encoding="utf-8") as handle:
            rows = list(csv.DictReader(handle))
        assert [r["mode"] for r in rows] == [mode.strip("-")] * 6
        tables.append([{k: v for k, v in r.items() if k not in ("mode", "wall_s")} for r in rows])
        summary = (out / "summary.md").read_text(encoding="utf-8")
        assert "lookahead:oracle=true (oracle: sees the future" in summary
    assert tables[0] == tables[1]
    oracle = {r["policy"]: r["oracle"] for r in tables[0]}
    assert oracle == {"thesis": "0", "lookahead": "0", "lookahead:oracle=true": "1"}


def test_advance_as_a_candidate_runs_a_whole_episode() -> None:
    config = {"cluster": "tiny2", "workload": "philly_heavy", "num_jobs": 20}
    lookahead = baselines.make("lookahead", advance=True, seed=3)
    assert len(headless_run(lookahead, config, 3).records) == 20


# ------------------------------------------------ proposals from outside: suggest
class _Suggesting(Policy):
    """``lookahead`` without alternatives, given ``proposer``'s decision as a suggestion
    at every decision (what expert iteration's labelling does with the network's)."""

    name = "suggesting"

    def __init__(self, planner: Lookahead, proposer: Policy) -> None:
        super().__init__()
        self.planner, self.proposer = planner, proposer

    def _reset_state(self) -> None:
        assert self._view is not None
        self.planner.reset(self._view)
        self.proposer.reset(self._view)

    def decide(self, view: SimView) -> Decision:
        self.planner.suggest(self.proposer.decide(view))
        return self.planner.decide(view)


@pytest.mark.parametrize("config", CONFIGS, ids=["tiny2", "thesis_windows"])
def test_a_suggested_proposal_is_a_candidate_as_an_alternative_s_is(config: dict[str, Any]) -> None:
    # the same candidates in the same order: sjf_pack's proposal as an alternative, or
    # suggested at each decision to a lookahead with none, gives the same run
    alternative = baselines.make("lookahead", alternatives=["sjf_pack"], margin=0.0)
    expected = headless_run(alternative, config, 1)
    planner = baselines.make("lookahead", alternatives=[], margin=0.0)
    assert isinstance(planner, Lookahead) and isinstance(alternative, Lookahead)
    suggested = headless_run(_Suggesting(planner, baselines.make("sjf_pack")), config, 1)
    assert alternative.deviations > 0  # the proposals won somewhere
    assert_same(suggested.records, expected.records, "records")
    assert (planner.decisions, planner.planned, planner.deviations) == (
        alternative.decisions, alternative.planned, alternative.deviations
    )  # fmt: skip
    assert planner.suggestions_taken == planner.deviations
    assert alternative.suggestions_taken == 0


def test_a_suggestion_counts_for_the_next_decision_only() -> None:
    config = CONFIGS[0]
    planner = baselines.make("lookahead", alternatives=[], margin=0.0)
    assert isinstance(planner, Lookahead)

    class _Once(_Suggesting):
        def decide(self, view: SimView) -> Decision:
            if self.planner.decisions == 0:
                self.planner.suggest(self.proposer.decide(view))
            return self.planner.decide(view)

    once = headless_run(_Once(planner, baselines.make("sjf_pack")), config, 1)
    assert once.steps == planner.decisions > 1
    assert planner.planned <= 1 and planner.rollouts <= 2  # the first decision's, then none


def test_a_base_with_parameters_goes_in_brackets_in_a_spec() -> None:
    spec = "lookahead:base=[thesis:critical_path_factor=inf:max_suspends=6]:budget=10"
    assert baselines.parse_spec(spec) == (
        "lookahead",
        {"base": "[thesis:critical_path_factor=inf:max_suspends=6]", "budget": 10},
    )
    planner = baselines.make(spec)
    assert isinstance(planner, Lookahead)
    assert (
        planner.base.params()
        == baselines.make("thesis", critical_path_factor=math.inf, max_suspends=6).params()
    )
    assert planner.params()["base"] == "thesis:critical_path_factor=inf:max_suspends=6"
    for bad, says in (("lookahead:base=[thesis:max_suspends=6", "'[' without its ']'"),
                      ("lookahead:base=thesis]", "']' without its '['")):  # fmt: skip
        with pytest.raises(ValueError, match=re.escape(says)):
            baselines.parse_spec(bad)
