"""The general model under the MIG model: its observation has no ``obs["mig"]``, so it is
refused with a message that names the part (not SB3's bare space mismatch)."""

from __future__ import annotations

import json
from pathlib import Path

import gymnasium as gym
import pytest

from agents.training import load_model

ZOO = Path(__file__).resolve().parents[2] / "agents" / "zoo"


def test_the_general_model_is_refused_under_mig_by_the_part_it_lacks() -> None:
    card = json.loads((ZOO / "maskable_ppo_dagger_general.json").read_text(encoding="utf-8"))
    config = {**card["env_config"], "cluster": "mig_medium", "sharing": "mig"}
    env = gym.make("GPUShare-v0", config=config)
    with pytest.raises(ValueError, match=r"has \['mig'\] part\(s\) and lacks none"):
        load_model(ZOO / "maskable_ppo_dagger_general.zip", env=env)
