"""Gavel's measured co-location throughputs: the shipped table, its converter and its loader.

The Gavel project (D. Narayanan et al., "Heterogeneity-Aware Cluster Scheduling Policies for
Deep Learning Workloads", OSDI 2020; ``stanford-futuredata/gavel``, MIT licence, Copyright
(c) 2020 Stanford Future Data Systems) measured, on K80, P100 and V100 GPUs, each job type's
throughput alone and with each other job type sharing the GPU. Its file
``scheduler/simulation_throughputs.json`` maps::

    gpu_type -> "(job type, scale factor)" -> {"null": solo throughput,
                                                "(partner type, scale factor)": [own, partner]}

Throughputs are training steps per second of each job; ``[0.0, 0.0]`` marks a pair that
could not share the GPU (it did not fit in memory).

:func:`convert` keeps the part the simulator can use (GPU types ``k80``, ``p100``, ``v100``,
not the ``*_unconsolidated`` variants; job types of scale factor 1, i.e. one GPU, with
partners of scale factor 1) and writes it as ``data/gavel_colocation.json``, layout::

    {"format": "gavel_colocation/1",
     "source": {"repository": ..., "path": ..., "commit": ..., "blob": ..., "licence": ...,
                "copyright": ..., ...},
     "gpu_types": {"v100": {"solo": {job: throughput},
                            "pairs": {job: {partner: [own, partner]}}}}}

Job types are Gavel's names without the scale factor (``"ResNet-50 (batch size 64)"``).
Every pair is given both ways, ``pairs[a][b] == pairs[b][a]`` reversed, as in the source.
Keys are sorted, so converting the same source gives the same bytes::

    python -m gpushare_env.sim.gavel simulation_throughputs.json gavel_colocation.json

:func:`load_colocation` reads and checks it; :meth:`ColocationTable.normalised` gives a pair's
throughputs as fractions of each job's solo throughput. :data:`CATALOG_TO_GAVEL` maps the
catalog's models to Gavel job types.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import os
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

from gpushare_env.sim.limits import is_finite

__all__ = [
    "CATALOG_PROXIES",
    "CATALOG_TO_GAVEL",
    "FORMAT",
    "GAVEL_BLOB",
    "GAVEL_COMMIT",
    "KEPT_GPU_TYPES",
    "UNMATCHED_MODELS",
    "ColocationTable",
    "GPUColocation",
    "NormalisedPair",
    "convert",
    "load_colocation",
    "main",
    "nearest_job_type",
]

PathLike = str | os.PathLike[str]

#: The value of the shipped file's ``"format"`` key.
FORMAT = "gavel_colocation/1"
#: The package data file :func:`load_colocation` reads by default.
DATA_FILE = "gavel_colocation.json"
#: Gavel's repository and the file the table comes from.
GAVEL_REPOSITORY = "stanford-futuredata/gavel"
GAVEL_PATH = "scheduler/simulation_throughputs.json"
#: The commit of the shipped table, and the git blob id of ``GAVEL_PATH`` at that commit.
GAVEL_COMMIT = "c4fa40097339e9608ab71fd64c8bdea96a5e4a4c"
GAVEL_BLOB = "b8a07356c9ac9ab55c826361d4b8fa219f448ab8"
#: GPU types kept (the consolidated measurements; the catalog names them alike).
KEPT_GPU_TYPES: tuple[str, ...] = ("k80", "p100", "v100")
#: Keys every ``"source"`` object must have (non-empty strings).
SOURCE_KEYS: tuple[str, ...] = ("repository", "path", "commit", "licence", "copyright")
#: The fixed part of the ``"source"`` object :func:`convert` writes.
SOURCE_TEXT: dict[str, str] = {
    "project": "Gavel",
    "paper": 'D. Narayanan et al., "Heterogeneity-Aware Cluster Scheduling Policies for Deep '
    'Learning Workloads", OSDI 2020',
    "repository": GAVEL_REPOSITORY,
    "path": GAVEL_PATH,
    "licence": "MIT",
    "copyright": "Copyright (c) 2020 Stanford Future Data Systems",
    "selection": "GPU types k80, p100, v100 (consolidated); job types of scale factor 1 "
    "(one GPU) and their pairs with job types of scale factor 1",
    "units": "training steps per second of each job; a pair is [own, partner], "
    "[0.0, 0.0] for a pair that could not share the GPU",
}

#: Catalog model -> Gavel job type it stands for. Rule: the same network architecture on the
#: same task (ImageNet classification for the catalog's models), at the Gavel batch size
#: nearest the catalog's ``batch_size`` (ties: the smaller); see :func:`nearest_job_type`.
#: Only ResNet-50 qualifies: Gavel's image models are ResNet-50 (ImageNet) and ResNet-18
#: (CIFAR-10), and its other job types are not image classifiers.
CATALOG_TO_GAVEL: dict[str, str] = {"resnet50": "ResNet-50 (batch size 64)"}
#: Catalog models with no Gavel job type of the same architecture, so no measured pairs.
#: No proxy is given: ``vgg16``, ``inception_v3``, ``googlenet`` and ``alexnet`` are
#: different architectures, and ``resnet152``, though of ResNet-50's family, does about
#: 2.8x its work per image and needs 12 GiB per worker against 8 (catalog), so ResNet-50's
#: pairs, in particular which of them fit in memory, say little about its own.
UNMATCHED_MODELS: tuple[str, ...] = ("alexnet", "googlenet", "inception_v3", "resnet152", "vgg16")
#: The job type whose measurements each catalog model takes under the ``"measured"``
#: interference setting: its own architecture where Gavel has it, else a proxy of the same
#: compute class (catalog intensity): the heavy ImageNet CNNs (u >= 0.95: vgg16,
#: inception_v3, resnet152) take ResNet-50 at batch size 64, the light ones (u <= 0.6:
#: googlenet, alexnet) ResNet-18 at their batch size. Proxies are assumptions, not
#: measurements: ``"measured_exact"`` keeps the analytic model for every unmatched pair.
CATALOG_PROXIES: dict[str, str] = {
    "resnet50": "ResNet-50 (batch size 64)",
    "vgg16": "ResNet-50 (batch size 64)",
    "inception_v3": "ResNet-50 (batch size 64)",
    "resnet152": "ResNet-50 (batch size 64)",
    "googlenet": "ResNet-18 (batch size 64)",
    "alexnet": "ResNet-18 (batch size 128)",
}
#: Gavel's architecture name for each catalog model of the same architecture.
GAVEL_ARCHITECTURE: dict[str, str] = {"resnet50": "ResNet-50"}

_BATCH = re.compile(r"^(?P<family>.+) \(batch size (?P<batch>\d+)\)$")


@dataclass(frozen=True, slots=True)
class NormalisedPair:
    """A pair's throughputs as fractions of each job's solo throughput on that GPU type.

    Attributes:
        own: The job's throughput when sharing / its solo throughput.
        partner: The partner's throughput when sharing / the partner's solo throughput.
    """

    own: float
    partner: float

    @property
    def combined(self) -> float:
        """Combined normalised throughput ``own + partner``: above 1, sharing the GPU does
        more work than giving it to one job at a time; below 1, less."""
        return self.own + self.partner


@dataclass(frozen=True, slots=True)
class GPUColocation:
    """One GPU type's measurements.

    Attributes:
        solo: Job type -> throughput alone on one GPU.  [steps/s]
        pairs: Job type -> partner type -> ``(own, partner)`` throughputs when the two
            share one GPU, ``(0.0, 0.0)`` when they could not.  [steps/s]
    """

    solo: Mapping[str, float]
    pairs: Mapping[str, Mapping[str, tuple[float, float]]]


@dataclass(frozen=True, slots=True)
class ColocationTable:
    """Gavel's co-location measurements as :func:`load_colocation` reads them.

    Attributes:
        source: Attribution: repository, path, commit, licence, copyright, ...
        gpu_types: GPU type -> its measurements.
    """

    source: Mapping[str, str]
    gpu_types: Mapping[str, GPUColocation]

    def raw_pair(self, gpu_type: str, job: str, partner: str) -> tuple[float, float]:
        """``(own, partner)`` throughputs of ``job`` sharing a ``gpu_type`` GPU with
        ``partner``. Raises ``KeyError`` naming what the table lacks."""
        if gpu_type not in self.gpu_types:
            raise KeyError(f"no GPU type {gpu_type!r}; the table has {sorted(self.gpu_types)}")
        pairs = self.gpu_types[gpu_type].pairs
        if job not in pairs or partner not in pairs[job]:
            raise KeyError(f"{gpu_type}: no pair ({job!r}, {partner!r}) in the table")
        return pairs[job][partner]

    def normalised(self, gpu_type: str, job: str, partner: str) -> NormalisedPair | None:
        """``own / solo(job)`` and ``partner / solo(partner)`` on ``gpu_type``; ``None``
        for a pair that could not share the GPU (measured 0/0)."""
        own, other = self.raw_pair(gpu_type, job, partner)
        if own == 0 and other == 0:
            return None
        solo = self.gpu_types[gpu_type].solo
        return NormalisedPair(own / solo[job], other / solo[partner])

    def unordered_pairs(self, gpu_type: str) -> list[tuple[str, str]]:
        """Each pair of job types of ``gpu_type`` once, ``(a, b)`` with ``a <= b`` (a job
        type with itself included), sorted."""
        pairs = self.gpu_types[gpu_type].pairs
        return sorted((a, b) for a in pairs for b in pairs[a] if a <= b)


def nearest_job_type(architecture: str, batch_size: int, job_types: Iterable[str]) -> str | None:
    """The job type ``"<architecture> (batch size N)"`` among ``job_types`` whose ``N`` is
    nearest ``batch_size`` (ties: the smaller ``N``), or ``None`` if there is none."""
    sizes = []
    for job in job_types:
        match = _BATCH.match(job)
        if match and match["family"] == architecture:
            sizes.append(int(match["batch"]))
    if not sizes:
        return None
    best = min(sizes, key=lambda n: (abs(n - batch_size), n))
    return f"{architecture} (batch size {best})"


def _fail(name: str, where: str, problem: str) -> ValueError:
    """The error for bad input: ``"<file>: <entry>: <what is wrong>"``."""
    return ValueError(f"{name}: {where}: {problem}" if where else f"{name}: {problem}")


def _object(value: Any, name: str, where: str) -> dict[str, Any]:
    """``value`` if it is a JSON object, else the error naming ``where``."""
    if not isinstance(value, dict):
        raise _fail(name, where, f"expected a JSON object, got {type(value).__name__}")
    return value


def _keys(value: dict[str, Any], name: str, where: str, keys: Sequence[str]) -> None:
    """Refuse an object that lacks one of ``keys`` or has any other key."""
    for key in keys:
        if key not in value:
            raise _fail(name, where, f"missing key {key!r}")
    extra = sorted(set(value) - set(keys))
    if extra:
        raise _fail(name, where, f"unexpected key {extra[0]!r} (expected {list(keys)})")


def _check_source(value: Any, name: str) -> dict[str, str]:
    """The ``"source"`` object: strings, with every key of :data:`SOURCE_KEYS`."""
    source = _object(value, name, "source")
    for key in SOURCE_KEYS:
        if key not in source:
            raise _fail(name, "source", f"missing key {key!r}")
    for key, text in source.items():
        if not (isinstance(text, str) and text):
            raise _fail(name, f"source {key!r}", f"must be a non-empty string, got {text!r}")
    return dict(source)


def _check_solo(value: Any, name: str, gpu: str) -> dict[str, float]:
    """A GPU type's ``"solo"`` object: job type -> finite number > 0."""
    solo = _object(value, name, f"{gpu} solo")
    if not solo:
        raise _fail(name, f"{gpu} solo", "no job types")
    for job, rate in solo.items():
        if not (is_finite(rate) and rate > 0):
            raise _fail(
                name, f"{gpu} solo {job!r}", f"throughput must be a number > 0, got {rate!r}"
            )
    return {job: float(rate) for job, rate in solo.items()}


