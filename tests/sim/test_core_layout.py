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
_METHOD = re.compile(r"^    (?:cdef|cpdef|def) (?:inline )?(?:[\w*]+ )*(?P<name>\w+)\(", re.M)
_CALL = re.compile(r"self\.(?P<name>_\w+)\(")


def _parse(text: str) -> list[tuple[str, str | None, str]]:
    """``(name, base, source)`` of every cdef class in ``text``, in file order."""
    starts = list(_CLASS.finditer(text))
    return [
        (
            m["name"],
            m["base"],
            text[m.start() : starts[i + 1].start() if i + 1 < len(starts) else None],
        )
        for i, m in enumerate(starts)
    ]


def _classes() -> list[tuple[str, str | None, str]]:
    """``(name, base, source)`` of every cdef class of the core, includes expanded."""
    core = (COMPILED / "_core.pyx").read_text(encoding="utf-8")
    return _parse(_INCLUDE.sub(lambda m: (COMPILED / m["name"]).read_text(encoding="utf-8"), core))


def _unresolved_calls(classes: list[tuple[str, str | None, str]]) -> dict[str, list[str]]:
    """Per class, the ``self._method(`` calls defined neither in it nor in a class it
    extends that comes before it."""
    defined: dict[str, set[str]] = {}
    unresolved: dict[str, list[str]] = {}
    for name, base, source in classes:
        visible = set(_METHOD.findall(source)) | defined.get(base or "", set())
        defined[name] = visible
        missing = sorted(set(_CALL.findall(source)) - visible)
        if missing:
            unresolved[name] = missing
    return unresolved


def test_the_check_finds_a_call_to_a_method_defined_later() -> None:
    source = (
        "cdef class _Early:\n"
        "    cdef int _first(self) noexcept:\n"
        "        return self._later()\n"
        "\n"
        "cdef class _Late(_Early):\n"
        "    cdef int _later(self) noexcept:\n"
        "        return self._first()\n"
    )
    assert _unresolved_calls(_parse(source)) == {"_Early": ["_later"]}


def test_every_cdef_call_resolves_in_its_class_or_before() -> None:
    classes = _classes()
    calls = sum(len(_CALL.findall(source)) for _, _, source in classes)
    assert calls > 50  # the sources were read and parsed: the check below is not vacuous
    assert _unresolved_calls(classes) == {}


def test_one_truncation_rule_for_the_env_and_the_headless_runner() -> None:
    from gpushare_env.sim.engine import truncation_reason

    assert truncation_reason(5, 10, 0.0) is None
    assert truncation_reason(10, 10, 99.0, 50.0, True) == "decisions"  # the cap first
    assert truncation_reason(3, 10, 50.0, 50.0, True) == "time"
    assert truncation_reason(3, None, 49.0, 50.0, True) == "deadlock"
    assert truncation_reason(10**9, None, 1e12) is None


#: The most C fields one compiled class may declare: the core's state is split into parts
#: (``_parts.pxi``) that each own their memory, so adding a resource touches the part it
#: belongs to, not one class of everything.
MAX_FIELDS = 60
_MODULE_STATEMENT = re.compile(r"^(?=[^\s#])", re.M)
_FIELD = re.compile(
    r"^    cdef (?!class\b)(?:(?:public|readonly) )?[\w.]+\*?(?:\[\w+\])? "
    r"(?P<names>[\w, ]+?)\s*(?:#.*)?$",
    re.M,
)


def _fields(source: str) -> list[str]:
    """The C fields a class body declares (``cdef TYPE a, b  # ...`` lines, not methods;
    the body ends at the next statement of the module)."""
    body = _MODULE_STATEMENT.split(source.split("\n", 1)[-1], 1)[0]
    return [n.strip() for m in _FIELD.finditer(body) for n in m["names"].split(",")]


def test_the_field_count_reads_declarations_not_methods() -> None:
    source = (
        "cdef class _Part:\n"
        "    cdef int* row  # by rank\n"
        "    cdef public object a_array, b_array\n"
        "    cdef double[NUM_TERMS] weights\n"
        "    cdef readonly int num_gpus\n"
        "    cdef int _method(self, int rank) noexcept:\n"
        "        cdef int local = 0\n"
        "\n"
        "cdef void module_function(double* a):\n"
        "    cdef int at\n"
    )
    ((_, _, body),) = _parse(source)
    assert _fields(body) == ["row", "a_array", "b_array", "weights", "num_gpus"]


def test_no_compiled_class_holds_more_than_sixty_fields() -> None:
    counts = {name: len(_fields(source)) for name, _, source in _classes()}
    assert {"GpuTable", "JobTable", "Windows", "Meter", "Encoder", "_State"} <= counts.keys()
    assert sum(counts.values()) > 150  # every field of the core was counted
    assert max(counts.values()) <= MAX_FIELDS, counts
