"""The config toolkit: what the package's frozen, validated configs are built from.

The simulator's, the workloads', the env's and the training's configs (``ClusterConfig``,
``WorkloadConfig``, ``EnvConfig``, ``agents.TrainConfig``) take their pieces from here:

* the number checks and range texts (:func:`is_int`, :func:`is_real`, :func:`is_finite`,
  :func:`range_text`, :func:`number_text`), defined beside the limits they guard
  (``gpushare_env.sim.limits``) and re-exported here, and :func:`plain` (a numpy scalar
  as the Python value it holds);
* :func:`unknown_keys_error`: the error of a dict with keys a config does not know, the
  allowed ones listed (and close matches suggested);
* :class:`Group`: the base of a group of settings, a frozen dataclass built from a dict
  that may set only some of them, that names a bad value by its full path
  (``EnvConfig.windows.pending``);
* :class:`KeyPaths`: how the settings of a config made of groups are keyed: the nested
  form (``{"windows": {"pending": 8}}``), the flat keys, one short key per setting
  (``{"pending_window": 8}``) or both, read into one ``{path: value}`` dict with a setting
  given twice refused, and written back in the flat form;
* :class:`Setting` and what it allows (:class:`Int`, :class:`Real`, :class:`Flag`,
  :class:`Choice`, :class:`Given`): one declared setting (its default, range, flat key,
  unit and meaning), whose check and range text every config that holds it uses, and
  :class:`DeclaredGroup`, a group whose fields are declared settings (their checks run on
  creation). The env's and the simulator's settings are declared in
  ``gpushare_env.sim.setting_table``.

It is part of the simulation core (no env, no gymnasium), so every layer can use it.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import numbers
import textwrap
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, Protocol, TypeVar, cast

import numpy as np

from gpushare_env.sim.limits import is_finite, is_int, is_real, number_text, range_text

__all__ = [
    "Choice",
    "DeclaredGroup",
    "Flag",
    "Given",
    "Group",
    "Int",
    "KeyPaths",
    "Real",
    "Setting",
    "declared_field",
    "declared_fields",
    "document_settings",
    "is_finite",
    "is_int",
    "is_real",
    "number_text",
    "plain",
    "range_text",
    "unknown_keys_error",
]


def plain(value: Any) -> Any:
    """A numpy scalar (``np.int64(300)``, ``np.float32(0.5)``, ``np.True_``) as the Python
    value it holds, and any other non-integer real (``Fraction(1, 2)``, a numpy
    ``longdouble``) as a float, so configs accept what numpy code passes and still record
    plain JSON numbers; anything else unchanged (a Python ``bool`` stays a bool, and is
    no int here)."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, numbers.Real) and not isinstance(value, (bool, numbers.Integral)):
        return value if isinstance(value, float) else float(value)
    return value


def unknown_keys_error(
    owner: str,
    unknown: Sequence[Any],
    allowed: Sequence[str],
    legacy: Sequence[str] = (),
    *,
    suggest: bool = True,
) -> ValueError:
    """The error of the keys ``unknown`` given to ``owner`` (a config or a group's path).

    With ``suggest`` (the env's configs): ``"<owner>: unknown key(s) [...]; allowed:
    [...]"``, both lists sorted, then the ``legacy`` keys (the flat keys of earlier
    versions) if any, and for each unknown key with a close match among them
    ``"'pendng' -> did you mean 'pending'?"``. Without: ``"<owner>: unknown keys [...];
    allowed: [...]"``, the lists in the order given.
    """
    if not suggest:
        return ValueError(f"{owner}: unknown keys {list(unknown)}; allowed: {list(allowed)}")
    hints = []
    for key in unknown:
        close = difflib.get_close_matches(str(key), [*allowed, *legacy], n=1)
        if close:
            hints.append(f"{key!r} -> did you mean {close[0]!r}?")
    hint = (" " + " ".join(hints)) if hints else ""
    also = f"; or the flat keys: {sorted(legacy)}" if legacy else ""
    return ValueError(
        f"{owner}: unknown key(s) {sorted(map(str, unknown))}; allowed: {sorted(allowed)}"
        f"{also}.{hint}"
    )


