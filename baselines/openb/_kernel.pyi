"""Type stub of the compiled placement loop (``_kernel.pyx``)."""

from typing import Any

import numpy as np

POLICY_CODES: dict[str, int]

def place_all(
    policy: int,
    cpu_capacity: np.ndarray,
    memory_capacity: np.ndarray,
    num_gpus: np.ndarray,
    model_bit: np.ndarray,
    tie_rank: np.ndarray,
    cpu: np.ndarray,
    memory: np.ndarray,
    num_gpu: np.ndarray,
    gpu_milli: np.ndarray,
    gpu_spec: np.ndarray,
    kind: np.ndarray,
    typical_cpu: np.ndarray,
    typical_num: np.ndarray,
    typical_milli: np.ndarray,
    typical_spec: np.ndarray,
    typical_frequency: np.ndarray,
    draws: np.ndarray,
) -> dict[str, Any]: ...
