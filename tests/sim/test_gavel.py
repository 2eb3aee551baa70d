"""Gavel's co-location table (``gpushare_env.sim.gavel``): converter, loader, normalisation.

Hand-checked figures: the small synthetic source below, and two V100 entries of the shipped
file read off Gavel's ``simulation_throughputs.json`` at commit c4fa400, a copy of which
(xz-compressed, with its licence) is ``tests/data/gavel_simulation_throughputs.json.xz``.
"""

from __future__ import annotations

import copy
import json
import lzma
import re
from pathlib import Path
from typing import Any

import pytest

from gpushare_env.sim.catalog import MODELS
from gpushare_env.sim.gavel import (
    CATALOG_TO_GAVEL,
    FORMAT,
    GAVEL_ARCHITECTURE,
    GAVEL_COMMIT,
    GAVEL_PATH,
    KEPT_GPU_TYPES,
    UNMATCHED_MODELS,
    check_document,
    convert,
    load_colocation,
    main,
    nearest_job_type,
)

REPO = Path(__file__).resolve().parents[2]
SHIPPED = REPO / "gpushare_env" / "sim" / "data" / "gavel_colocation.json"
#: Gavel's ``scheduler/simulation_throughputs.json`` at ``GAVEL_COMMIT``, byte for byte,
#: xz-compressed (attribution and licence: ``tests/data/README.md``, ``gavel_LICENSE``).
SOURCE_XZ = REPO / "tests" / "data" / "gavel_simulation_throughputs.json.xz"

R50 = "ResNet-50 (batch size 64)"
LM5 = "LM (batch size 5)"


def _gavel_source() -> dict[str, Any]:
    """A small file in Gavel's layout: A and B on one GPU, A also at scale factor 2 (dropped),
    a ``_unconsolidated`` variant (dropped), the pair (B, B) that does not fit (0/0)."""
    one = {
        "('A', 1)": {"null": 10.0, "('A', 1)": [4.0, 4.0], "('B', 1)": [5.0, 1.0]},
        "('B', 1)": {"null": 4.0, "('A', 1)": [1.0, 5.0], "('B', 1)": [0.0, 0.0]},
        "('A', 2)": {"null": 18.0, "('A', 2)": [8.0, 8.0]},
    }
    return {gpu: copy.deepcopy(one) for gpu in (*KEPT_GPU_TYPES, "v100_unconsolidated")}


@pytest.fixture
def converted(tmp_path: Path) -> Path:
    """The synthetic source, converted."""
    source = tmp_path / "simulation_throughputs.json"
    source.write_text(json.dumps(_gavel_source()), encoding="utf-8")
    out = tmp_path / "gavel_colocation.json"
    convert(source, out, commit="0" * 40)
    return out


def test_the_shipped_table_loads_with_the_pinned_source() -> None:
    table = load_colocation()
    assert sorted(table.gpu_types) == ["k80", "p100", "v100"]
    assert table.source["commit"] == GAVEL_COMMIT
    assert table.source["repository"] == "stanford-futuredata/gavel"
    assert table.source["copyright"] == "Copyright (c) 2020 Stanford Future Data Systems"
    for entry in table.gpu_types.values():
        assert len(entry.solo) == 26
        assert sum(len(row) for row in entry.pairs.values()) == 26 * 26
    v100 = table.gpu_types["v100"]
    assert v100.solo[R50] == 4.394774823323071
    assert v100.pairs[R50][LM5] == (3.0881783483060685, 37.79526584062318)
    assert load_colocation(SHIPPED) == table  # the same file read by path


def test_conversion_keeps_single_gpu_pairs_and_round_trips(converted: Path) -> None:
    table = load_colocation(converted)
    assert sorted(table.gpu_types) == sorted(KEPT_GPU_TYPES)  # no _unconsolidated
    v100 = table.gpu_types["v100"]
    assert dict(v100.solo) == {"A": 10.0, "B": 4.0}  # scale factor 2 dropped
    assert v100.pairs["A"]["B"] == (5.0, 1.0)
    assert v100.pairs["B"]["B"] == (0.0, 0.0)
    assert table.source["commit"] == "0" * 40
    # the written file is the loader's form, keys sorted, and a second conversion is identical
    document = json.loads(converted.read_text(encoding="utf-8"))
    assert document["format"] == FORMAT
    assert list(document["gpu_types"]["v100"]["pairs"]["A"]) == ["A", "B"]
    again = converted.with_name("again.json")
    convert(converted.with_name("simulation_throughputs.json"), again, commit="0" * 40)
    assert again.read_bytes() == converted.read_bytes()


def test_a_source_other_than_the_pinned_one_needs_its_commit(tmp_path: Path) -> None:
    source = tmp_path / "simulation_throughputs.json"
    source.write_text(json.dumps(_gavel_source()), encoding="utf-8")
    out = tmp_path / "out.json"
    with pytest.raises(ValueError, match=r"simulation_throughputs\.json: not .* commit c4fa400"):
        convert(source, out)
    assert not out.exists()