def _check_pair(value: Any, name: str, where: str) -> tuple[float, float]:
    """One ``[own, partner]`` entry: two finite numbers >= 0, both 0 or both > 0."""
    if not (isinstance(value, list) and len(value) == 2):
        raise _fail(name, where, f"expected [own, partner] (two numbers), got {value!r}")
    for label, rate in zip(("own", "partner"), value, strict=True):
        if not (is_finite(rate) and rate >= 0):
            raise _fail(name, where, f"{label} throughput must be a number >= 0, got {rate!r}")
    own, partner = float(value[0]), float(value[1])
    if (own == 0) != (partner == 0):
        raise _fail(
            name,
            where,
            f"throughputs {value!r}: one is 0 and the other is not (a pair is either "
            "[0, 0], could not share the GPU, or both > 0)",
        )
    return own, partner


def _check_pairs(
    value: Any, name: str, gpu: str, solo: Mapping[str, float]
) -> dict[str, dict[str, tuple[float, float]]]:
    """A GPU type's ``"pairs"`` object: both jobs of a pair have solo entries, and each pair
    is given both ways with the same two throughputs."""
    pairs = _object(value, name, f"{gpu} pairs")
    checked: dict[str, dict[str, tuple[float, float]]] = {}
    for job, partners in pairs.items():
        if job not in solo:
            raise _fail(name, f"{gpu} pairs {job!r}", f"job type {job!r} has no solo entry")
        row = _object(partners, name, f"{gpu} pairs {job!r}")
        checked[job] = {}
        for partner, entry in row.items():
            where = f"{gpu} pair ({job!r}, {partner!r})"
            if partner not in solo:
                raise _fail(name, where, f"partner {partner!r} has no solo entry")
            checked[job][partner] = _check_pair(entry, name, where)
    for job, row in checked.items():
        for partner, (own, other) in row.items():
            where = f"{gpu} pair ({job!r}, {partner!r})"
            if job == partner and own != other:
                raise _fail(
                    name,
                    where,
                    f"a job type with itself must give two equal throughputs, got "
                    f"[{own!r}, {other!r}]",
                )
            back = checked.get(partner, {}).get(job)
            if back is None:
                raise _fail(name, where, f"not given both ways: no pair ({partner!r}, {job!r})")
            if back != (other, own):
                raise _fail(
                    name,
                    where,
                    f"gives [{own!r}, {other!r}] but ({partner!r}, {job!r}) gives "
                    f"[{back[0]!r}, {back[1]!r}], not the same two throughputs reversed",
                )
    return checked


