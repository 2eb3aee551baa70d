"""The Gymnasium environment ``GPUShare-v0`` and its configuration.

>>> import gymnasium as gym
>>> import gpushare_env  # registers GPUShare-v0
>>> env = gym.make("GPUShare-v0", config={"cluster": "tiny", "num_jobs": 5})
>>> obs, info = env.reset(seed=0)
>>> sorted(obs)
['frag_hist', 'global', 'gpus', 'pending', 'running']
"""

from gpushare_env.envs.config import (
    FLAT_KEYS,
    INVALID_ACTION_MODES,
    REWARD_COMPONENTS,
    EnvConfig,
    LimitsConfig,
    ObservationConfig,
    RewardConfig,
    SimulatorConfig,
    WindowsConfig,
)
from gpushare_env.envs.gpushare_env import GPUShareEnv, InvalidActionError, make_env
from gpushare_env.envs.observation import (
    FRAG_FEATURES,
    GLOBAL_FEATURES,
    GPU_FEATURES,
    PENDING_FEATURES,
    RUNNING_FEATURES,
    log_time,
)
from gpushare_env.envs.spec import env_spec_markdown

__all__ = [
    "FLAT_KEYS",
    "FRAG_FEATURES",
    "GLOBAL_FEATURES",
    "GPU_FEATURES",
    "INVALID_ACTION_MODES",
    "PENDING_FEATURES",
    "REWARD_COMPONENTS",
    "RUNNING_FEATURES",
    "EnvConfig",
    "GPUShareEnv",
    "InvalidActionError",
    "LimitsConfig",
    "ObservationConfig",
    "RewardConfig",
    "SimulatorConfig",
    "WindowsConfig",
    "env_spec_markdown",
    "log_time",
    "make_env",
]
