"""Classes named as data (`"module:Class"` in provider specs and the tool catalog), imported
only when first used, so naming a bridge or a reader costs nothing at start-up."""

from __future__ import annotations

import importlib
from typing import Any, TypeVar

T = TypeVar("T")


def load_object(path: str) -> Any:
    """The object `module:attr` names (ImportError when the module or attribute is missing)."""
    module, sep, attr = path.partition(":")
    if not sep or not module or not attr:
        raise ImportError(f"not a 'module:attr' reference: {path!r}")
    try:
        return getattr(importlib.import_module(module), attr)
    except AttributeError as e:
        raise ImportError(f"{path}: {e}") from None


def load_class(path: str, base: type[T]) -> type[T]:
    """The class `module:Class` names, checked to be a subclass of `base`."""
    obj = load_object(path)
    if not (isinstance(obj, type) and issubclass(obj, base)):
        raise ImportError(f"{path} is not a {base.__name__}")
    return obj