def check_document(document: Any, name: str) -> ColocationTable:
    """Check a parsed ``gavel_colocation.json`` and return it as a table.

    Raises:
        ValueError: ``"<name>: <entry>: <what is wrong>"`` for a missing or unexpected key,
            a wrong format, a solo throughput that is not a number > 0, a pair throughput
            that is not a number >= 0 or only one of whose throughputs is 0, a pair whose
            job or partner has no solo entry, a pair not given both ways or given two ways
            that disagree.
    """
    top = _object(document, name, "")
    _keys(top, name, "", ("format", "source", "gpu_types"))
    if top["format"] != FORMAT:
        raise _fail(name, "format", f"expected {FORMAT!r}, got {top['format']!r}")
    source = _check_source(top["source"], name)
    gpu_types = _object(top["gpu_types"], name, "gpu_types")
    if not gpu_types:
        raise _fail(name, "gpu_types", "no GPU types")
    tables: dict[str, GPUColocation] = {}
    for gpu, entry in gpu_types.items():
        _keys(_object(entry, name, gpu), name, gpu, ("pairs", "solo"))
        solo = _check_solo(entry["solo"], name, gpu)
        tables[gpu] = GPUColocation(solo, _check_pairs(entry["pairs"], name, gpu, solo))
    return ColocationTable(source, tables)


