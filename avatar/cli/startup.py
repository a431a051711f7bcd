"""Start-up's own measures: pydantic's plugin scan answered before it runs, `inspect` loaded
when first used, and what start-up built kept out of later garbage collections."""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # not `typing`: see avatar/__init__.py

if TYPE_CHECKING:
    from collections.abc import Iterable


def settled(*, enable: bool = True) -> None:
    """Start-up is over: keep what it built out of later collections, and collect again."""
    import gc

    gc.freeze()
    if enable:
        gc.enable()


# The pydantic versions (major, minor) whose plugin loader `without_pydantic_plugins` stands
# in for was checked against: tests/core/test_startup_pydantic.py fails when the pydantic
# requirements.lock pins is not one of them, or the installed one's loader no longer looks as
# the stand-in assumes.
PYDANTIC_CHECKED = frozenset({(2, 14)})


def without_pydantic_plugins() -> None:
    """Answer pydantic's plugin question before it looks (avatar uses no pydantic plugins).

    When pydantic builds its first validator it asks `pydantic.plugin._loader.get_plugins()`,
    which imports `importlib.metadata` and scans every installed distribution for plugins:
    ~50 ms of each command. avatar puts in place of that module one whose `get_plugins()`
    answers what pydantic's own answers with `PYDANTIC_DISABLE_PLUGINS=__all__`: none. It
    checks pydantic's version on that first call, when pydantic is loaded anyway: on a
    version not in `PYDANTIC_CHECKED` it puts pydantic's own loader back and lets it answer.
    Nothing is set in the environment, so the agents and commands avatar runs see the user's.
    A user who set `PYDANTIC_DISABLE_PLUGINS` to anything but "all" gets pydantic's own loader.
    """
    import os

    name = "pydantic.plugin._loader"
    if os.environ.get("PYDANTIC_DISABLE_PLUGINS", "__all__") not in ("__all__", "1", "true"):
        return
    if name in sys.modules:
        return
    import types

    loader = types.ModuleType(name)

    def get_plugins() -> Iterable[object]:
        from pydantic.version import VERSION

        major, minor = (int(n) for n in VERSION.split(".")[:2])
        if (major, minor) in PYDANTIC_CHECKED:
            loader.get_plugins = tuple  # type: ignore[attr-defined]  # -> (): no plugins
            return ()
        if sys.modules.get(name) is loader:  # not a version checked: pydantic's own answers
            del sys.modules[name]
        from pydantic.plugin._loader import get_plugins as own

        loader.get_plugins = own  # type: ignore[attr-defined]
        return own()

    loader.get_plugins = get_plugins  # type: ignore[attr-defined]
    sys.modules[name] = loader


def inspect_when_used() -> None:
    """Load `inspect` when something first uses it, not when `dataclasses` imports it.

    `dataclasses` imports `inspect` (with `ast`, `dis`, `tokenize`: ~4 ms) for one use, the
    signature it writes as the docstring of a class without one; avatar's classes have
    theirs. A cold one-shot makes its dataclasses before its agent starts and loads what
    uses `inspect` (asyncio, click) after, while the agent boots: until then `inspect` is a
    stand-in module that, on the first name asked of it, imports the real one, takes its
    names and puts it in its place (tests/core/test_cold_start.py).
    """
    name = "inspect"
    if name in sys.modules:
        return
    import types

    class Deferred(types.ModuleType):
        def __getattr__(self, attribute: str) -> object:
            if sys.modules.get(name) is self:
                del sys.modules[name]
            import importlib

            real = importlib.import_module(name)
            self.__dict__.update(real.__dict__)
            return getattr(real, attribute)

    sys.modules[name] = Deferred(name)
