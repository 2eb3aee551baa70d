"""The compiled core is split by concern into classes that extend one another
(``_core.pyx`` includes ``_state.pxi`` ... ``_encoder.pxi``). A ``cdef`` method called in one
of them must be defined there or in a class before it: Cython compiles a call to one
defined later as a Python attribute lookup, which fails at run time (and, in a
``noexcept`` method, only prints a warning). This checks the sources for such calls."""

from __future__ import annotations

import re
from pathlib import Path

import gpushare_env

COMPILED = Path(gpushare_env.__file__).parent / "compiled"
_INCLUDE = re.compile(r'^include "(?P<name>[\w.]+)"$', re.M)
_CLASS = re.compile(r"^cdef class (?P<name>\w+)(?:\((?P<base>\w+)\))?:", re.M)
_METHOD = re.compile(r"^    (?:cdef|cpdef|def) (?:inline )?(?:[\w*]+ )?(?P<name>\w+)\(", re.M)
_CALL = re.compile(r"self\.(?P<name>_\w+)\(")


def _classes() -> list[tuple[str, str | None, str]]:
    """``(name, base, source)`` of every cdef class of the core, in file order."""
    core = (COMPILED / "_core.pyx").read_text(encoding="utf-8")
    text = _INCLUDE.sub(lambda m: (COMPILED / m["name"]).read_text(encoding="utf-8"), core)
    starts = list(_CLASS.finditer(text))
    return [
        (
            m["name"],
            m["base"],
            text[m.start() : starts[i + 1].start() if i + 1 < len(starts) else None],
        )
        for i, m in enumerate(starts)
    ]


def test_the_core_is_split_into_its_concerns() -> None:
    names = [name for name, _, _ in _classes()]
    assert names[:6] == ["_State", "_Events", "_Placement", "_Simulation", "_Encoder", "Core"]


def test_every_cdef_call_resolves_in_its_class_or_before() -> None:
    defined: dict[str, set[str]] = {}
    for name, base, source in _classes():
        own = set(_METHOD.findall(source))
        visible = own | (defined[base] if base else set())
        defined[name] = visible
        unresolved = sorted(set(_CALL.findall(source)) - visible)
        assert not unresolved, f"{name} calls methods defined after it: {unresolved}"


def test_one_truncation_rule_for_the_env_and_the_headless_runner() -> None:
    from gpushare_env.sim.engine import truncation_reason

    assert truncation_reason(5, 10, 0.0) is None
    assert truncation_reason(10, 10, 99.0, 50.0, True) == "decisions"  # the cap first
    assert truncation_reason(3, 10, 50.0, 50.0, True) == "time"
    assert truncation_reason(3, None, 49.0, 50.0, True) == "deadlock"
    assert truncation_reason(10**9, None, 1e12) is None
