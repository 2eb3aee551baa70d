"""Catalogs of GPU types and deep-learning models, with the sources of their figures.

GPU speed factors are ResNet-50 training-throughput ratios relative to a V100 (Lambda Labs
GPU benchmarks and TensorFlow's ``tf_cnn_benchmarks`` tables); the A100 figure is an
estimate.

Model figures are for one worker on one V100 at the listed batch size:

* iteration time: Lambda / ``tf_cnn_benchmarks`` throughput tables (images/s -> s/iter);
* memory: Salus's workload table (TensorFlow) and Lucid's (PyTorch);
* intensity ``u``: the fraction of a GPU's compute one worker uses alone, a calibrated
  estimate such that two ResNet-50 workers sharing a V100 each run at about 0.475 of solo
  speed (Gavel's co-location measurements give 0.37-0.5) and light pairs combine to
  about 1.8x (Lucid's light pairs, about 1.87x);
* suspend / resume overheads: checkpoint costs of 2-5 s and restart costs of 5-50 s
  growing with model size (Salus and AFS measurements); per-model values are estimates
  inside those ranges;
* cross-node factor: throughput kept when a job's workers span nodes (default 0.8,
  worse for models with many parameters, whose gradients cost more to all-reduce).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "DEFAULT_MODELS",
    "GPU_TYPES",
    "MODELS",
    "GPUType",
    "ModelSpec",
    "scaling_efficiency",
]


@dataclass(frozen=True, slots=True)
class GPUType:
    """A kind of GPU.

    Attributes:
        name: Short name, e.g. ``"v100"``.
        memory_gib: Device memory.  # [GiB]
        speed: Training throughput relative to a V100 (V100 = 1.0).
    """

    name: str
    memory_gib: float  # [GiB]
    speed: float  # [x V100]


GPU_TYPES: dict[str, GPUType] = {
    "v100": GPUType("v100", 16.0, 1.0),
    "v100_32g": GPUType("v100_32g", 32.0, 1.0),
    "p100": GPUType("p100", 16.0, 0.57),
    "p40": GPUType("p40", 24.0, 0.5),  # Philly's servers: 8 GPUs x 24 GB
    "1080ti": GPUType("1080ti", 11.0, 0.52),
    "2080ti": GPUType("2080ti", 11.0, 0.73),
    "k80": GPUType("k80", 12.0, 0.13),
    "a100": GPUType("a100", 40.0, 2.0),  # estimate
}


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """A deep-learning model as the simulator sees it.

    Attributes:
        name: Catalog key.
        iter_time_s: Solo time of one iteration of one worker on a V100.  # [s]
        memory_gib: Per-worker GPU memory at ``batch_size``.  # [GiB]
        intensity: Fraction of a GPU's compute one worker uses alone, in (0, 1].
        batch_size: Per-worker batch size the figures refer to.
        suspend_overhead_s: Checkpoint time; the job keeps its GPUs meanwhile.  # [s]
        resume_overhead_s: Restart time on (re)placement, holding GPUs without progress.  # [s]
        cross_node_factor: Throughput kept when the workers span nodes, in (0, 1].
        source: Where the figures come from.
    """

    name: str
    iter_time_s: float  # [s / iteration]
    memory_gib: float  # [GiB]
    intensity: float
    batch_size: int
    suspend_overhead_s: float  # [s]
    resume_overhead_s: float  # [s]
    cross_node_factor: float
    source: str


MODELS: dict[str, ModelSpec] = {
    "resnet50": ModelSpec(
        "resnet50", 0.158, 8.0, 1.0, 64, 3.0, 20.0, 0.8, "ResNet [He 2016]; 405 img/s on V100"
    ),
    "vgg16": ModelSpec(
        "vgg16", 0.225, 10.5, 1.0, 64, 5.0, 30.0, 0.7, "VGG [Simonyan 2014]; 284 img/s on V100"
    ),
    "inception_v3": ModelSpec(
        "inception_v3", 0.247, 6.0, 0.95, 64, 4.0, 35.0, 0.8, "Inception-v3; 259 img/s on V100"
    ),
    "googlenet": ModelSpec(
        "googlenet", 0.065, 1.8, 0.6, 64, 2.0, 8.0, 0.85, "GoogLeNet [Szegedy 2015]"
    ),
    "alexnet": ModelSpec("alexnet", 0.035, 1.5, 0.5, 128, 2.0, 5.0, 0.7, "AlexNet, batch 128"),
    "resnet152": ModelSpec("resnet152", 0.41, 12.0, 1.0, 64, 5.0, 50.0, 0.75, "ResNet-152"),
}

#: The four TF-Slim image-classification models the thesis's references cite.
DEFAULT_MODELS: tuple[str, ...] = ("resnet50", "vgg16", "inception_v3", "googlenet")

# Data-parallel scaling efficiency within a node. The ResNet-50 / P100 table
# (219 -> 422 -> 852 -> 1734 img/s at 1/2/4/8 GPUs) gives 0.96 / 0.97 / 0.99; we use the
# more conservative 0.96 / 0.95 / 0.93 so that larger models, which scale worse, are covered.
_EFFICIENCY: dict[int, float] = {1: 1.0, 2: 0.96, 3: 0.955, 4: 0.95, 8: 0.93}


def scaling_efficiency(num_gpus: int) -> float:
    """Return ``eff(n)``: throughput of ``n`` synchronous workers is ``n * eff(n)`` x one.

    Values between table points are interpolated linearly; beyond 8 workers the efficiency
    keeps falling by 0.01 per doubling (an extrapolation, not a measurement).
    """
    if num_gpus < 1:
        raise ValueError(f"num_gpus must be >= 1, got {num_gpus}")
    if num_gpus in _EFFICIENCY:
        return _EFFICIENCY[num_gpus]
    if num_gpus < 8:
        # linear between 4 and 8
        return 0.95 + (0.93 - 0.95) * (num_gpus - 4) / 4
    doublings = 0
    n = float(num_gpus)
    while n > 8:
        n /= 2
        doublings += 1
    return max(0.5, 0.93 - 0.01 * doublings)
