"""NVIDIA MIG (Multi-Instance GPU) geometry: profiles, placements, partitions, re-partitioning.

A MIG-capable GPU is cut into *GPU instances*. Each instance has a *profile* (``3g.20gb``:
3 compute slices, 20 GB) and a *placement*: the first of the memory slices it occupies. This
module is pure geometry (no simulated time, no jobs): which sets of instances one GPU can hold,
where a new instance can go, and which instances a change of partition destroys and creates.

Facts used (NVIDIA Multi-Instance GPU User Guide, "Supported MIG Profiles",
https://docs.nvidia.com/datacenter/tesla/mig-user-guide/supported-mig-profiles.html, and the
placements ``nvidia-smi mig -lgipp`` lists):

* An A100 or H100 has 7 compute slices and 8 memory slices. A profile takes a fixed number of
  memory slices and may start only at some of them; the table is the same on the A100 and H100
  (the names follow the memory: A100-40GB / A100-80GB and H100-80GB):

  ==================================  =======  =============  ============  =======
  profile                             compute  memory slices  start slices  at most
  ==================================  =======  =============  ============  =======
  ``1g.5gb``  / ``1g.10gb``           1/7      1              0-6           7
  ``1g.10gb`` / ``1g.20gb``           1/7      2              0, 2, 4, 6    4
  ``2g.10gb`` / ``2g.20gb``           2/7      2              0, 2, 4       3
  ``3g.20gb`` / ``3g.40gb``           3/7      4              0, 4          2
  ``4g.20gb`` / ``4g.40gb``           4/7      4              0             1
  ``7g.40gb`` / ``7g.80gb``           7/7      8              0             1
  ==================================  =======  =============  ============  =======

  So a ``3g`` instance at start 0 (memory slices 0-3) blocks a ``1g`` instance at start 3, and
  seven ``1g.5gb`` instances leave memory slice 7 unused.
* An A30 (24 GB) has 4 compute and 4 memory slices: ``1g.6gb`` (at most 4), ``2g.12gb`` (at
  most 2) and ``4g.24gb`` (1), as in the guide's A30 table. The guide draws the A30's
  placements as a figure only; the start slices used here (``1g.6gb`` at 0-3, ``2g.12gb`` at
  0 and 2, ``4g.24gb`` at 0) are the ones NVIDIA's NVML mock of the A30 returns for
  ``nvmlDeviceGetGpuInstancePossiblePlacements`` (github.com/NVIDIA/go-nvml,
  ``pkg/nvml/mock/shared/gpus/a30.go``); they match the figure's layout but were not read from
  a real A30.
* The media-extension profiles (``1g.5gb+me``, ...: the slices of their plain profile, at
  most one per GPU) are left out, as are other GPUs' tables (the H100 NVL's ``1g.12gb``, the
  H200's ``1g.18gb``, ...).
* A profile's memory here is its nominal size (memory slices x memory per slice, the number in
  its name); ``nvidia-smi mig -lgip`` reports slightly less (9.75 GiB for an H100's
  ``1g.10gb``).

Re-partitioning: switching MIG mode on or off needs an idle GPU and a GPU reset (not modelled
here). With MIG on, GPU instances are created and destroyed one at a time, about 0.1-0.2 s each
(as measured on an A30; :data:`DEFAULT_SECONDS_PER_OPERATION` is 0.15 s, a parameter of
:func:`repartition_plan`), and an instance in use
cannot be destroyed, so changing a partition drains only the instances being destroyed;
the others keep running. :func:`repartition_plan` counts those operations; the cost of
checkpointing and restarting the jobs of the drained instances is charged elsewhere.

Instances of a :class:`Partition` are kept sorted, so equal partitions compare and hash equal
and a scheduler can enumerate them (:func:`enumerate_partitions`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from types import MappingProxyType

__all__ = [
    "DEFAULT_SECONDS_PER_OPERATION",
    "MIG_GPU_MODELS",
    "Instance",
    "MigError",
    "MigGpuModel",
    "MigProfile",
    "Partition",
    "RepartitionPlan",
    "enumerate_partitions",
    "get_mig_model",
    "partition_problems",
    "repartition_plan",
]

#: Time of one GPU-instance create or destroy operation, the middle of the 0.1-0.2 s measured
#: on an A30.  [s]
DEFAULT_SECONDS_PER_OPERATION: float = 0.15


class MigError(ValueError):
    """An unknown GPU model or profile, an invalid partition or placement, or a refused plan."""


@dataclass(frozen=True)
class MigProfile:
    """One MIG GPU-instance profile of one GPU model (NVIDIA's ``-lgipp`` row)."""

    #: NVIDIA's profile name, e.g. ``"3g.20gb"``.
    name: str
    #: Compute slices (the number before ``g``).
    compute_slices: int
    #: Memory slices occupied, from the start slice on.
    memory_slices: int
    #: Nominal memory (memory slices x the model's memory per slice).  [GiB]
    memory_gib: float
    #: The memory slices an instance of this profile may start at, ascending.
    starts: tuple[int, ...]
    #: Most instances of this profile on one GPU.
    max_count: int

    def slices(self, start: int) -> range:
        """The memory slices an instance starting at ``start`` occupies."""
        return range(start, start + self.memory_slices)


@dataclass(frozen=True)
class MigGpuModel:
    """A MIG-capable GPU model: its slices and its profile table."""

    name: str
    compute_slices: int
    memory_slices: int
    #: Nominal memory of one memory slice.  [GiB]
    memory_per_slice_gib: float
    profiles: tuple[MigProfile, ...] = field(compare=False, repr=False)

    @property
    def profile_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.profiles)

    def profile(self, name: str | MigProfile) -> MigProfile:
        """The profile named ``name`` (``"3g.20gb"``; ``"MIG 3g.20gb"`` and ``"mig-3g.20gb"``
        are accepted too); a :class:`MigError` naming the model's profiles otherwise."""
        if isinstance(name, MigProfile):
            if name not in self.profiles:
                raise MigError(
                    f"profile {name.name} is not one of {self.name}'s profiles "
                    f"({', '.join(self.profile_names)})"
                )
            return name
        key = name.strip().lower()
        for prefix in ("mig ", "mig-"):
            if key.startswith(prefix):
                key = key[len(prefix) :].strip()
        for p in self.profiles:
            if p.name == key:
                return p
        raise MigError(
            f"unknown MIG profile {name!r} for {self.name}: choose one of "
            f"{', '.join(self.profile_names)}"
        )

    def instance(self, profile: str | MigProfile, start: int) -> Instance:
        """An :class:`Instance` of the named profile at ``start`` (not checked here)."""
        return Instance(self.profile(profile), start)

    def compute_fraction(self, profile: str | MigProfile) -> float:
        """The share of the GPU's compute (its SMs) the profile gets: ``3g`` on an A100, 3/7."""
        return self.profile(profile).compute_slices / self.compute_slices

    def memory_fraction(self, profile: str | MigProfile) -> float:
        """The share of the GPU's memory slices the profile occupies."""
        return self.profile(profile).memory_slices / self.memory_slices

    def empty(self) -> Partition:
        """The partition with no instances (MIG on, nothing created)."""
        return Partition(self, ())