_G = TypeVar("_G", bound="Group")


class Group:
    """What the groups of a config share: building from a dict that may set only some
    settings, rejecting unknown keys, and naming a bad value by its full path.

    A group is a frozen dataclass deriving from this class, with a ``path`` (where it
    sits, as errors name it: ``EnvConfig.windows``) and a ``__post_init__`` that checks
    its settings with the helpers below.
    """

    __slots__ = ()

    #: Where the group sits, as errors name it (``EnvConfig.windows``).
    path: ClassVar[str]

    @classmethod
    def keys(cls) -> tuple[str, ...]:
        """The group's settings, in order."""
        return tuple(f.name for f in dataclasses.fields(cast(Any, cls)))

    @classmethod
    def given(cls, spec: Any) -> dict[str, Any]:
        """The settings ``spec`` gives, by name: none for ``None``, every one for an
        instance, a dict's own (its unknown keys refused).

        Raises:
            ValueError: an unknown key (the allowed ones are listed).
            TypeError: ``spec`` is neither a dict nor an instance.
        """
        if spec is None:
            return {}
        if isinstance(spec, cls):
            return spec.as_dict()
        if not isinstance(spec, Mapping):
            raise TypeError(
                f"{cls.path} must be a dict or a {cls.__name__}, got {type(spec).__name__}"
            )
        names = cls.keys()
        unknown = [key for key in spec if key not in names]
        if unknown:
            raise unknown_keys_error(cls.path, unknown, names)
        return dict(spec)

    @classmethod
    def from_any(cls: type[_G], spec: _G | Mapping[str, Any] | None) -> _G:
        """Build from ``None`` (defaults), a dict of some settings, or return an instance.

        Raises:
            ValueError: an unknown key (the allowed ones are listed) or a bad value.
            TypeError: ``spec`` is neither a dict nor an instance.
        """
        if isinstance(spec, cls):
            return spec
        return cls(**cls.given(spec))

    def as_dict(self) -> dict[str, Any]:
        """Every setting by name."""
        return {name: getattr(self, name) for name in self.keys()}

    # ------------------------------------------------------------ checks
    def _plain_settings(self) -> None:
        """Store numpy scalars and other reals as plain Python values (``plain``), before
        the checks."""
        for name in self.keys():
            value = getattr(self, name)
            kept = plain(value)
            if kept is not value:
                object.__setattr__(self, name, kept)

    def _fail(self, name: str, message: str) -> ValueError:
        """``"<path>.<name> <message>"``."""
        return ValueError(f"{self.path}.{name} {message}")

    def _bad(self, name: str, allowed: str) -> ValueError:
        """``"<path>.<name> must be <allowed>, got <value>"``."""
        return self._fail(name, f"must be {allowed}, got {getattr(self, name)!r}")

    def _at_least(self, names: Sequence[str], low: int) -> None:
        """Each setting is an int (numpy ints taken as ints; no bool) >= ``low``."""
        for name in names:
            value = getattr(self, name)
            if isinstance(value, np.integer):
                value = int(value)
                object.__setattr__(self, name, value)
            if not (is_int(value) and value >= low):
                raise self._bad(name, f"an int >= {low}")

    def _within(
        self,
        names: Sequence[str],
        low: float,
        high: float = math.inf,
        *,
        low_open: bool = False,
        optional: bool = False,
    ) -> None:
        """Each setting is a finite number in ``[low, high]`` (``(low, high]`` if
        ``low_open``); with ``optional``, ``None`` passes too."""
        for name in names:
            value = getattr(self, name)
            if value is None and optional:
                continue
            if isinstance(value, (np.integer, np.floating)):
                value = value.item()
                object.__setattr__(self, name, value)
            ok = is_finite(value) and (value > low if low_open else value >= low) and value <= high
            if not ok:
                bounds = [f"{'>' if low_open else '>='} {low:g}"] if low > -math.inf else []
                bounds += [f"<= {high:g}"] if high < math.inf else []
                allowed = " ".join(["a finite number", " and ".join(bounds)]).strip()
                raise self._bad(name, f"None or {allowed}" if optional else allowed)

    def _one_of(self, name: str, allowed: Sequence[str] | Mapping[str, Any]) -> None:
        """The setting is one of ``allowed`` (the keys of a dict)."""
        if getattr(self, name) not in allowed:
            raise self._bad(name, f"one of {list(allowed)}")


