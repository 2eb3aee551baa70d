"""The documented limits of the simulator's inputs, and the checks of its number types.

Every input is refused beyond these limits when it is built or read (a ``JobSpec``, a trace
row, a cluster), naming the field and the job, line or key, so no value ever reaches the
compiled core that its C types or its floating-point arithmetic cannot hold
(``docs/bad_input.md`` has the table of every bad input and its error).

Why these numbers: simulated time is a double in seconds. Below ``2**30`` s (34 years) a
double resolves ``2**-22`` s (0.24 us), so with arrivals at most :data:`MAX_ARRIVAL_S`
(1e9 s, 31.7 years) and solo durations at most :data:`MAX_DURATION_S` (1e8 s, 3.2 years;
Philly's longest job ran about 60 days, 5.2e6 s) every step of at least
:data:`MIN_ITER_TIME_S` still moves the clock of a job's own events, and ``finish -
arrival`` keeps about ten significant digits. (A workload whose jobs run back to back can
take the clock further; at 1e12 s it still resolves 0.2 ms.) An arrival of 1e308 s would
swallow every duration added to it: its job would "finish" the instant it arrived. Job ids
are C ``int64`` in the core; iteration counts are doubles there, exact up to ``2**53``.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

__all__ = [
    "MAX_ARRIVAL_S",
    "MAX_BATCH_SIZE",
    "MAX_CLUSTER_GPUS",
    "MAX_DURATION_S",
    "MAX_GPUS_PER_NODE",
    "MAX_GPU_MEMORY_GIB",
    "MAX_ITERATIONS",
    "MAX_JOBS",
    "MAX_JOBS_PER_GPU",
    "MAX_JOB_ID",
    "MIN_GPU_MEMORY_GIB",
    "MIN_ITER_TIME_S",
    "is_finite",
    "is_int",
    "is_real",
]

#: Largest job id: ids are C ``int64`` in the compiled core.
MAX_JOB_ID: int = 2**63 - 1
#: Latest arrival (submission) time.  [s]
MAX_ARRIVAL_S: float = 1e9
#: Longest solo exclusive duration of a job (``JobSpec.solo_duration_s``).  [s]
MAX_DURATION_S: float = 1e8
#: Shortest solo time of one step of one worker (``JobSpec.iter_time_s``).  [s]
MIN_ITER_TIME_S: float = 1e-6
#: Most iterations of a job: iteration counts are doubles in the core, exact to ``2**53``.
MAX_ITERATIONS: int = 2**53
#: Most jobs of a workload (``num_jobs``; the headless runner is benchmarked at 1e5).
MAX_JOBS: int = 10_000_000
#: Largest per-worker batch size (``JobSpec.batch_size``; memory scales with it).
MAX_BATCH_SIZE: int = 2**31 - 1
#: Most GPUs of a cluster (and so of a job).
MAX_CLUSTER_GPUS: int = 65_536
#: Most GPUs of one node (the core pads its node table to the widest node).
MAX_GPUS_PER_NODE: int = 256
#: Most workers one GPU may host (``ClusterConfig.max_jobs_per_gpu``).
MAX_JOBS_PER_GPU: int = 64
#: Smallest and largest memory of one GPU (the core divides by it).  [GiB]
MIN_GPU_MEMORY_GIB: float = 1e-3
MAX_GPU_MEMORY_GIB: float = 1e6


def is_int(value: Any) -> bool:
    """True for a Python or numpy integer. ``bool`` is not an integer here: ``True`` as a
    GPU count, a window or an action is far more often a mistake than a 1."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def is_real(value: Any) -> bool:
    """True for a Python or numpy int or float (not ``bool``, not a string); may be nan."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def is_finite(value: Any) -> bool:
    """True for a finite real number (see :func:`is_real`)."""
    return is_real(value) and math.isfinite(value)


_NAMED = {
    MAX_JOB_ID: "2**63 - 1",
    2**62: "2**62",
    MAX_ITERATIONS: "2**53",
    MAX_BATCH_SIZE: "2**31 - 1",
}


def number_text(value: float) -> str:
    """A limit as the docs write it: ``2**63 - 1``, ``1e9``, ``65536``, ``1e-06`` -> ``1e-6``."""
    if isinstance(value, int) and value in _NAMED:
        return _NAMED[value]
    if isinstance(value, int) or (float(value).is_integer() and abs(value) < 1e5):
        return str(int(value))
    mantissa, _, exponent = f"{value:g}".partition("e")
    return f"{mantissa}e{int(exponent)}" if exponent else mantissa


def range_text(low: float, high: float | None = None, *, low_open: bool = False) -> str:
    """``">= 0 and <= 1e9"`` (or ``"> 0 ..."`` with ``low_open``; ``high`` ``None`` or
    infinite: no upper bound), the way every error names an allowed range."""
    text = f"{'>' if low_open else '>='} {number_text(low)}"
    return text if high is None or high == math.inf else f"{text} and <= {number_text(high)}"