def _model(
    name: str,
    slice_gib: float,
    rows: Iterable[tuple[str, int, int, tuple[int, ...], int]],
    compute_slices: int,
    memory_slices: int,
) -> MigGpuModel:
    profiles = tuple(
        MigProfile(pname, c, m, m * slice_gib, starts, most) for pname, c, m, starts, most in rows
    )
    return MigGpuModel(name, compute_slices, memory_slices, slice_gib, profiles)


def _a100_h100(name: str, slice_gib: int) -> MigGpuModel:
    g = slice_gib
    return _model(
        name,
        float(g),
        [
            (f"1g.{g}gb", 1, 1, (0, 1, 2, 3, 4, 5, 6), 7),
            (f"1g.{2 * g}gb", 1, 2, (0, 2, 4, 6), 4),
            (f"2g.{2 * g}gb", 2, 2, (0, 2, 4), 3),
            (f"3g.{4 * g}gb", 3, 4, (0, 4), 2),
            (f"4g.{4 * g}gb", 4, 4, (0,), 1),
            (f"7g.{8 * g}gb", 7, 8, (0,), 1),
        ],
        compute_slices=7,
        memory_slices=8,
    )


#: The MIG GPU models by name: ``"A100-40GB"``, ``"A100-80GB"``, ``"H100-80GB"``, ``"A30"``.
MIG_GPU_MODELS: Mapping[str, MigGpuModel] = MappingProxyType(
    {
        "A100-40GB": _a100_h100("A100-40GB", 5),
        "A100-80GB": _a100_h100("A100-80GB", 10),
        "H100-80GB": _a100_h100("H100-80GB", 10),
        "A30": _model(
            "A30",
            6.0,
            [
                ("1g.6gb", 1, 1, (0, 1, 2, 3), 4),
                ("2g.12gb", 2, 2, (0, 2), 2),
                ("4g.24gb", 4, 4, (0,), 1),
            ],
            compute_slices=4,
            memory_slices=4,
        ),
    }
)


