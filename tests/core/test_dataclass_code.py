"""The methods `dataclasses` writes, compiled once and kept (`avatar.core.dataclass_code`): a
second run compiles none of them, and a class made from kept code is the class `dataclasses`
makes; a changed class, a damaged file, bytecode not written, another `exec` in place."""

from __future__ import annotations

import dataclasses
import keyword
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from avatar.core.dataclass_code import KeptCode

THINGS = '''
from __future__ import annotations
from dataclasses import dataclass, field

@dataclass(frozen=True, order=True)
class Point:
    """A point."""
    x: int
    y: int = 0

@dataclass
class Bag:
    """A bag."""
    name: str
    items: list[str] = field(default_factory=list)
'''

USE = (
    "import sys\n"
    "from avatar.core.dataclass_code import keep\n"
    "kept = keep(sys.argv[1])\n"
    "from things import Bag, Point\n"
    "p = Point(1, 2)\n"
    "try:\n"
    "    p.x = 3\n"
    "except Exception as e:\n"
    "    frozen = type(e).__name__\n"
    "print(repr(p), p == Point(1, 2), p < Point(2), hash(p) == hash(Point(1, 2)), frozen)\n"
    "print(repr(Bag('b')), Bag('b') == Bag('b', []))\n"
    "print('used', kept.reused, kept.compiled)\n"
)


def _run(tmp: Path, folder: Path, **env: str) -> list[str]:
    base = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    out = subprocess.run(
        [sys.executable, "-c", USE, str(folder)],
        capture_output=True,
        text=True,
        cwd=tmp,
        env={**base, "PYTHONPATH": str(tmp), **env},
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.splitlines()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "things.py").write_text(THINGS)
    return tmp_path


def _used(lines: list[str]) -> tuple[int, int]:
    reused, compiled = lines[-1].split()[1:]
    return int(reused), int(compiled)


def test_a_second_run_compiles_none_and_its_classes_behave_the_same(project: Path) -> None:
    folder = project / "kept"
    first = _run(project, folder)
    reused, compiled = _used(first)
    assert reused == 0 and compiled >= 13  # (Point: 10 methods, frozen and ordered; Bag: 3)
    assert [p.name for p in folder.iterdir()] == [f"things.{sys.implementation.cache_tag}.methods"]
    second = _run(project, folder)
    assert _used(second) == (compiled, 0)
    assert (
        first[:-1]
        == second[:-1]
        == [
            "Point(x=1, y=2) True True True FrozenInstanceError",
            "Bag(name='b', items=[]) True",
        ]
    )


def test_a_changed_class_is_compiled_again_and_the_old_methods_go(project: Path) -> None:
    folder = project / "kept"
    _run(project, folder)
    (project / "things.py").write_text(
        THINGS.replace("    y: int = 0\n", "    y: int = 0\n    z: int = 0\n")
    )
    changed = _run(project, folder)
    assert changed[0] == "Point(x=1, y=2, z=0) True True True FrozenInstanceError"
    reused, compiled = _used(changed)
    assert compiled > 0  # (the changed class's methods; the module's bytecode is new)
    assert _used(_run(project, folder)) == (reused + compiled, 0)


def test_a_damaged_file_is_read_as_none_and_written_again(project: Path) -> None:
    folder = project / "kept"
    _, compiled = _used(_run(project, folder))
    [kept] = folder.iterdir()
    for damage in (b"", b"\x00garbage", kept.read_bytes()[:40]):
        kept.write_bytes(damage)
        assert _used(_run(project, folder)) == (0, compiled)
        assert _used(_run(project, folder)) == (compiled, 0)


def test_nothing_is_written_where_bytecode_is_not(project: Path) -> None:
    folder = project / "kept"
    lines = _run(project, folder, PYTHONDONTWRITEBYTECODE="1")
    assert lines[0].startswith("Point(x=1, y=2)")
    assert not folder.exists()


def test_another_exec_in_dataclasses_is_left_alone() -> None:
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "import dataclasses\n"
            "def mine(*a): exec(*a)\n"
            "dataclasses.exec = mine\n"
            "from avatar.core.dataclass_code import keep\n"
            "print(keep() is None, dataclasses.exec is mine)\n",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.stdout == "True True\n", out.stderr


