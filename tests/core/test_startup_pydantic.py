"""The stand-in for pydantic's plugin loader (`avatar.cli.startup.without_pydantic_plugins`).

It replaces a private pydantic module, so these tests pin down what it relies on: they fail
when the installed pydantic changes that module or how it is used, or when the pydantic that
requirements.lock pins is not a version the stand-in was checked against. They do not need the
locked version installed: on any other the stand-in only steps aside (its own test below).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from avatar.cli.startup import PYDANTIC_CHECKED

# Makes the installed pydantic, whatever its version, one the stand-in was checked against, so
# the tests below exercise the stand-in itself; which version is locked is checked apart.
CHECK_THE_INSTALLED = """
import avatar.cli.startup
from pydantic.version import VERSION
avatar.cli.startup.PYDANTIC_CHECKED = frozenset({tuple(int(n) for n in VERSION.split(".")[:2])})
"""


def _run(code: str, *, installed_checked: bool = False, **env: str) -> str:
    """Run `code` in a fresh interpreter (nothing of pydantic loaded yet); its stdout."""
    base = {k: v for k, v in os.environ.items() if k != "PYDANTIC_DISABLE_PLUGINS"}
    code = textwrap.dedent(code)
    if installed_checked:
        code = CHECK_THE_INSTALLED + code
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**base, **env},
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_the_locked_pydantic_is_a_version_checked() -> None:
    # The canary for whoever moves the lock (.ci/lock): the pydantic avatar ships against has
    # been checked. Another installed pydantic only loses the stand-in (50 ms of each command).
    lock = (Path(__file__).resolve().parents[2] / "requirements.lock").read_text()
    pinned = re.search(r"^pydantic==(\d+)\.(\d+)\.", lock, re.M)
    assert pinned, "requirements.lock pins no pydantic"
    major, minor = int(pinned.group(1)), int(pinned.group(2))
    assert (major, minor) in PYDANTIC_CHECKED, (
        f"pydantic {major}.{minor} is locked: the plugin-loader stand-in is off for it. Check "
        f"that the other tests here pass on it and pydantic/plugin/_loader.py still works as "
        f"they assume, then add ({major}, {minor}) to avatar.cli.startup.PYDANTIC_CHECKED."
    )


def test_pydantic_takes_only_get_plugins_from_the_module_replaced() -> None:
    import pydantic

    root = Path(pydantic.__file__).parent
    uses = [
        (path.relative_to(root).as_posix(), line.strip())
        for path in root.rglob("*.py")
        for line in path.read_text(encoding="utf-8").splitlines()
        if "_loader" in line and not line.lstrip().startswith("#")
    ]
    # The module itself aside, it is imported in one place, for `get_plugins` only, each time
    # a validator is built (so a stand-in put into sys.modules first is the one asked).
    assert [u for u in uses if u[0] != "plugin/_loader.py"] == [
        ("plugin/_schema_validator.py", "from ._loader import get_plugins")
    ]


def test_the_stand_in_answers_what_pydantic_s_own_loader_answers() -> None:
    # pydantic's own loader, plugins disabled the documented way: no parameters, an empty
    # iterable. The stand-in, without that variable, answers the same.
    own = _run(
        """
        import inspect
        from pydantic.plugin import _loader
        assert _loader.__file__.endswith("_loader.py")
        assert not inspect.signature(_loader.get_plugins).parameters
        print(repr(list(_loader.get_plugins())))
        """,
        PYDANTIC_DISABLE_PLUGINS="__all__",
    )
    ours = _run(
        """
        import sys
        from avatar.cli.startup import without_pydantic_plugins
        without_pydantic_plugins()
        from pydantic.plugin import _loader
        print(repr(list(_loader.get_plugins())))
        print(repr(list(_loader.get_plugins())))
        """,
        installed_checked=True,
    )
    assert own.split() == ["[]"]
    assert ours.split() == ["[]", "[]"]


def test_models_validate_with_the_stand_in_without_a_plugin_scan() -> None:
    out = _run(
        """
        import os, sys
        from avatar.cli.startup import without_pydantic_plugins
        without_pydantic_plugins()
        from pydantic import BaseModel, ValidationError

        class M(BaseModel):
            n: int

        assert M.model_validate({"n": "3"}).n == 3
        try:
            M.model_validate({"n": "x"})
        except ValidationError:
            print("REJECTED")
        print("METADATA", "importlib.metadata" in sys.modules)
        print("STAND-IN", sys.modules["pydantic.plugin._loader"].get_plugins is tuple)
        print("ENV", "PYDANTIC_DISABLE_PLUGINS" in os.environ)
        """,
        installed_checked=True,
    )
    assert out.split("\n")[:4] == ["REJECTED", "METADATA False", "STAND-IN True", "ENV False"]


def test_a_version_not_checked_gets_pydantic_s_own_loader() -> None:
    out = _run(
        """
        import sys
        import avatar.cli.startup
        avatar.cli.startup.PYDANTIC_CHECKED = frozenset()
        avatar.cli.startup.without_pydantic_plugins()
        from pydantic import BaseModel

        class M(BaseModel):
            n: int

        assert M(n=1).n == 1
        loader = sys.modules["pydantic.plugin._loader"]
        print("OWN", getattr(loader, "__file__", "").endswith("_loader.py"))
        """
    )
    assert "OWN True" in out


@pytest.mark.parametrize(("value", "replaced"), [("1", True), ("some_plugin", False)])
def test_a_user_setting_of_the_variable_is_respected(value: str, replaced: bool) -> None:
    out = _run(
        """
        import sys
        from avatar.cli.startup import without_pydantic_plugins
        without_pydantic_plugins()
        print("REPLACED", "pydantic.plugin._loader" in sys.modules)
        """,
        PYDANTIC_DISABLE_PLUGINS=value,
    )
    assert f"REPLACED {replaced}" in out
