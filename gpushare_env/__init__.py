"""GPUShare: a GPU-sharing cluster simulator and the Gymnasium environment ``GPUShare-v0``.

Importing the package registers ``GPUShare-v0`` (idempotently), so
``gym.make("GPUShare-v0")`` works after ``import gpushare_env`` and
``gym.make("gpushare_env:GPUShare-v0")`` works without it.
"""

__all__ = ["ENV_ID"]

#: The registered id of the environment; behaviour changes bump the version.
ENV_ID = "GPUShare-v0"


def _register_envs() -> None:
    """Register the env once, however often the package is (re)imported.

    Without gymnasium the simulation core still works headless; only the env is missing.
    """
    try:
        from gymnasium.envs.registration import register, registry
    except ImportError:  # pragma: no cover - gymnasium is a core dependency
        return
    if ENV_ID not in registry:
        register(id=ENV_ID, entry_point="gpushare_env.envs.gpushare_env:GPUShareEnv")


_register_envs()