def test_the_cli_keeps_them(tmp_path: Path) -> None:
    home = {"HOME": str(tmp_path), "AVATAR_HOME": str(tmp_path / "avatar-home")}
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "import dataclasses\n"
            "from avatar.cli import main\n"
            "try:\n    main(['session', 'list'])\n"
            "except SystemExit:\n    pass\n"
            "print('kept by', type(dataclasses.exec.__self__).__name__)\n",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env={**os.environ, **home, "AVATAR_CONFIG": str(tmp_path / "none.yaml")},
    )
    assert out.stdout.splitlines()[-1] == "kept by KeptCode", out.stderr


# -- the classes kept code makes are the classes `dataclasses` makes ---------------------------

NAMES = st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True).filter(
    lambda n: not keyword.iskeyword(n)
)
SHAPES = st.fixed_dictionaries(
    {
        "names": st.lists(NAMES, min_size=0, max_size=6, unique=True),
        "defaults": st.integers(0, 6),
        "frozen": st.booleans(),
        "eq": st.booleans(),
        "order": st.booleans(),
        "unsafe_hash": st.booleans(),
        "kw_only": st.booleans(),
    }
)


def _make(shape: dict[str, object], module: str) -> type:
    names = shape["names"]
    assert isinstance(names, list)
    first_default = max(0, len(names) - int(shape["defaults"]))  # type: ignore[call-overload]
    fields: list[tuple[str, type, object] | tuple[str, type]] = [
        (n, int, dataclasses.field(default=i)) if i >= first_default else (n, int)
        for i, n in enumerate(names)
    ]
    flags = {k: shape[k] for k in ("frozen", "eq", "unsafe_hash", "kw_only")}
    flags["order"] = shape["order"] and shape["eq"]
    space = {"__module__": module}  # (its methods are made in that module's globals)
    return dataclasses.make_dataclass("Shape", fields, namespace=space, **flags)  # type: ignore[arg-type]


def _behaviour(cls: type, names: list[str]) -> list[object]:
    a = cls(**{n: i for i, n in enumerate(names)})
    b = cls(**{n: i for i, n in enumerate(names)})
    seen: list[object] = [repr(a), a == b, a is not b]
    try:
        seen.append(hash(a) == hash(b))
    except TypeError as e:
        seen.append(str(e))
    try:
        seen.append(a < b)
    except TypeError as e:
        seen.append(type(e).__name__)
    try:
        setattr(a, names[0] if names else "extra", 7)
        seen.append("set")
    except dataclasses.FrozenInstanceError:
        seen.append("frozen")
    return seen


@settings(max_examples=60, deadline=None)
@given(shape=SHAPES)
def test_a_class_from_kept_code_is_the_class_dataclasses_makes(
    shape: dict[str, object], tmp_path_factory: pytest.TempPathFactory
) -> None:
    writes = sys.dont_write_bytecode
    sys.dont_write_bytecode = False  # (as where bytecode is written: the file is kept)
    try:
        _compare(shape, tmp_path_factory.mktemp("kept"))
    finally:
        sys.dont_write_bytecode = writes


def _compare(shape: dict[str, object], where: Path) -> None:
    pyc = where / "shapes.cpython.pyc"
    pyc.write_bytes(b"bytecode")
    module = types.ModuleType("kept_shapes")
    module.__cached__ = str(pyc)  # type: ignore[attr-defined]
    sys.modules[module.__name__] = module
    names = shape["names"]
    assert isinstance(names, list)
    try:
        plain = _behaviour(_make(shape, module.__name__), names)
        for round_ in ("compiled", "reused"):
            kept = KeptCode(str(where / "methods"))
            dataclasses.exec = kept.exec  # type: ignore[attr-defined]
            try:
                made = _behaviour(_make(shape, module.__name__), names)
            finally:
                del dataclasses.exec  # type: ignore[attr-defined]
            kept.write()
            assert made == plain
            if round_ == "compiled":
                assert kept.compiled > 0 and kept.reused == 0
            else:
                assert kept.compiled == 0 and kept.reused > 0
    finally:
        del sys.modules[module.__name__]