class KeyPaths:
    """How the settings of a config made of groups are keyed.

    A setting has a path: a top-level setting its name (``cluster``), a group's setting
    ``<group>.<name>`` (``windows.pending``). A config dict may give it in the nested form
    (a group's key with a dict of some of its settings, or an instance of the group), by
    its flat key (``flat_keys``: flat key -> path; a key that kept its
    place maps to itself), or a mix of both for different settings.

    Args:
        owner: The config's name, as errors name it (``EnvConfig``).
        groups: The group classes by their key, in order.
        flat_keys: Every flat key -> its setting's path, in the order of the flat form.
        top_level: The config's top-level keys (settings and groups), in order; default:
            the groups' keys.
    """

    #: A group given as an instance is named ``<key>=<Group>(...)`` in errors (else by the
    #: setting's path, as a nested dict's settings are).
    name_instances: ClassVar[bool] = True

    def __init__(
        self,
        owner: str,
        groups: Mapping[str, type[Group]],
        flat_keys: Mapping[str, str],
        top_level: Sequence[str] | None = None,
    ) -> None:
        self.owner = owner
        self.groups = groups
        self.flat_keys = flat_keys
        self.top_level = tuple(groups if top_level is None else top_level)

    def paths(self) -> tuple[str, ...]:
        """Every setting's path in the nested form (``windows.pending``, ...), in order."""
        out: list[str] = []
        for key in self.top_level:
            group = self.groups.get(key)
            if group is None:
                out.append(key)
            else:
                names = group.keys()
                out += [f"{key}.{name}" for name in names]
        return tuple(out)

    def flat_keys_of(self, group: str) -> tuple[str, ...]:
        """The flat keys that set a group's settings, in ``flat_keys`` order."""
        if group not in self.groups:
            raise ValueError(f"unknown group {group!r}; allowed: {list(self.groups)}")
        return tuple(key for key, path in self.flat_keys.items() if path.startswith(f"{group}."))

    # ------------------------------------------------------------ reading a dict
    def check_keys(self, spec: Mapping[str, Any]) -> None:
        """Refuse the top-level keys of ``spec`` that are neither ``top_level`` nor flat
        keys, all at once (the flat keys that are not top-level keys listed apart)."""
        unknown = [key for key in spec if key not in self.top_level and key not in self.flat_keys]
        if unknown:
            legacy = [key for key in self.flat_keys if key not in self.top_level]
            raise unknown_keys_error(self.owner, unknown, self.top_level, legacy)

    def unknown_key(self, key: Any) -> ValueError:
        """The error of a top-level key that is neither a group, a top-level setting nor
        a flat key (``check_keys`` refuses every such key first)."""
        legacy = [key for key in self.flat_keys if key not in self.top_level]
        return unknown_keys_error(self.owner, [key], self.top_level, legacy)

    def twice(self, path: str, first: str, second: str) -> ValueError:
        """The error of a setting given twice, by the keys ``first`` and ``second``."""
        return ValueError(
            f"{self.owner}: {first!r} and {second!r} both set {path}; give it once "
            f"(the nested key or the flat one)"
        )

    def settings(self, spec: Mapping[str, Any]) -> dict[str, Any]:
        """The settings ``spec`` gives, by path (``{"windows.pending": 8, ...}``).

        Accepts the nested form, the flat keys or both; a group given as an instance sets
        every one of its settings, ``None`` none (the group's own defaults).

        Raises:
            ValueError: an unknown key (at any level), or one setting given twice.
            TypeError: a group's value is neither a dict nor the group's class.
        """
        self.check_keys(spec)
        out: dict[str, Any] = {}
        source: dict[str, str] = {}

        def put(path: str, value: Any, key: str) -> None:
            if path in out:
                raise self.twice(path, source[path], key)
            out[path] = value
            source[path] = key

        for key, value in spec.items():
            group = self.groups.get(key)
            if group is not None:
                named = self.name_instances and isinstance(value, group)
                for name, setting in group.given(value).items():
                    put(
                        f"{key}.{name}",
                        setting,
                        f"{key}={group.__name__}(...)" if named else f"{key}.{name}",
                    )
            elif key in self.flat_keys:
                put(self.flat_keys[key], value, key)
            elif key in self.top_level:
                put(key, value, key)
            else:
                raise self.unknown_key(key)
        return out

    def split(
        self, settings: Mapping[str, Any]
    ) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
        """Settings by path as the top-level settings and each group's settings by name
        (every group, those ``settings`` does not touch as ``{}``)."""
        top: dict[str, Any] = {}
        groups: dict[str, dict[str, Any]] = {name: {} for name in self.groups}
        for path, value in settings.items():
            group, _, name = path.partition(".")
            if name:
                groups[group][name] = value
            else:
                top[path] = value
        return top, groups

    # ------------------------------------------------------------ writing the flat form
    def flat(self, config: Any) -> dict[str, Any]:
        """``config``'s value of every flat key, in ``flat_keys`` order (a flat key that
        names a whole group gives the group)."""
        out: dict[str, Any] = {}
        for key, path in self.flat_keys.items():
            group, _, name = path.partition(".")
            value = getattr(config, group)
            out[key] = getattr(value, name) if name else value
        return out


