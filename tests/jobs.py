"""Hand-made jobs for the tests (the simulator's ``JobSpec`` with test defaults)."""

from __future__ import annotations

from gpushare_env.sim import JobSpec


def job(
    job_id: int,
    arrival_s: float,
    iterations: int,
    num_gpus: int = 1,
    memory_gib: float = 8.0,
    intensity: float = 1.0,
    iter_time_s: float = 1.0,
    model: str = "resnet50",
) -> JobSpec:
    """A job whose solo duration is ``iterations * iter_time_s`` on one GPU."""
    return JobSpec(
        job_id=job_id,
        arrival_s=arrival_s,
        model=model,
        batch_size=64,
        num_gpus=num_gpus,
        iterations=iterations,
        memory_gib=memory_gib,
        intensity=intensity,
        iter_time_s=iter_time_s,
    )