def get_mig_model(name: str | MigGpuModel) -> MigGpuModel:
    """The MIG GPU model named ``name`` (case-insensitive); a :class:`MigError` naming the
    known models otherwise."""
    if isinstance(name, MigGpuModel):
        return name
    for key, model in MIG_GPU_MODELS.items():
        if key.lower() == name.strip().lower():
            return model
    raise MigError(f"unknown MIG GPU model {name!r}: choose one of {', '.join(MIG_GPU_MODELS)}")


@dataclass(frozen=True)
class Instance:
    """A GPU instance: a profile placed at a start memory slice."""

    profile: MigProfile
    start: int

    @property
    def slices(self) -> range:
        """The memory slices the instance occupies."""
        return self.profile.slices(self.start)

    def sort_key(self) -> tuple[int, int, str]:
        return (self.start, -self.profile.memory_slices, self.profile.name)

    def __str__(self) -> str:
        return f"{self.profile.name}@{self.start}"

    def __repr__(self) -> str:
        return f"Instance({self})"


def _slice_text(slices: Iterable[int]) -> str:
    s = sorted(slices)
    if len(s) == 1:
        return f"memory slice {s[0]}"
    if s == list(range(s[0], s[-1] + 1)):
        return f"memory slices {s[0]}-{s[-1]}"
    return "memory slices " + ", ".join(map(str, s))


def _starts_text(starts: tuple[int, ...]) -> str:
    if len(starts) == 1:
        return f"memory slice {starts[0]}"
    return "memory slices " + ", ".join(map(str, starts))


def partition_problems(model: MigGpuModel, instances: Iterable[Instance]) -> list[str]:
    """Why ``instances`` cannot be one GPU's partition of ``model`` (empty if they can).

    The rules: each profile is one of the model's, each start one its profile allows, no two
    instances share a memory slice, no profile exceeds its most instances, and the compute
    slices add up to at most the model's.
    """
    insts = list(instances)
    problems: list[str] = []
    for inst in insts:
        if inst.profile not in model.profiles:
            problems.append(
                f"{inst}: {inst.profile.name} is not one of {model.name}'s profiles "
                f"({', '.join(model.profile_names)})"
            )
        elif inst.start not in inst.profile.starts:
            problems.append(
                f"{inst}: {inst.profile.name} may start only at {_starts_text(inst.profile.starts)}"
            )
    owner: dict[int, Instance] = {}
    for inst in sorted(insts, key=Instance.sort_key):
        clash: dict[Instance, list[int]] = {}
        for s in inst.slices:
            if s >= model.memory_slices or s < 0:
                continue  # a start outside the GPU is reported above
            if s in owner:
                clash.setdefault(owner[s], []).append(s)
            else:
                owner[s] = inst
        for other, shared in clash.items():
            problems.append(
                f"{other} ({_slice_text(other.slices)}) and {inst} ({_slice_text(inst.slices)}) "
                f"overlap on {_slice_text(shared)}"
            )
    counts = Counter(inst.profile for inst in insts)
    for profile, n in counts.items():
        if n > profile.max_count:
            problems.append(f"{n} instances of {profile.name}: at most {profile.max_count}")
    compute = sum(inst.profile.compute_slices for inst in insts)
    if compute > model.compute_slices:
        problems.append(f"{compute} compute slices in use: {model.name} has {model.compute_slices}")
    return problems


