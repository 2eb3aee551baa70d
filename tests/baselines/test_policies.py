"""Every baseline, on realistic workloads: mask-respecting in the env, and complete.

* In ``GPUShare-v0`` every action a policy's ``predict`` returns is allowed by
  ``env.action_masks()`` (random Philly-style workloads, small windows so that the
  windows bind).
* Headless, every policy finishes every job of a 200-job Philly-style workload on the
  64-GPU ``medium`` cluster (no deadlock, no suspend / resume livelock).
* ``make`` / ``available`` / ``variants`` and the parameter checks; ``gandiva`` takes
  Gandiva's parameters only, and its variants add rules to Gandiva's steps without
  changing them.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import baselines
from baselines.gandiva import RULE_HOOKS, Gandiva
from gpushare_env.rollout import rollout
from gpushare_env.runner import run_headless
from gpushare_env.sim import SimConfig, make_cluster
from gpushare_env.workloads import fit_to_cluster, make_workload

ALL = baselines.available()
VARIANTS = baselines.variants()
#: Every name ``make`` takes, and the variant with every rule on (the shipped teacher's).
EVERY = [
    *ALL,
    *VARIANTS,
    "gandiva_critical_path:critical_path_protect=true:critical_path_consolidate=true",
]


def test_available_lists_the_eight_policies_of_design_5() -> None:
    assert ALL == [
        "fifo",
        "tiresias",
        "fifo_pack",
        "sjf_pack",
        "gandiva",
        "min_frag",
        "random",
        "thesis",
    ]
    for name in ALL:
        policy = baselines.make(name)
        assert policy.name == name
        # params() names the constructor's settings: they rebuild the same policy
        assert repr(baselines.make(name, **policy.params())) == repr(policy)


def test_variants_are_built_by_make_but_not_listed_with_design_5s_policies() -> None:
    assert VARIANTS == ["gandiva_srpt", "gandiva_critical_path"]
    assert not set(VARIANTS) & set(ALL)
    for name in VARIANTS:
        policy = baselines.make(name)
        assert policy.name == name
        assert isinstance(policy, Gandiva)
    with pytest.raises(ValueError, match=r"variants: \['gandiva_srpt'"):
        baselines.make("gandiva_sjf")


def test_make_rejects_unknown_names_and_parameters_listing_the_allowed_ones() -> None:
    with pytest.raises(ValueError, match="available"):
        baselines.make("nope")
    with pytest.raises(ValueError, match=r"allowed: .*min_speed"):
        baselines.make("thesis", min_sped=0.5)
    with pytest.raises(ValueError, match="min_speed"):
        baselines.make("thesis", min_speed=1.5)
    policy = baselines.make("thesis", min_speed=0.6, seed=3)
    assert policy.params()["min_speed"] == 0.6


@pytest.mark.parametrize(
    ("text", "value"),
    [("False", False), ("false", False), ("TRUE", True), ("None", None), ("null", None),
     ("1e3", 1000.0), ("-inf", -math.inf), ("most_starved", "most_starved")],
)  # fmt: skip
def test_spec_values_take_python_and_json_spellings_of_booleans_and_none(
    text: str, value: object
) -> None:
    # a string "False" would be truthy in a policy that does not check its flag's type
    assert baselines.parse_spec(f"gandiva:flag={text}")[1] == {"flag": value}


def test_a_name_with_parameters_builds_the_same_policy_as_keywords() -> None:
    spec = "thesis:critical_path_factor=inf:max_suspends=6:sample_then_suspend=always"
    assert baselines.parse_spec(spec) == (
        "thesis",
        {"critical_path_factor": math.inf, "max_suspends": 6, "sample_then_suspend": "always"},
    )
    by_name = baselines.make(spec).params()
    by_keywords = baselines.make(
        "thesis", critical_path_factor=math.inf, max_suspends=6, sample_then_suspend="always"
    ).params()
    assert by_name == by_keywords
    assert by_name != baselines.make("thesis").params()
    tiresias = baselines.make(
        "tiresias:queue_thresholds_gpu_s=[600, 7200]:promote_knob=inf:lease_s=60"
    )
    assert tiresias.params() == {
        "queue_thresholds_gpu_s": (600.0, 7200.0),
        "promote_knob": math.inf,
        "lease_s": 60.0,
    }


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("thesis:min_speed", r"expected KEY=VALUE after ':', got 'min_speed'"),
        ("thesis:=0.5", "expected KEY=VALUE"),
        ("thesis:min_speed=0.5:min_speed=0.6", "given twice"),
        ("thesis:min_sped=0.5", r"allowed: .*min_speed"),
        ("thesis:min_speed=1.5", "min_speed"),
        ("nope:min_speed=0.5", "available"),
    ],
)
def test_a_malformed_name_with_parameters_says_what_is_wrong(spec: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        baselines.make(spec)


def test_a_parameter_in_the_name_and_as_a_keyword_is_refused() -> None:
    with pytest.raises(ValueError, match="given twice"):
        baselines.make("thesis:min_speed=0.5", min_speed=0.6)


def test_predict_without_an_env_says_how_to_bind_one() -> None:
    with pytest.raises(RuntimeError, match=r"baselines\.make"):
        baselines.make("fifo").predict({})


# ------------------------------------------------------------ through the env
@pytest.fixture(scope="module")
def gym():
    # gymnasium is a dependency and importing gpushare_env registers GPUShare-v0: an env
    # that fails to build is a failure of every test below, never a skip
    import gymnasium

    import gpushare_env  # noqa: F401  (registers GPUShare-v0)

    return gymnasium


@pytest.mark.parametrize("name", EVERY)
def test_policy_takes_only_mask_allowed_actions_in_the_env(gym, name: str) -> None:
    # Philly-style sizes and lengths (scaled to minutes) arriving at twice the capacity of
    # the 16-GPU cluster, with windows of 6 waiting / 4 running jobs: queues form, the
    # windows bind, and jobs of every width meet fragments.
    config = {
        "cluster": "thesis",
        "workload": {"preset": "philly", "load": 2.0, "duration_scale": 1.0 / 60.0},
        "num_jobs": 80,
        "pending_window": 6,
        "running_window": 4,
        "invalid_action": "raise",
    }
    params = {"suspend_prob": 0.05} if name == "random" else {}
    env = gym.make("GPUShare-v0", config=config)
    policy = baselines.make(name, env, **params)
    kinds = set()
    for seed in (0, 1):
        obs, info = env.reset(seed=seed)
        done = False
        steps = 0
        while not done:
            action, _ = policy.predict(obs, deterministic=True)
            mask = env.unwrapped.action_masks()
            assert mask[int(action)], f"{name}: action {int(action)} is masked at step {steps}"
            kinds.add(type(env.unwrapped.decode_action(int(action))).__name__)
            obs, _, terminated, truncated, info = env.step(action)
            done = terminated or truncated
            steps += 1
        assert terminated, f"{name}: episode truncated after {steps} steps ({info})"
        assert info["metrics"]["num_jobs"] == 80
    assert "Schedule" in kinds
    if name.split(":")[0] in ("tiresias", "gandiva", "random", "thesis", *VARIANTS):
        assert "Suspend" in kinds, f"{name} never suspended a job"


def test_env_and_headless_runs_agree_when_the_windows_do_not_bind(gym) -> None:
    # With windows as large as the workload the env addresses every job, so a policy
    # driven through the env makes the same decisions as headless: same metrics.
    from gpushare_env.envs.config import EnvConfig
    from gpushare_env.envs.episodes import draw_episode

    config = EnvConfig.from_any({"workload": "thesis", "num_jobs": 40})
    for name in ("fifo_pack", "tiresias", "thesis"):
        env = gym.make(
            "GPUShare-v0",
            config={
                "workload": "thesis",
                "num_jobs": 40,
                "pending_window": 64,
                "running_window": 64,
            },
        )
        episode = rollout(baselines.make(name, env), env, seed=5)
        drawn = draw_episode(config, make_cluster("thesis"), 5)  # what reset(seed=5) draws
        result = run_headless(
            drawn.jobs, make_cluster("thesis"), baselines.make(name), rng=drawn.noise_rng
        )
        for key in ("makespan_s", "mean_jct_s", "suspends"):
            assert episode.metrics[key] == pytest.approx(result.metrics[key]), (name, key)


# --------------------------------------------------------------- completion
@pytest.fixture(scope="module")
def philly_200() -> list:
    # 200 Philly-style jobs (lengths scaled to minutes) offered at 3x the capacity of 64
    # GPUs: queues form and the preemptive policies suspend 100+ times
    jobs = make_workload(
        {"preset": "philly", "load": 3.0, "duration_scale": 1.0 / 60.0},
        np.random.default_rng(7),
        num_jobs=200,
        cluster_gpus=64,
    )
    cluster = make_cluster("medium")
    return fit_to_cluster(jobs, cluster.num_gpus, float(cluster.gpu_memory_gib.max())).jobs


@pytest.mark.parametrize("name", EVERY)
def test_policy_finishes_every_job_of_a_200_job_philly_workload(philly_200, name: str) -> None:
    assert len(philly_200) == 200
    # a tight livelock bound: 200 jobs need about 600 events (arrival, sampling, finish)
    # plus two per suspension; 20 events a job leaves room for a few suspensions each
    result = run_headless(
        philly_200,
        make_cluster("medium"),
        baselines.make(name),
        SimConfig(),
        rng=np.random.default_rng(7),
        max_events=20 * 200,
    )
    assert len(result.records) == 200
    assert {r.job_id for r in result.records} == {j.job_id for j in philly_200}
    # on this queue every preemptive policy preempts (sjf_pack: each job's sampling run),
    # and the others never do
    preemptive = name.partition(":")[0] not in {"fifo", "fifo_pack", "min_frag", "random"}
    assert (result.metrics["suspends"] > 0) == preemptive
    assert math.isfinite(result.metrics["mean_jct_s"])


# ------------------------------------------------------- gandiva and its variants
#: The parameters of Gandiva's algorithm (Xiao et al., OSDI'18): the time-slice quantum,
#: the packing limit on a GPU's load, and the gain a migration must bring.
GANDIVA_PARAMETERS = ["time_slice_s", "max_load", "migration_gain"]
CRITICAL_PATH_PARAMETERS = [
    "critical_path_factor",
    "critical_path_scope",
    "critical_path_protect",
    "critical_path_consolidate",
]


def test_gandiva_takes_only_the_parameters_of_the_gandiva_paper() -> None:
    assert list(baselines.make("gandiva").params()) == GANDIVA_PARAMETERS
    assert list(baselines.make("gandiva_srpt").params()) == GANDIVA_PARAMETERS
    assert list(baselines.make("gandiva_critical_path").params()) == [
        *GANDIVA_PARAMETERS,
        *CRITICAL_PATH_PARAMETERS,
    ]
    for key in ["order", *CRITICAL_PATH_PARAMETERS]:
        with pytest.raises(ValueError, match="Gandiva as published"):
            baselines.make("gandiva", **{key: "srpt" if key == "order" else 1.0})


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("gandiva:order=wait", "gandiva"),
        ("gandiva:order=srpt", "gandiva_srpt"),
        (
            "gandiva:max_load=1.25:time_slice_s=600:order=srpt",
            "gandiva_srpt:max_load=1.25:time_slice_s=600",
        ),
        (
            "gandiva:order=srpt:critical_path_factor=0.9",
            "gandiva_critical_path:critical_path_factor=0.9:critical_path_scope=all",
        ),
        (
            "gandiva:max_load=1.25:time_slice_s=600:order=srpt:critical_path_factor=2.5:"
            "critical_path_scope=started:critical_path_protect=true:"
            "critical_path_consolidate=true",
            "gandiva_critical_path:max_load=1.25:time_slice_s=600:critical_path_factor=2.5:"
            "critical_path_scope=started:critical_path_protect=true:"
            "critical_path_consolidate=true",
        ),
    ],
)
def test_a_variant_spelt_as_gandiva_is_refused_with_the_name_of_the_same_schedule(
    old: str, new: str
) -> None:
    with pytest.raises(ValueError, match="Gandiva as published") as error:
        baselines.make(old)
    assert str(error.value).endswith(f"the same schedule is {new!r}")
    name, params = baselines.parse_spec(new)
    old_params = baselines.parse_spec(old)[1]
    # the variant's spec sets every parameter the gandiva spelling sets (but order), equally
    assert {k: v for k, v in old_params.items() if k != "order"}.items() <= params.items()
    assert baselines.make(new).name == name


def _decisions(policy: baselines.Policy, jobs: list, duration_info: str) -> list:
    """Every decision ``policy`` takes headless on ``jobs`` (medium cluster)."""
    seen = []
    decide = policy.decide

    def recording(view):
        decision = decide(view)
        seen.append(decision)
        return decision

    policy.decide = recording  # type: ignore[method-assign]
    run_headless(
        jobs,
        make_cluster("medium"),
        policy,
        SimConfig(duration_info=duration_info),
        rng=np.random.default_rng(7),
    )
    return seen


@pytest.mark.parametrize("variant", VARIANTS)
def test_a_gandiva_variant_with_its_rules_off_schedules_as_gandiva(philly_200, variant) -> None:
    # A variant adds its rules through RULE_HOOKS only: with Gandiva's own hooks it takes
    # Gandiva's decisions, one for one, with predictions (slices, migrations) or without.
    cls = baselines.VARIANTS[variant]
    overridden = {
        key for key, value in vars(cls).items() if callable(value) and hasattr(Gandiva, key)
    }
    assert overridden <= {*RULE_HOOKS, "__init__", "params", "_reset_state"}, overridden
    rules_off = type(f"{cls.__name__}RulesOff", (cls,), {h: vars(Gandiva)[h] for h in RULE_HOOKS})
    for info in ("sampled", "none"):
        gandiva = _decisions(baselines.make("gandiva"), philly_200, info)
        assert len(gandiva) > 400
        assert _decisions(rules_off(), philly_200, info) == gandiva, info
        if info == "sampled":  # the rules act (they read predictions: under "none" only
            # a tie-break of slice victims differs, which the suspension budget may hide)
            assert _decisions(cls(), philly_200, info) != gandiva, info


def test_gandiva_critical_path_without_a_factor_schedules_as_gandiva_srpt(philly_200) -> None:
    srpt = baselines.make("gandiva_srpt:max_load=1.25")
    off = baselines.make("gandiva_critical_path:max_load=1.25:critical_path_factor=inf")
    expected = _decisions(srpt, philly_200, "sampled")
    assert sum(type(d).__name__ == "Suspend" for d in expected) > 10  # slices and migrations
    assert _decisions(off, philly_200, "sampled") == expected
    on = baselines.make("gandiva_critical_path:max_load=1.25")
    assert _decisions(on, philly_200, "sampled") != expected
