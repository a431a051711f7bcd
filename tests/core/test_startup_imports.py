"""`avatar --version` and `avatar --help` import none of avatar's heavy dependencies (docs/design.md
§1).

The list names what avatar itself imports somewhere (lazily): a module avatar never imports
(a vendor SDK, say) could not show up anyway and would only make the test look stricter.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

import avatar

HEAVY = (
    "prompt_toolkit",
    "rich",
    "httpx",
    "httpx_sse",
    "pydantic",
    "yaml",
    "starlette",
    "uvicorn",
    "markdown_it",  # the web page's and the HTML export's markdown
    "pygments",
)


def _imported_by_avatar() -> set[str]:
    """The top-level names of every module avatar's code imports, at any depth of the code."""
    names: set[str] = set()
    for path in Path(avatar.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names.update(alias.name.partition(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names.add(node.module.partition(".")[0])
    return names


def test_the_list_names_only_what_avatar_imports() -> None:
    assert set(HEAVY) <= _imported_by_avatar(), set(HEAVY) - _imported_by_avatar()


@pytest.mark.parametrize("args", [["--version"], ["--help"], ["session", "list"]])
def test_version_help_and_listing_import_nothing_heavy(args: list[str], tmp_path: Path) -> None:
    """`session list` without a config file or native sessions needs no pydantic either: the
    config defaults are plain dataclasses and the native index's model loads with an index."""
    code = (
        "import sys\n"
        "from avatar.cli import main\n"
        f"try:\n    main({args!r})\nexcept SystemExit:\n    pass\n"
        f"print('HEAVY', sorted(m for m in {HEAVY!r} if m in sys.modules))\n"
        "print('SECRETS', 'avatar.policy.secrets' in sys.modules)\n"
    )
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "AVATAR_HOME": str(tmp_path / "avatar-home"),
        "AVATAR_CONFIG": str(tmp_path / "no-config.yaml"),
    }
    (tmp_path / "proj").mkdir()
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        cwd=tmp_path / "proj",
    )
    assert out.returncode == 0, out.stderr
    assert "HEAVY []" in out.stdout
    if args[0] != "session":  # the secret detector loads where titles are made, no sooner
        assert "SECRETS False" in out.stdout
    expected = {"--version": "avatar 0.", "--help": "session", "session": "HEAVY"}[args[0]]
    assert expected in out.stdout
    if args[0] == "session":
        assert "no sessions" in out.stderr