# ---------------------------------------------------------------- declared settings
def _bounds_text(low: float, high: float, *, low_open: bool, high_open: bool) -> str:
    """``">= 0 and < 1"``: the bounds of a range as every error names them (none: ``""``)."""
    bounds = []
    if low > -math.inf:
        bounds.append(f"{'>' if low_open else '>='} {number_text(low)}")
    if high < math.inf:
        bounds.append(f"{'<' if high_open else '<='} {number_text(high)}")
    return " and ".join(bounds)


class Allowed(Protocol):
    """What a setting accepts: the check of a plain value (``None`` aside) and its text."""

    @property
    def optional(self) -> bool:
        """``None`` is accepted too (and means what the setting's doc says)."""
        ...  # pragma: no cover - a protocol

    def accepts(self, value: Any) -> bool:
        """True if ``value`` (a plain value, not ``None``) is in range."""
        ...  # pragma: no cover - a protocol

    def text(self) -> str:
        """The allowed values as errors and docs name them, ``None`` aside
        (``"an int >= 1 and <= 1024"``)."""
        ...  # pragma: no cover - a protocol


@dataclasses.dataclass(frozen=True, slots=True)
class Int:
    """An int (numpy ints taken; no ``bool``) in ``[low, high]``.

    Attributes:
        low: The smallest value.
        high: The largest (``None``: no upper bound).
        optional: ``None`` is accepted too.
    """

    low: int
    high: int | None = None
    optional: bool = False

    def accepts(self, value: Any) -> bool:
        """An int in range."""
        return is_int(value) and value >= self.low and (self.high is None or value <= self.high)

    def text(self) -> str:
        """``"an int >= 1 and <= 1024"``."""
        high = math.inf if self.high is None else self.high
        return f"an int {_bounds_text(self.low, high, low_open=False, high_open=False)}"


@dataclasses.dataclass(frozen=True, slots=True)
class Real:
    """A real number (ints and numpy numbers taken; no ``bool``), finite unless ``finite``
    is off, between ``low`` and ``high``.

    Attributes:
        low: The lower bound (``-inf``: none).
        high: The upper bound (``inf``: none).
        low_open: ``low`` itself is refused.
        high_open: ``high`` itself is refused.
        finite: Refuse the infinities (``nan`` is always refused).
        optional: ``None`` is accepted too.
    """

    low: float = -math.inf
    high: float = math.inf
    low_open: bool = False
    high_open: bool = False
    finite: bool = True
    optional: bool = False

    def accepts(self, value: Any) -> bool:
        """A number in range."""
        if not is_real(value) or value != value:  # nan
            return False
        if self.finite and not is_finite(value):
            return False
        above = value > self.low if self.low_open else value >= self.low
        below = value < self.high if self.high_open else value <= self.high
        return bool(above and below)

    def text(self) -> str:
        """``"a finite number >= 0 and < 1"`` (``"a number > 0, inf included"`` if not
        ``finite``)."""
        bounds = _bounds_text(self.low, self.high, low_open=self.low_open, high_open=self.high_open)
        text = " ".join(part for part in ("a finite number", bounds) if part)
        return text if self.finite else f"{text.replace('a finite', 'a')}, inf included"


