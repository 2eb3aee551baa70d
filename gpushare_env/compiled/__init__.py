"""The compiled core of the simulator (``_core``, Cython).

``_core.Core`` carries one episode in C: the simulator (events, rates, memory, the
placement strategies), the observation and mask encoder and the env's reward terms. It is
the only engine: ``gpushare_env.sim.engine.Simulator`` builds it and is its Python face,
``GPUShareEnv`` steps it, and ``SimView`` reads it (see ``docs/design/engine.md``).
"""