@dataclass(frozen=True)
class Partition:
    """The GPU instances of one GPU: validated, immutable and hashable.

    ``Partition(model, instances)`` raises a :class:`MigError` naming every conflict (the
    instances and memory slices that overlap, a start the profile does not allow, a count over
    its limit). The instances are kept sorted by start, so two partitions with the same
    instances are equal whatever order they were given in.
    """

    model: MigGpuModel
    instances: tuple[Instance, ...] = ()

    def __post_init__(self) -> None:
        insts = tuple(sorted(self.instances, key=Instance.sort_key))
        object.__setattr__(self, "instances", insts)
        problems = partition_problems(self.model, insts)
        if problems:
            shown = ", ".join(map(str, insts)) or "no instances"
            raise MigError(
                f"invalid {self.model.name} MIG partition ({shown}): " + "; ".join(problems)
            )

    @classmethod
    def of(cls, model: str | MigGpuModel, *specs: tuple[str, int]) -> Partition:
        """A partition from ``(profile name, start)`` pairs:
        ``Partition.of("A100-40GB", ("3g.20gb", 0), ("2g.10gb", 4))``."""
        m = get_mig_model(model)
        return cls(m, tuple(m.instance(name, start) for name, start in specs))

    def __str__(self) -> str:
        return f"{self.model.name}[{', '.join(map(str, self.instances))}]"

    def __repr__(self) -> str:
        return f"Partition({self})"

    def __len__(self) -> int:
        return len(self.instances)

    def __contains__(self, inst: object) -> bool:
        return inst in self.instances

    @property
    def used_slices(self) -> frozenset[int]:
        """The memory slices some instance occupies."""
        return frozenset(s for inst in self.instances for s in inst.slices)

    @property
    def free_slices(self) -> tuple[int, ...]:
        """The memory slices no instance occupies, ascending."""
        used = self.used_slices
        return tuple(s for s in range(self.model.memory_slices) if s not in used)

    @property
    def compute_slices_used(self) -> int:
        return sum(inst.profile.compute_slices for inst in self.instances)

    def count(self, profile: str | MigProfile) -> int:
        """How many instances of ``profile`` the partition holds."""
        p = self.model.profile(profile)
        return sum(1 for inst in self.instances if inst.profile == p)

    def can_place(self, profile: str | MigProfile) -> tuple[int, ...]:
        """The starts at which one more ``profile`` instance fits, lowest first (empty if none):
        the start is allowed for the profile, its memory slices are free, the profile is under
        its most instances and the compute slices suffice."""
        p = self.model.profile(profile)
        if self.count(p) >= p.max_count:
            return ()
        if self.compute_slices_used + p.compute_slices > self.model.compute_slices:
            return ()
        used = self.used_slices
        return tuple(s for s in p.starts if used.isdisjoint(p.slices(s)))

    def placeable(self) -> tuple[MigProfile, ...]:
        """The profiles of which one more instance fits somewhere."""
        return tuple(p for p in self.model.profiles if self.can_place(p))

    def place(self, profile: str | MigProfile, start: int | None = None) -> Partition:
        """This partition with one more ``profile`` instance, at ``start`` or else at the lowest
        start :meth:`can_place` gives; a :class:`MigError` if it does not fit.

        (The lowest free start is this module's rule; which start the driver itself picks when
        ``nvidia-smi mig -cgi`` is given no placement is not modelled.)"""
        p = self.model.profile(profile)
        if start is None:
            starts = self.can_place(p)
            if not starts:
                raise MigError(
                    f"no room for {p.name} on {self}: free {_slice_text(self.free_slices)}"
                    if self.free_slices
                    else f"no room for {p.name} on {self}: no free memory slice"
                )
            start = starts[0]
        return Partition(self.model, (*self.instances, Instance(p, start)))

    def remove(self, instance: Instance | tuple[str, int]) -> Partition:
        """This partition without ``instance`` (an :class:`Instance` or ``(profile, start)``);
        a :class:`MigError` if it holds no such instance."""
        inst = instance if isinstance(instance, Instance) else self.model.instance(*instance)
        if inst not in self.instances:
            raise MigError(f"{inst} is not an instance of {self}")
        rest = list(self.instances)
        rest.remove(inst)
        return Partition(self.model, tuple(rest))