def _pinned_source(tmp_path: Path) -> Path:
    """Gavel's file at the pinned commit, decompressed from the test data."""
    source = tmp_path / "simulation_throughputs.json"
    source.write_bytes(lzma.decompress(SOURCE_XZ.read_bytes()))
    return source


def test_the_shipped_file_is_a_fresh_conversion_of_gavels_file(tmp_path: Path) -> None:
    source = _pinned_source(tmp_path)
    out = tmp_path / "gavel_colocation.json"
    assert main([str(source), str(out)]) == 0  # the pinned commit's file needs no --commit
    assert out.read_bytes() == SHIPPED.read_bytes()


def test_a_file_other_than_the_pinned_one_needs_its_commit(tmp_path: Path) -> None:
    # the copy is checked by its git blob id: one byte changed and it is another file
    source = _pinned_source(tmp_path)
    source.write_bytes(source.read_bytes().replace(b"4.394774823323071", b"4.394774823323072"))
    with pytest.raises(ValueError, match=rf"not {re.escape(GAVEL_PATH)} of .* pass the commit"):
        convert(source, tmp_path / "out.json")


def _valid() -> dict[str, Any]:
    """A valid document in the shipped layout (one GPU type, jobs A and B)."""
    return {
        "format": FORMAT,
        "source": {
            "repository": "r",
            "path": "p",
            "commit": "c",
            "licence": "MIT",
            "copyright": "(c)",
        },
        "gpu_types": {
            "v100": {
                "solo": {"A": 10.0, "B": 4.0},
                "pairs": {
                    "A": {"A": [4.0, 4.0], "B": [5.0, 1.0]},
                    "B": {"A": [1.0, 5.0], "B": [0.0, 0.0]},
                },
            }
        },
    }


def _without(key: str) -> Any:
    """Mutation: delete the top-level ``key``."""
    return lambda d: d.pop(key)


BAD: list[tuple[str, Any, str]] = [
    # (test id, mutation of _valid(), what the message must contain after the file name)
    ("no gpu_types", _without("gpu_types"), "missing key 'gpu_types'"),
    ("no source", _without("source"), "missing key 'source'"),
    ("bad format", lambda d: d.update(format="v0"), "format: expected 'gavel_colocation/1'"),
    (
        "no commit",
        lambda d: d["source"].pop("commit"),
        "source: missing key 'commit'",
    ),
    (
        "no solo",
        lambda d: d["gpu_types"]["v100"].pop("solo"),
        "v100: missing key 'solo'",
    ),
    (
        "extra key",
        lambda d: d["gpu_types"]["v100"].update(triples={}),
        "v100: unexpected key 'triples'",
    ),
    (
        "text solo",
        lambda d: d["gpu_types"]["v100"]["solo"].update(A="10"),
        "v100 solo 'A': throughput must be a number > 0, got '10'",
    ),
    (
        "zero solo",
        lambda d: d["gpu_types"]["v100"]["solo"].update(B=0.0),
        "v100 solo 'B': throughput must be a number > 0, got 0.0",
    ),
    (
        "text own",
        lambda d: d["gpu_types"]["v100"]["pairs"]["A"].update(B=["x", 1.0]),
        "v100 pair ('A', 'B'): own throughput must be a number >= 0, got 'x'",
    ),
    (
        "negative partner",
        lambda d: d["gpu_types"]["v100"]["pairs"]["A"].update(B=[5.0, -1.0]),
        "v100 pair ('A', 'B'): partner throughput must be a number >= 0, got -1.0",
    ),
    (
        "boolean own",
        lambda d: d["gpu_types"]["v100"]["pairs"]["A"].update(A=[True, True]),
        "v100 pair ('A', 'A'): own throughput must be a number >= 0, got True",
    ),
    (
        "three numbers",
        lambda d: d["gpu_types"]["v100"]["pairs"]["A"].update(A=[4.0, 4.0, 4.0]),
        "v100 pair ('A', 'A'): expected [own, partner] (two numbers), got [4.0, 4.0, 4.0]",
    ),
    (
        "half zero",
        lambda d: d["gpu_types"]["v100"]["pairs"]["A"].update(A=[0.0, 4.0]),
        "v100 pair ('A', 'A'): throughputs [0.0, 4.0]: one is 0 and the other is not",
    ),
    (
        "partner without solo",
        lambda d: d["gpu_types"]["v100"]["pairs"]["A"].update(C=[1.0, 1.0]),
        "v100 pair ('A', 'C'): partner 'C' has no solo entry",
    ),
    (
        "job without solo",
        lambda d: d["gpu_types"]["v100"]["pairs"].update(C={"A": [1.0, 1.0]}),
        "v100 pairs 'C': job type 'C' has no solo entry",
    ),
    (
        "one way only",
        lambda d: d["gpu_types"]["v100"]["pairs"]["B"].pop("A"),
        "v100 pair ('A', 'B'): not given both ways: no pair ('B', 'A')",
    ),
    (
        "ways disagree",
        lambda d: d["gpu_types"]["v100"]["pairs"]["B"].update(A=[1.0, 6.0]),
        "v100 pair ('A', 'B'): gives [5.0, 1.0] but ('B', 'A') gives [1.0, 6.0]",
    ),
    (
        "self pair asymmetric",
        lambda d: d["gpu_types"]["v100"]["pairs"]["A"].update(A=[4.0, 3.0]),
        "v100 pair ('A', 'A'): a job type with itself must give two equal throughputs",
    ),
]


