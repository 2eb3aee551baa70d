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
  given twice refused, and written back in the flat form.

It is part of the simulation core (no env, no gymnasium), so every layer can use it.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import numbers
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, TypeVar, cast

import numpy as np

from gpushare_env.sim.limits import is_finite, is_int, is_real, number_text, range_text

__all__ = [
    "Group",
    "KeyPaths",
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