@dataclasses.dataclass(frozen=True, slots=True)
class Flag:
    """``True`` or ``False`` (``np.True_`` taken).

    Attributes:
        optional: ``None`` is accepted too.
    """

    optional: bool = False

    def accepts(self, value: Any) -> bool:
        """A bool."""
        return isinstance(value, bool)

    def text(self) -> str:
        """``"True or False"``."""
        return "True or False"


@dataclasses.dataclass(frozen=True, slots=True)
class Choice:
    """One of a few names.

    Attributes:
        options: The names, in the order errors and docs list them.
        optional: ``None`` is accepted too.
    """

    options: tuple[str, ...]
    optional: bool = False

    def accepts(self, value: Any) -> bool:
        """One of ``options``."""
        return isinstance(value, str) and value in self.options

    def text(self) -> str:
        """``"one of ['noop', 'raise']"``."""
        return f"one of {list(self.options)}"


@dataclasses.dataclass(frozen=True, slots=True)
class Names:
    """A non-empty list or tuple of distinct names among a few (stored as a tuple).

    Attributes:
        options: The names, in the order errors and docs list them.
        optional: ``None`` is accepted too.
    """

    options: tuple[str, ...]
    optional: bool = False

    def accepts(self, value: Any) -> bool:
        """A non-empty list or tuple of distinct names of ``options``."""
        return (
            isinstance(value, (list, tuple))
            and len(value) > 0
            and len(set(value)) == len(value)
            and all(isinstance(name, str) and name in self.options for name in value)
        )

    def text(self) -> str:
        """``"distinct names of ['a', 'b']"``."""
        return f"a non-empty tuple of distinct names of {list(self.options)}"


@dataclasses.dataclass(frozen=True, slots=True)
class Given:
    """A composite value its config checks itself (a cluster, a workload, a job list):
    the declaration refuses only ``None`` (unless ``optional``) and says how the docs and
    errors name what it accepts.

    Attributes:
        description: What it accepts (``"a preset name, a dict or a ClusterConfig"``).
        optional: ``None`` is accepted too.
    """

    description: str
    optional: bool = False

    def accepts(self, value: Any) -> bool:
        """Always: the owning config checks it."""
        return True

    def text(self) -> str:
        """``description``."""
        return self.description


@dataclasses.dataclass(frozen=True, slots=True)
class Setting:
    """One setting, declared once: every config that holds it (the env's groups,
    ``SimConfig``, the training's env part) takes its default and its check from here,
    and the flat-key map, the spec's descriptions and docs/env.md's tables are made from
    it.

    Attributes:
        path: Where it sits in ``EnvConfig``'s nested form (``windows.pending``; a
            top-level setting: its name). A simulator setting the env does not expose
            sits under ``simulator`` with ``env`` off.
        default: Its default, in every config that holds it.
        allowed: What it accepts (:class:`Int`, :class:`Real`, :class:`Flag`,
            :class:`Choice`, :class:`Given`).
        doc: What it means, in one line (docs/env.md's table, the spec).
        flat: Its flat key (the short form: ``pending_window``); a key several settings
            of one group share sets them as a dict by name (``reward``: the weights);
            ``None``: none (the env does not expose it).
        unit: Its unit (``"s"``), if any.
        details: More than the one line, for its config's docstring (optional).
        sim: ``SimConfig`` has it, under its name (the last part of ``path``).
        env: ``EnvConfig`` exposes it, at ``path``.
        convert: Applied to an accepted value before it is stored (``None``: stored
            plain, as :func:`plain` gives it).
    """

    path: str
    default: Any
    allowed: Allowed
    doc: str
    flat: str | None = None
    unit: str = ""
    details: str = ""
    sim: bool = False
    env: bool = True
    convert: Callable[[Any], Any] | None = None

    @property
    def name(self) -> str:
        """Its name: the last part of ``path`` (``pending``; ``SimConfig``'s field name)."""
        return self.path.rpartition(".")[2]

    @property
    def group(self) -> str:
        """The group of ``EnvConfig`` it sits in (``""``: a top-level setting)."""
        group, _, name = self.path.partition(".")
        return group if name else ""

    def allowed_text(self) -> str:
        """What it accepts, as errors and docs say it (``"None or an int >= 1"``)."""
        text = self.allowed.text()
        return f"None or {text}" if self.allowed.optional else text

    def check(self, value: Any, owner: str) -> Any:
        """``value`` as stored (plain, then ``convert``), if accepted.

        Args:
            value: The value given.
            owner: The config or group that holds it, as errors name it
                (``EnvConfig.windows``, ``SimConfig``).

        Raises:
            ValueError: ``"<owner>.<name> must be <allowed>, got <value>"``.
        """
        value = plain(value)
        if value is None and self.allowed.optional:
            return None
        if value is None or not self.allowed.accepts(value):
            raise ValueError(f"{owner}.{self.name} must be {self.allowed_text()}, got {value!r}")
        return value if self.convert is None else self.convert(value)


