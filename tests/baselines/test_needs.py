"""What a policy needs of its setting is declared once, on its class, and ``baselines.make``
refuses a policy where it is missing: in an env whose ``strategies`` lack a strategy it
places with, or whose sharing model is not the one it needs, and headless alike. One
registry names every policy; ``fgd`` is the old name of ``min_frag`` and warns."""

from __future__ import annotations

import warnings

import gymnasium as gym
import pytest

import baselines
from baselines.min_frag import MinFrag
from gpushare_env.sim.placement import ALL_STRATEGIES, MIG_RULES, SHARE_RULES, STRATEGIES

EVERY = [*baselines.available(), *baselines.variants(), *baselines.planners(),
         *baselines.share_policies(), *baselines.mig_policies()]  # fmt: skip


def test_one_registry_names_every_policy_and_its_groups_are_views_of_it() -> None:
    assert list(baselines.REGISTRY) == EVERY
    for group, names in (("policy", baselines.POLICIES), ("variant", baselines.VARIANTS),
                         ("planner", baselines.PLANNERS),
                         ("share_rule", baselines.SHARE_POLICIES),
                         ("mig", baselines.MIG_POLICIES)):  # fmt: skip
        assert list(names) == [n for n, (g, _) in baselines.REGISTRY.items() if g == group]
    for name, (_, cls) in baselines.REGISTRY.items():
        assert cls.name == name


@pytest.mark.parametrize("name", EVERY)
def test_every_policy_declares_strategies_the_simulator_knows(name: str) -> None:
    needs = baselines.needs_strategies(name)
    assert set(needs) <= set(ALL_STRATEGIES)
    expected = "shares" if set(needs) & set(SHARE_RULES) else None
    assert baselines.needs_sharing(name) == (
        expected or ("mig" if set(needs) & set(MIG_RULES) else None)
    )
    assert baselines.make(name).needs_strategies == needs


def test_the_declared_needs() -> None:
    assert baselines.needs_strategies("fifo") == ("exclusive",)
    assert baselines.needs_strategies("fifo_pack") == ("pack",)
    assert baselines.needs_strategies("min_frag") == ("min_frag",)
    assert baselines.needs_strategies("random") == ()  # it picks among those offered
    assert baselines.needs_strategies("share_fgd") == ("share_fgd",)
    assert baselines.needs_strategies("lookahead:base=fifo") == ("exclusive",)  # its base's
    assert baselines.needs_sharing("share_packing") == "shares"
    assert baselines.needs_sharing("thesis") is None


def test_make_refuses_a_policy_whose_strategy_the_env_lacks() -> None:
    env = gym.make("GPUShare-v0", config={"strategies": ["pack", "spread"]})
    missing = r"'thesis' places with .* lack \['exclusive', 'min_frag'\]"
    with pytest.raises(ValueError, match=missing):
        baselines.make("thesis", env)
    assert baselines.make("fifo_pack", env).allowed_strategies == ("pack", "spread")
    with pytest.raises(ValueError, match="lack"):
        baselines.make("thesis", strategies=["pack", "spread"])  # headless, the same rule


def test_make_refuses_a_rule_under_the_memory_model_and_without_its_strategy() -> None:
    with pytest.raises(ValueError, match=r"lack \['share_fgd'\]"):
        baselines.make("share_fgd", gym.make("GPUShare-v0"))
    with pytest.raises(ValueError, match=r"needs simulator\.sharing = 'shares', got 'memory'"):
        baselines.make("share_fgd", strategies=[*STRATEGIES, "share_fgd"], sharing="memory")
    config = {"sharing": "shares", "strategies": [*STRATEGIES, "share_fgd"]}
    assert baselines.make("share_fgd", gym.make("GPUShare-v0", config=config)).name == "share_fgd"


def test_the_env_settings_a_policy_needs() -> None:
    assert baselines.env_overrides("thesis") == {}
    assert baselines.env_overrides("share_fgd:seed=3") == {"strategies": [*STRATEGIES, "share_fgd"]}


def test_a_policy_picking_among_strategies_picks_among_those_offered() -> None:
    env = gym.make("GPUShare-v0", config={"strategies": ["spread"], "num_jobs": 8})
    policy = baselines.make("random", env)
    env.reset(seed=0)
    for _ in range(50):  # every decision is one the env's actions carry
        action, _ = policy.predict(None)
        _, _, terminated, truncated, _ = env.step(int(action))
        if terminated or truncated:
            break


def test_a_setting_is_the_env_s_when_an_env_is_given() -> None:
    with pytest.raises(ValueError, match="give them only headless"):
        baselines.make("fifo", gym.make("GPUShare-v0"), strategies=["exclusive"])


def test_fgd_is_the_old_name_of_min_frag_and_warns() -> None:
    with pytest.warns(FutureWarning, match="policy 'fgd' is now named 'min_frag'"):
        policy = baselines.make("fgd")
    assert isinstance(policy, MinFrag) and policy.name == "min_frag"
    with pytest.warns(FutureWarning, match="now named 'min_frag'"):
        assert isinstance(baselines.make("fgd:seed=2"), MinFrag)
    assert "fgd" not in baselines.REGISTRY and baselines.ALIASES["fgd"] == "min_frag"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert baselines.env_overrides("fgd") == {}  # asking what it needs does not warn
        from baselines.fgd import FGD  # the old module and class stay importable

    assert FGD is MinFrag
