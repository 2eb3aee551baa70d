"""The compiled core's stub (``gpushare_env/compiled/_core.pyi``) against the built module.

Cython writes no stub, so ``_core.pyi`` is kept by hand; these tests keep it from going
stale. Every name the stub declares for ``Core``, its parts and ``JobState`` exists on the compiled
class, with the same kind (a method, or an attribute / property); every public method
and attribute of the compiled classes is declared; every module-level function declared
takes the parameters the compiled one takes (names, order, which have defaults and what
they are).
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import gpushare_env.sim  # noqa: F401  (the core imports gpushare_env.sim: import that first)
from gpushare_env.compiled import _core

STUB = Path(_core.__file__).with_name("_core.pyi")
CLASSES = (
    "Core",
    "EventHeap",
    "GpuTable",
    "JobTable",
    "MigTable",
    "Meter",
    "Windows",
    "Columns",
    "ShareRules",
    "Encoder",
    "JobState",
)


def _stub() -> ast.Module:
    return ast.parse(STUB.read_text(encoding="utf-8"), filename=str(STUB))


def _is_property(node: ast.FunctionDef) -> bool:
    return any(isinstance(d, ast.Name) and d.id == "property" for d in node.decorator_list)


def _declared(body: list[ast.stmt]) -> tuple[dict[str, ast.FunctionDef], set[str]]:
    """Methods (by name) and attributes (annotated names and properties) of a stub body."""
    methods: dict[str, ast.FunctionDef] = {}
    attributes: set[str] = set()
    for node in body:
        if isinstance(node, ast.FunctionDef):
            if _is_property(node):
                attributes.add(node.name)
            else:
                methods[node.name] = node
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            attributes.add(node.target.id)
    return methods, attributes


def _stub_class(name: str) -> ast.ClassDef:
    (found,) = (n for n in _stub().body if isinstance(n, ast.ClassDef) and n.name == name)
    return found


def _compiled_public(cls: type) -> tuple[set[str], set[str]]:
    """The public methods and the public attributes (getset descriptors) of a compiled
    class: what its ``def`` methods, ``@property`` and ``cdef public`` declare."""
    methods, attributes = set(), set()
    for name in dir(cls):
        if name.startswith("_"):
            continue
        value = inspect.getattr_static(cls, name)
        if inspect.isgetsetdescriptor(value) or isinstance(value, property):
            attributes.add(name)
        elif callable(value):
            methods.add(name)
    return methods, attributes


def _parameters(node: ast.FunctionDef) -> list[tuple[str, bool, Any]]:
    """``(name, has a default, the default)`` of each parameter of a stub function."""
    args = node.args
    assert not (args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs), node.name
    defaults: list[ast.expr | None] = [None] * (len(args.args) - len(args.defaults))
    defaults += args.defaults
    return [
        (arg.arg, default is not None, ast.literal_eval(default) if default else None)
        for arg, default in zip(args.args, defaults, strict=True)
    ]


def _signature(function: Any) -> list[tuple[str, bool, Any]]:
    """The same of a compiled function (Cython's functions carry their signature)."""
    out = []
    for parameter in inspect.signature(function).parameters.values():
        assert parameter.kind is parameter.POSITIONAL_OR_KEYWORD, (function, parameter)
        has_default = parameter.default is not parameter.empty
        out.append((parameter.name, has_default, parameter.default if has_default else None))
    return out


def test_the_stub_sits_beside_the_compiled_module_and_parses() -> None:
    assert STUB.is_file()
    names = {n.name for n in _stub().body if isinstance(n, (ast.ClassDef, ast.FunctionDef))}
    assert set(CLASSES) <= names


@pytest.mark.parametrize("name", CLASSES)
def test_every_name_the_stub_declares_exists_on_the_compiled_class(name: str) -> None:
    cls = getattr(_core, name)
    methods, attributes = _declared(_stub_class(name).body)
    compiled_methods, compiled_attributes = _compiled_public(cls)
    for method in methods:
        assert hasattr(cls, method), f"the stub declares {name}.{method}, the core has none"
        if not method.startswith("__"):
            assert method not in compiled_attributes, f"{name}.{method} is an attribute"
    for attribute in attributes:
        assert hasattr(cls, attribute), f"the stub declares {name}.{attribute}, the core has none"
        assert attribute not in compiled_methods, f"{name}.{attribute} is a method, not data"


@pytest.mark.parametrize("name", CLASSES)
def test_every_public_method_and_attribute_of_the_compiled_class_is_declared(
    name: str,
) -> None:
    methods, attributes = _declared(_stub_class(name).body)
    compiled_methods, compiled_attributes = _compiled_public(getattr(_core, name))
    assert compiled_methods - set(methods) == set(), f"{name}: methods missing from the stub"
    assert compiled_attributes - attributes == set(), f"{name}: attributes missing from the stub"


@pytest.mark.parametrize("name", CLASSES)
def test_the_stub_methods_take_the_compiled_parameters(name: str) -> None:
    cls = getattr(_core, name)
    methods, _ = _declared(_stub_class(name).body)
    checked = 0
    for method, node in methods.items():
        if method.startswith("__"):  # slot wrappers (__init__) carry no signature
            continue
        assert _parameters(node) == _signature(getattr(cls, method)), f"{name}.{method}"
        checked += 1
    assert checked >= (20 if name == "Core" else 0)


def _module_functions(module: ModuleType) -> set[str]:
    """The public functions defined in the compiled module (not the names it imports)."""
    return {
        name
        for name, value in vars(module).items()
        if not name.startswith("_")
        and callable(value)
        and not isinstance(value, type)
        and getattr(value, "__module__", None) == module.__name__
    }


def test_the_module_level_functions_and_constants_match() -> None:
    tree = _stub()
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    constants = {
        n.target.id
        for n in tree.body
        if isinstance(n, ast.AnnAssign)
        and isinstance(n.target, ast.Name)
        and not n.target.id.startswith("_")
    }
    assert set(functions) == _module_functions(_core)
    for name, node in functions.items():
        assert _parameters(node) == _signature(getattr(_core, name)), name
    compiled_constants = {
        name
        for name, value in vars(_core).items()
        if not name.startswith("_") and not callable(value) and not isinstance(value, ModuleType)
    }
    assert constants == compiled_constants
    public_classes = {
        name
        for name, value in vars(_core).items()
        if isinstance(value, type)
        and not name.startswith("_")
        and value.__module__ == _core.__name__
    }
    assert public_classes == set(CLASSES)
