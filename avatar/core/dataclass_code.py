"""The methods `dataclasses` writes, compiled once and kept with avatar's bytecode.

For each class, `@dataclass` writes the source of its `__init__`, `__repr__` and `__eq__` (a
frozen class's `__setattr__`, `__delattr__` and `__hash__` too) and compiles each with `exec`,
in every process: ~0.3 ms a class, ~80% of making it. A native one-shot compiles ~640 such
methods (avatar's, pydantic's, anyio's, h11's; ~35 ms), a cold Claude one-shot those of ~30
classes before its agent starts. Python keeps the bytecode of modules between runs, not these.

`keep()` puts in the `dataclasses` module an `exec` that first looks the source up among the
code compiled for it in an earlier run: per module, in a file of avatar's own bytecode folder
(`avatar/__pycache__/dataclass-code/avatar.core.config.cpython-311.methods`), read when the
module makes its first class. The source is the key, so a class that changed misses and is
compiled as before. What a run compiled is written at exit, atomically, and never where
bytecode is not written (`PYTHONDONTWRITEBYTECODE`). A file holds the methods of one build of
its module's bytecode: when the module is compiled again, its old methods go.

The files hold code avatar runs, as the `.pyc` files beside them do, and have their trust
and reach (docs/security.md): they are only in avatar's own `__pycache__`, whoever can write
them can write the bytecode there, and only code compiled here from what `dataclasses` wrote
is put in them.
"""

from __future__ import annotations

import atexit
import builtins
import contextlib
import marshal
import os
import sys
from types import CodeType

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

#: What each file begins with: the bytecode of this Python (`importlib`'s magic number).
_MAGIC: bytes = sys.modules["_frozen_importlib_external"].MAGIC_NUMBER
#: The most methods kept for one module (its classes have a few each).
MOST = 2000
#: Where the files are: in avatar's own bytecode folder.
FOLDER = os.path.join(os.path.dirname(os.path.dirname(__file__)), "__pycache__", "dataclass-code")


class _Module:
    """One module's kept methods: their file, the build of the module's bytecode they go
    with, the code by source, and whether this run compiled any. (Not dataclasses: this
    module's own classes are made before it keeps anything.)"""

    __slots__ = ("build", "code", "compiled", "path")

    def __init__(self, path: str, build: tuple[int, int]) -> None:
        self.path, self.build = path, build
        self.code: dict[str, CodeType] = {}
        self.compiled = False


class KeptCode:
    """The methods kept in `folder`, and how this run used them: `reused` (taken from a
    file) and `compiled`."""

    def __init__(self, folder: str) -> None:
        self.folder = folder
        self.modules: dict[str, _Module | None] = {}
        self.reused = 0
        self.compiled = 0
        self._writing = False

    def exec(
        self, source: object, globals: dict[str, object] | None = None, locals: object = None, /
    ) -> None:
        """`exec` as `dataclasses` calls it: a kept compilation of `source` when there is
        one (and `source` is compiled and kept otherwise)."""
        if isinstance(source, str) and globals is not None:
            source = self._code(globals, source)
        builtins.exec(source, globals, locals)  # type: ignore[arg-type]

    def _code(self, space: Mapping[str, object], source: str) -> CodeType | str:
        name = space.get("__name__")
        if not isinstance(name, str):
            return source
        if name not in self.modules:
            self.modules[name] = self._read(name, space.get("__cached__"))
        module = self.modules[name]
        if module is None:  # (a module without bytecode: nothing to keep its methods with)
            return source
        code = module.code.get(source)
        if code is not None:
            self.reused += 1
            return code
        code = compile(source, "<string>", "exec")
        self.compiled += 1
        if len(module.code) >= MOST:
            return code  # (classes made at run time, of ever new shapes: not kept)
        module.code[source] = code
        if not sys.dont_write_bytecode:
            module.compiled = True
            if not self._writing:
                self._writing = True
                atexit.register(self.write)
        return code

    def _read(self, name: str, cached: object) -> _Module | None:
        """The methods kept for module `name`, whose bytecode is `cached`: none if its file
        is unreadable, not this Python's, or of another build of the module."""
        build = _build(cached)
        if build is None:
            return None
        tag = sys.implementation.cache_tag
        module = _Module(os.path.join(self.folder, f"{name}.{tag}.methods"), build)
        try:
            with open(module.path, "rb") as f:
                magic, built, code = marshal.loads(f.read())
        except (OSError, ValueError, EOFError, TypeError):
            return module
        if magic == _MAGIC and built == build and isinstance(code, dict):
            module.code = {
                s: c for s, c in code.items() if isinstance(s, str) and isinstance(c, CodeType)
            }
        return module

    def write(self) -> None:
        """Write the file of each module this run compiled methods for (done at exit)."""
        for module in self.modules.values():
            if module is not None and module.compiled:
                _write(module)
                module.compiled = False


def _build(cached: object) -> tuple[int, int] | None:
    """Which build of a module its bytecode file `cached` holds (the file's time and size);
    None without one."""
    if not isinstance(cached, str) or not cached.endswith(".pyc"):
        return None
    try:
        found = os.stat(cached)
    except OSError:
        return None
    return found.st_mtime_ns, found.st_size


def _write(module: _Module) -> None:
    """Replace `module`'s file with what it holds now (nothing said if it cannot)."""
    folder, base = os.path.split(module.path)
    temporary = os.path.join(folder, f".{base}.{os.getpid()}")
    data = marshal.dumps((_MAGIC, module.build, module.code))
    with contextlib.suppress(OSError):
        os.makedirs(folder, exist_ok=True)
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(temporary, module.path)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary)


def keep(folder: str = FOLDER) -> KeptCode | None:
    """Keep the methods `dataclasses` writes, in `folder`, from now on: the `KeptCode` doing
    it (the same one when called again), or None when `dataclasses` has someone else's
    `exec` already."""
    import dataclasses

    current = vars(dataclasses).get("exec")
    if current is not None:
        owner = getattr(current, "__self__", None)
        return owner if isinstance(owner, KeptCode) else None
    kept = KeptCode(folder)
    dataclasses.exec = kept.exec  # type: ignore[attr-defined]
    return kept