@dataclass(frozen=True)
class RepartitionPlan:
    """The instance operations that turn one partition of a GPU into another.

    Destroy first (in ``destroy`` order), then create (in ``create`` order): every
    intermediate set of instances is a subset of ``current`` or of ``target``, so each step is
    valid. ``keep`` are the instances in both, which keep running.
    """

    current: Partition
    target: Partition
    destroy: tuple[Instance, ...]
    create: tuple[Instance, ...]
    keep: tuple[Instance, ...]
    seconds_per_operation: float = DEFAULT_SECONDS_PER_OPERATION

    @property
    def operations(self) -> int:
        """Instance create and destroy operations, done one at a time."""
        return len(self.destroy) + len(self.create)

    @property
    def seconds(self) -> float:
        """Time of the operations (not of draining or restarting jobs).  [s]"""
        return self.operations * self.seconds_per_operation

    def apply(self, partition: Partition | None = None) -> Partition:
        """Carry out the plan on ``partition`` (default ``current``) step by step, each step
        validated; the result equals ``target``."""
        p = self.current if partition is None else partition
        for inst in self.destroy:
            p = p.remove(inst)
        for inst in self.create:
            p = p.place(inst.profile, inst.start)
        return p


def repartition_plan(
    current: Partition,
    target: Partition,
    busy: Iterable[Instance] = (),
    seconds_per_operation: float = DEFAULT_SECONDS_PER_OPERATION,
) -> RepartitionPlan:
    """The instances to destroy and create to turn ``current`` into ``target``.

    An instance at the same start with the same profile in both is kept. ``busy`` are
    instances of ``current`` in use: destroying one is refused (a :class:`MigError` naming it
    and the target instance that needs its slices); drain it first. ``seconds_per_operation``
    is the time of one create or destroy (default :data:`DEFAULT_SECONDS_PER_OPERATION`).
    """
    if current.model != target.model:
        raise MigError(
            f"cannot turn a partition of {current.model.name} into one of {target.model.name}"
        )
    if not seconds_per_operation >= 0.0:
        raise MigError(f"seconds_per_operation must be >= 0, got {seconds_per_operation!r}")
    busy_set = set(busy)
    unknown = [b for b in busy_set if b not in current.instances]
    if unknown:
        raise MigError(
            f"busy instance(s) {', '.join(sorted(map(str, unknown)))} are not in {current}"
        )
    keep = tuple(i for i in current.instances if i in target.instances)
    destroy = tuple(i for i in current.instances if i not in target.instances)
    create = tuple(i for i in target.instances if i not in current.instances)
    refused = [i for i in destroy if i in busy_set]
    if refused:
        parts = []
        for inst in refused:
            need = [str(c) for c in create if not set(c.slices).isdisjoint(inst.slices)]
            why = f" (its slices are needed by {', '.join(need)})" if need else ""
            parts.append(f"{inst}{why}")
        raise MigError(
            f"cannot re-partition {current} into {target}: busy instance(s) "
            f"{'; '.join(parts)} would be destroyed; drain them first"
        )
    return RepartitionPlan(current, target, destroy, create, keep, seconds_per_operation)


@cache
def _enumerate(model: MigGpuModel) -> tuple[Partition, ...]:
    candidates = sorted(
        (Instance(p, s) for p in model.profiles for s in p.starts), key=Instance.sort_key
    )
    out: list[Partition] = []

    def grow(i: int, chosen: list[Instance], used: int, compute: int, counts: Counter) -> None:
        out.append(Partition(model, tuple(chosen)))
        for j in range(i, len(candidates)):
            c = candidates[j]
            mask = sum(1 << s for s in c.slices)
            p = c.profile
            if (
                used & mask
                or compute + p.compute_slices > model.compute_slices
                or counts[p] >= p.max_count
            ):
                continue
            chosen.append(c)
            counts[p] += 1
            grow(j + 1, chosen, used | mask, compute + p.compute_slices, counts)
            counts[p] -= 1
            chosen.pop()

    grow(0, [], 0, 0, Counter())
    return tuple(out)


def enumerate_partitions(model: str | MigGpuModel) -> tuple[Partition, ...]:
    """Every valid partition of one GPU of ``model``, the empty one first (cached)."""
    return _enumerate(get_mig_model(model))
