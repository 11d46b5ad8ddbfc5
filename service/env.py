"""Typed settings from the environment: the one parser of each type, used by
:mod:`service.config` and the gunicorn settings (:mod:`service.runtime`).  Importing it
reads nothing."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")
_BOOLEANS = {"1": True, "true": True, "yes": True, "on": True,
             "0": False, "false": False, "no": False, "off": False}


def _env(name: str, default: T, parse: Callable[[str], T], expected: str) -> T:
    """``parse`` of the variable ``name`` (``default`` when unset or blank)."""
    value = os.environ.get(name, "").strip()
    if not value:
        return default
    try:
        return parse(value)
    except (ValueError, KeyError):
        raise ValueError(f"{name} must be {expected}, not {value!r}") from None


def env_str(name: str, default: str | None) -> str | None:
    """The variable's text as it is (``default`` when unset or empty)."""
    return os.environ.get(name) or default


def env_int(name: str, default: int | None) -> int | None:
    return _env(name, default, int, "an integer")


def env_float(name: str, default: float) -> float:
    return _env(name, default, float, "a number")


def env_bool(name: str, default: bool) -> bool:
    return _env(name, default, lambda value: _BOOLEANS[value.lower()], "true or false")