def _read_json(text: bytes, name: str) -> Any:
    """Parse ``text`` as UTF-8 JSON, or raise the error naming the file."""
    try:
        return json.loads(text.decode("utf-8"))
    except UnicodeDecodeError as error:
        raise _fail(name, "", f"not UTF-8 text: {error}") from None
    except json.JSONDecodeError as error:
        raise _fail(name, "", f"malformed JSON, line {error.lineno}: {error.msg}") from None


def load_colocation(path: PathLike | None = None) -> ColocationTable:
    """Read and check a co-location table; by default the shipped package data
    ``gpushare_env/sim/data/gavel_colocation.json``.

    Raises:
        ValueError: Naming the file, the entry and what is wrong (:func:`check_document`),
            or a file that cannot be read or is not JSON.
    """
    if path is None:
        name = DATA_FILE
        data = resources.files("gpushare_env.sim").joinpath("data", DATA_FILE).read_bytes()
    else:
        name = os.fspath(path)
        try:
            with open(path, "rb") as handle:
                data = handle.read()
        except OSError as error:
            raise _fail(name, "", f"cannot open: {error.strerror}") from None
    return check_document(_read_json(data, name), name)


def git_blob_id(data: bytes) -> str:
    """The id git gives a file of these bytes (``git hash-object``)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _job_key(key: str, name: str, where: str) -> tuple[str, int]:
    """Gavel's ``"('ResNet-50 (batch size 64)', 1)"`` as ``(name, scale factor)``."""
    try:
        value = ast.literal_eval(key)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        value = None
    if not (
        isinstance(value, tuple)
        and len(value) == 2
        and isinstance(value[0], str)
        and type(value[1]) is int
    ):
        raise _fail(name, where, f"job type key {key!r} is not a (name, scale factor) tuple")
    return value[0], value[1]