def declared_fields(cls: type) -> tuple[tuple[str, Setting], ...]:
    """``(field name, Setting)`` of every field of dataclass ``cls`` that is a declared
    setting (its field's ``metadata["setting"]``), in field order; cached per class."""
    cached = _DECLARED_FIELDS.get(cls)
    if cached is None:
        cached = tuple(
            (f.name, f.metadata["setting"])
            for f in dataclasses.fields(cls)
            if "setting" in f.metadata
        )
        _DECLARED_FIELDS[cls] = cached
    return cached


_DECLARED_FIELDS: dict[type, tuple[tuple[str, Setting], ...]] = {}


def declared_field(setting: Setting, **field_options: Any) -> Any:
    """A dataclass field holding ``setting``: its default, and the setting in its
    ``metadata`` (the check :class:`DeclaredGroup` runs, the docs)."""
    return dataclasses.field(
        default=field_options.pop("default", setting.default),
        metadata={"setting": setting},
        **field_options,
    )


class DeclaredGroup(Group):
    """A group whose fields are declared settings (``declared_field``): on creation every
    one is checked by its :class:`Setting` and stored plain, a bad one named by the
    group's ``path`` (``EnvConfig.windows.pending must be an int >= 1 and <= 1024, got
    0``)."""

    __slots__ = ()

    def __post_init__(self) -> None:
        self._check_declared()

    def _check_declared(self) -> None:
        """Check every declared field; store the value its setting keeps."""
        for name, setting in declared_fields(type(self)):
            value = getattr(self, name)
            kept = setting.check(value, self.path)
            if kept is not value:
                object.__setattr__(self, name, kept)

    @classmethod
    def settings(cls) -> tuple[Setting, ...]:
        """The declared settings of the group, in field order."""
        return tuple(setting for _, setting in declared_fields(cls))


_C = TypeVar("_C", bound=type)


def document_settings(cls: _C) -> _C:
    """Append an ``Attributes:`` section made from the declared settings of dataclass
    ``cls`` to its docstring (what ``help`` shows), so that a setting's meaning, range,
    default and unit are written once, in its declaration."""
    lines = ["", "", "    Attributes:"]
    for name, entry in declared_fields(cls):
        unit = f" [{entry.unit}]" if entry.unit else ""
        text = (
            f"{name}: {entry.doc[:1].upper()}{entry.doc[1:]}{unit}."
            f"{' ' + entry.details if entry.details else ''} {entry.allowed_text()[:1].upper()}"
            f"{entry.allowed_text()[1:]}; default ``{entry.default!r}``."
        )
        lines += textwrap.wrap(text, width=92, initial_indent=" " * 8, subsequent_indent=" " * 12)
    cls.__doc__ = (cls.__doc__ or "").rstrip() + "\n".join(lines) + "\n"
    return cls