@pytest.mark.parametrize(("mutate", "message"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_input_names_the_file_the_entry_and_the_problem(
    tmp_path: Path, mutate: Any, message: str
) -> None:
    document = _valid()
    mutate(document)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(ValueError) as caught:
        load_colocation(path)
    assert str(caught.value).startswith(f"{path}: {message}")


def test_the_valid_base_document_of_the_bad_cases_loads() -> None:
    # so each bad case above fails for its mutation alone
    table = check_document(_valid(), "ok.json")
    assert table.gpu_types["v100"].pairs["B"]["A"] == (1.0, 5.0)


def test_unreadable_and_malformed_files_are_named(tmp_path: Path) -> None:
    missing = tmp_path / "missing.json"
    with pytest.raises(ValueError, match=r"missing\.json: cannot open"):
        load_colocation(missing)
    broken = tmp_path / "broken.json"
    broken.write_text('{"format": ', encoding="utf-8")
    with pytest.raises(ValueError, match=r"broken\.json: malformed JSON, line 1"):
        load_colocation(broken)


def test_a_bad_source_is_refused_naming_it_and_nothing_is_written(tmp_path: Path) -> None:
    source_doc = _gavel_source()
    source_doc["p100"]["('A', 1)"]["('B', 1)"] = [5.0, "fast"]
    source = tmp_path / "simulation_throughputs.json"
    source.write_text(json.dumps(source_doc), encoding="utf-8")
    out = tmp_path / "out.json"
    with pytest.raises(ValueError) as caught:
        convert(source, out, commit="0" * 40)
    assert str(caught.value) == (
        f"{source}: p100 pair ('A', 'B'): partner throughput must be a number >= 0, got 'fast'"
    )
    del source_doc["p100"]["('B', 1)"]["null"]
    source.write_text(json.dumps(source_doc), encoding="utf-8")
    assert main([str(source), str(out), "--commit", "0" * 40]) == 2
    assert not out.exists()


def test_normalisation_on_hand_checked_entries(converted: Path) -> None:
    table = load_colocation(converted)
    pair = table.normalised("v100", "A", "B")  # [5, 1] with solos 10 and 4
    assert pair is not None
    assert (pair.own, pair.partner, pair.combined) == (0.5, 0.25, 0.75)
    reverse = table.normalised("v100", "B", "A")
    assert reverse is not None
    assert (reverse.own, reverse.partner) == (0.25, 0.5)
    assert table.normalised("v100", "B", "B") is None  # 0/0: could not share
    assert table.unordered_pairs("v100") == [("A", "A"), ("A", "B"), ("B", "B")]
    with pytest.raises(KeyError, match="no pair"):
        table.normalised("v100", "A", "C")
    # shipped V100: ResNet-50 (64) with LM (5): 3.08818 / 4.39477 and 37.7953 / 109.167
    shipped = load_colocation().normalised("v100", R50, LM5)
    assert shipped is not None
    assert shipped.own == pytest.approx(0.702693, abs=1e-6)
    assert shipped.partner == pytest.approx(0.346216, abs=1e-6)
    assert shipped.combined == pytest.approx(1.048910, abs=1e-6)
    twin = load_colocation().normalised("v100", R50, R50)  # 2.18915 / 4.39477 each
    assert twin is not None
    assert twin.own == twin.partner == pytest.approx(0.498125, abs=1e-6)


def test_the_mapping_names_only_job_types_of_the_table_by_its_rule() -> None:
    table = load_colocation()
    assert set(CATALOG_TO_GAVEL) | set(UNMATCHED_MODELS) == set(MODELS)
    assert not set(CATALOG_TO_GAVEL) & set(UNMATCHED_MODELS)
    for model, job in CATALOG_TO_GAVEL.items():
        for entry in table.gpu_types.values():
            assert job in entry.solo and job in entry.pairs
        # the rule: same architecture, nearest batch size
        found = nearest_job_type(
            GAVEL_ARCHITECTURE[model], MODELS[model].batch_size, table.gpu_types["v100"].solo
        )
        assert found == job
    assert nearest_job_type("ResNet-50", 100, ["ResNet-50 (batch size 64)", "X"]) == R50
    assert nearest_job_type("ResNet-50", 96, [R50, "ResNet-50 (batch size 128)"]) == R50  # tie
    assert nearest_job_type("VGG-16", 64, table.gpu_types["v100"].solo) is None