def _convert_gpu(table: Any, name: str, gpu: str) -> dict[str, Any]:
    """One GPU type of Gavel's file as ``{"solo": ..., "pairs": ...}``, scale factor 1 only;
    values are copied as they are (:func:`check_document` checks them afterwards)."""
    solo: dict[str, Any] = {}
    pairs: dict[str, dict[str, Any]] = {}
    for key, entry in _object(table, name, gpu).items():
        job, scale = _job_key(key, name, gpu)
        if scale != 1:
            continue
        entry = _object(entry, name, f"{gpu} {key}")
        if "null" not in entry:
            raise _fail(name, f"{gpu} {key}", "missing key 'null' (the solo throughput)")
        solo[job] = entry["null"]
        for partner_key, value in entry.items():
            if partner_key == "null":
                continue
            partner, partner_scale = _job_key(partner_key, name, f"{gpu} {key}")
            if partner_scale == 1:
                pairs.setdefault(job, {})[partner] = value
    return {"solo": solo, "pairs": pairs}


def to_json(document: Mapping[str, Any]) -> str:
    """The file text: sorted keys, two-space indent, each ``[own, partner]`` on one line."""
    text = json.dumps(document, indent=2, sort_keys=True, allow_nan=False)
    return re.sub(r"\[\s+([^\s\[\],]+),\s+([^\s\[\],]+)\s+\]", r"[\1, \2]", text) + "\n"


def convert(source_json_path: PathLike, out_path: PathLike, commit: str | None = None) -> None:
    """Write the part of Gavel's ``simulation_throughputs.json`` the project uses (module
    docstring) to ``out_path``, after checking it as :func:`load_colocation` does.

    Args:
        source_json_path: Gavel's ``scheduler/simulation_throughputs.json``.
        out_path: The file to write (nothing is written if the source is refused).
        commit: Gavel's commit the file comes from, recorded in ``"source"``. ``None``: the
            file must be that of :data:`GAVEL_COMMIT` (same git blob id).

    Raises:
        ValueError: Naming the source file and entry: not JSON, a GPU type of
            :data:`KEPT_GPU_TYPES` missing, a job key that is not a ``(name, scale)``
            tuple, a job without a solo throughput, a bad value (:func:`check_document`);
            or, with ``commit=None``, a file that is not the pinned snapshot's.
    """
    name = os.fspath(source_json_path)
    try:
        with open(source_json_path, "rb") as handle:
            data = handle.read()
    except OSError as error:
        raise _fail(name, "", f"cannot open: {error.strerror}") from None
    blob = git_blob_id(data)
    if commit is None:
        if blob != GAVEL_BLOB:
            raise _fail(
                name,
                "",
                f"not {GAVEL_PATH} of {GAVEL_REPOSITORY} at commit {GAVEL_COMMIT[:7]} (its "
                f"git blob id is {blob}, not {GAVEL_BLOB}); pass the commit it comes from",
            )
        commit = GAVEL_COMMIT
    source = _object(_read_json(data, name), name, "")
    for gpu in KEPT_GPU_TYPES:
        if gpu not in source:
            raise _fail(name, "", f"no GPU type {gpu!r}; the file has {sorted(source)}")
    document = {
        "format": FORMAT,
        "source": {**SOURCE_TEXT, "commit": commit, "blob": blob},
        "gpu_types": {gpu: _convert_gpu(source[gpu], name, gpu) for gpu in KEPT_GPU_TYPES},
    }
    check_document(document, name)
    text = to_json(document)
    with open(out_path, "w", encoding="utf-8", newline="\n") as handle:
        handle.write(text)


def _summary(table: ColocationTable) -> str:
    """One line per GPU type: job types, ordered pairs, pairs that could not share."""
    lines = []
    for gpu, entry in table.gpu_types.items():
        count = sum(len(row) for row in entry.pairs.values())
        zero = sum(1 for row in entry.pairs.values() for pair in row.values() if pair[0] == 0)
        lines.append(f"{gpu}: {len(entry.solo)} job types, {count} pairs ({zero} could not share)")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """The command line: convert Gavel's throughputs file; exit 2 naming bad input."""
    parser = argparse.ArgumentParser(
        prog="python -m gpushare_env.sim.gavel",
        description="Write the single-GPU part of Gavel's scheduler/simulation_throughputs.json "
        "(k80, p100, v100: solo and pair throughputs) as gavel_colocation.json.",
    )
    parser.add_argument("source", help="Gavel's scheduler/simulation_throughputs.json")
    parser.add_argument("out", help="the JSON file to write")
    parser.add_argument(
        "--commit",
        default=None,
        help=f"Gavel's commit the source comes from (default: {GAVEL_COMMIT[:7]}, whose file "
        "the source must then be)",
    )
    args = parser.parse_args(argv)
    try:
        convert(args.source, args.out, commit=args.commit)
        summary = _summary(load_colocation(args.out))
    except (ValueError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(f"wrote {args.out}\n{summary}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
