"""Throw-away HOME directories that make the real agent CLIs run offline against a fake server.

:class:`AgentHome` creates a fake HOME (Claude Code, Gemini CLI and codex config inside it) and
builds an environment from scratch — a minimal PATH/LANG plus only what each CLI needs — so that
the developer's real keys, config and sessions never leak into a test, and nothing leaves the
machine: every CLI talks to the :class:`~tests.support.model_server.FakeModelServer`, and
``HTTPS_PROXY``/``HTTP_PROXY`` point at it too (it refuses ``CONNECT`` and records the host in
``server.proxy_attempts``), with ``NO_PROXY`` for loopback.

Facts behind the settings (what each CLI needs to run offline): docs/design.md §7.

Codex refuses to create its helper binaries when ``CODEX_HOME`` is inside the temporary directory
(harmless for text, breaks tool use). Pass ``codex_home=`` a directory outside ``/tmp`` —
:func:`persistent_tmpdir` makes one under ``/var/tmp`` — when a test needs codex tools.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.model_server import FakeModelServer

__all__ = [
    "BRIDGES_BIN",
    "BRIDGES_DIR",
    "REPO_ROOT",
    "AgentHome",
    "avatar_env",
    "bridge_bin",
    "bridges_installed",
    "persistent_tmpdir",
    "require_bridges",
]

#: The checkout this test kit lives in.
REPO_ROOT = Path(__file__).resolve().parents[2]
#: ``bridges/`` pins the real agent CLIs (``cd bridges && npm ci`` installs them).
BRIDGES_DIR = REPO_ROOT / "bridges"
#: Where ``claude``, ``gemini``, ``codex-acp`` and ``claude-agent-acp`` are installed.
BRIDGES_BIN = BRIDGES_DIR / "node_modules" / ".bin"

#: Every CLI the kit knows how to run.
AGENT_BINARIES = ("claude", "claude-agent-acp", "codex-acp", "gemini")

SKIP_REASON = "agent CLIs not installed: run cd bridges && npm ci"

#: Model names written into the agents' config (the fake server answers any name).
CODEX_MODEL = "gpt-6.1-sol"


def bridges_installed(*names: str) -> bool:
    """True when ``bridges/node_modules`` holds the given CLIs (default: all of them)."""
    return all((BRIDGES_BIN / n).exists() for n in (names or AGENT_BINARIES))


def require_bridges(*names: str) -> None:
    """Skip the calling test (pytest) when the pinned agent CLIs are not installed.

    Only a missing ``bridges/node_modules`` skips; CI installs it, so anything else that goes
    wrong with a CLI must fail the test, not skip it.
    """
    if not bridges_installed(*names):
        import pytest

        pytest.skip(SKIP_REASON)


def bridge_bin(name: str) -> str:
    """Absolute path of an agent CLI in ``bridges/node_modules/.bin``."""
    return str(BRIDGES_BIN / name)


@contextlib.contextmanager
def persistent_tmpdir(prefix: str = "avatar-test-") -> Iterator[Path]:
    """A temporary directory outside ``/tmp`` (under ``/var/tmp``), removed afterwards.

    For ``CODEX_HOME``: codex will not create its helper binaries in the temp dir.
    """
    base = Path("/var/tmp")
    if not base.is_dir() or not os.access(base, os.W_OK):
        base = REPO_ROOT / ".pytest-homes"
        base.mkdir(exist_ok=True)
    path = Path(tempfile.mkdtemp(prefix=prefix, dir=base))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _codex_config(server: FakeModelServer, model: str, sandbox: str, extra: str) -> str:
    return f"""\
# Written by tests/support/homes.py: codex against the local fake model server.
model = "{model}"
model_provider = "fake"
approval_policy = "never"
sandbox_mode = "{sandbox}"
check_for_update_on_startup = false

[model_providers.fake]
name = "fake"
base_url = "{server.openai_base_url}"
env_key = "FAKE_OPENAI_KEY"
wire_api = "responses"
# Fail fast on scripted errors; tests that exercise retries raise these.
request_max_retries = 1
stream_max_retries = 1

# Without these two, each codex run stalls ~5 s trying to reach external hosts.
[features]
plugins = false

[analytics]
enabled = false
{extra}"""


_GEMINI_SETTINGS = {
    "general": {
        "enableAutoUpdate": False,
        "enableAutoUpdateNotification": False,
    },
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False},
    "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
}

_CLAUDE_JSON = {
    # Skip the first-run onboarding and tips so an interactive `claude` would start cleanly.
    "hasCompletedOnboarding": True,
    "numStartups": 1,
    "autoUpdates": False,
    "bypassPermissionsModeAccepted": True,
}


@dataclass
class AgentHome:
    """A fake HOME plus the environment that runs every agent CLI offline against ``server``.

    Example::

        home = AgentHome(tmp_path, model_server)
        subprocess.run([bridge_bin("claude"), "-p", "hi"], env=home.env, cwd=home.workdir)

    Layout under ``root``: ``home/`` (HOME, with ``.claude.json``, ``.claude/``,
    ``.gemini/settings.json``, ``.codex/config.toml`` unless ``codex_home`` is given) and
    ``work/`` (a project directory to use as cwd).
    """

    root: Path
    server: FakeModelServer
    #: CODEX_HOME; default ``<home>/.codex``. Give a dir outside /tmp for codex tool use.
    codex_home: Path | None = None
    #: Put ``bridges/node_modules/.bin`` first on PATH (so ``claude``/``gemini``… resolve).
    bridges_on_path: bool = True
    #: Model written into codex's config.toml.
    codex_model: str = CODEX_MODEL
    #: codex ``sandbox_mode``. ``read-only`` runs commands under bubblewrap, which this machine
    #: lacks (codex's exec_command then fails with "bubblewrap is unavailable"): tests that let
    #: codex run commands use ``danger-full-access`` (and a ``codex_home`` outside /tmp).
    codex_sandbox: str = "read-only"
    #: TOML appended to codex's config.toml (e.g. ``[mcp_servers.x]`` tables).
    codex_config_extra: str = ""
    #: Merged into ``~/.gemini/settings.json``.
    gemini_settings: Mapping[str, object] = field(default_factory=dict)
    #: Extra variables added on top of the generated environment.
    extra_env: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.root = Path(self.root)
        self.home = self.root / "home"
        self.workdir = self.root / "work"
        if self.codex_home is None:
            self.codex_home = self.home / ".codex"
        self.codex_home = Path(self.codex_home)
        self.build()

    # -- paths ------------------------------------------------------------------------------

    @property
    def claude_dir(self) -> Path:
        """``~/.claude`` (transcripts in ``projects/<cwd slug>/<session>.jsonl``)."""
        return self.home / ".claude"

    @property
    def gemini_dir(self) -> Path:
        """``~/.gemini`` (sessions in ``tmp/<project>/chats``)."""
        return self.home / ".gemini"

    @property
    def bridges_bin(self) -> Path:
        """``bridges/node_modules/.bin`` of this checkout."""
        return BRIDGES_BIN

    def bin(self, name: str) -> str:
        """Absolute path of an agent CLI (``claude``, ``gemini``, ``codex-acp``, …)."""
        return bridge_bin(name)

    # -- building ---------------------------------------------------------------------------

    def build(self) -> AgentHome:
        """(Re)write the fake HOME and the agents' config files; idempotent."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        for sub in (".config", ".cache", ".local/share", ".local/state", ".claude"):
            (self.home / sub).mkdir(parents=True, exist_ok=True)
        (self.home / ".claude.json").write_text(json.dumps(_CLAUDE_JSON, indent=2))
        self.gemini_dir.mkdir(parents=True, exist_ok=True)
        settings = _merge(_GEMINI_SETTINGS, self.gemini_settings)
        (self.gemini_dir / "settings.json").write_text(json.dumps(settings, indent=2))
        assert self.codex_home is not None
        self.codex_home.mkdir(parents=True, exist_ok=True)
        (self.codex_home / "config.toml").write_text(
            _codex_config(
                self.server, self.codex_model, self.codex_sandbox, self.codex_config_extra
            )
        )
        return self

    @property
    def env(self) -> dict[str, str]:
        """The full environment for any agent CLI (a fresh dict each time)."""
        return self.env_for()

    def env_for(self, **extra: str) -> dict[str, str]:
        """The environment, with ``extra`` variables added/overridden."""
        url = self.server.url
        path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
        if self.bridges_on_path:
            path = f"{BRIDGES_BIN}:{path}"
        node = shutil.which("node")
        if node and str(Path(node).parent) not in path.split(":"):
            path = f"{path}:{Path(node).parent}"
        env = {
            "PATH": path,
            "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
            "HOME": str(self.home),
            "USER": os.environ.get("USER", "root"),
            "LOGNAME": os.environ.get("LOGNAME", os.environ.get("USER", "root")),
            "SHELL": "/bin/bash",
            "TERM": "dumb",
            "NO_COLOR": "1",
            "XDG_CONFIG_HOME": str(self.home / ".config"),
            "XDG_CACHE_HOME": str(self.home / ".cache"),
            "XDG_DATA_HOME": str(self.home / ".local/share"),
            "XDG_STATE_HOME": str(self.home / ".local/state"),
            # Nothing may leave the machine: proxied traffic hits the fake server (403).
            "HTTPS_PROXY": url,
            "HTTP_PROXY": url,
            "https_proxy": url,
            "http_proxy": url,
            "NO_PROXY": "127.0.0.1,localhost",
            "no_proxy": "127.0.0.1,localhost",
            # Claude Code and claude-agent-acp.
            "ANTHROPIC_BASE_URL": url,
            "ANTHROPIC_API_KEY": "test",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "IS_SANDBOX": "1",  # as root, else --dangerously-skip-permissions is refused
            "CLAUDE_CODE_EXECUTABLE": bridge_bin("claude"),
            # Codex (codex-acp).
            "CODEX_HOME": str(self.codex_home),
            "FAKE_OPENAI_KEY": "test",
            # Gemini CLI.
            "GEMINI_API_KEY": "test",
            "GOOGLE_GEMINI_BASE_URL": url,
            "GEMINI_CLI_NO_RELAUNCH": "true",
        }
        env.update(self.extra_env)
        env.update(extra)
        return env


def _merge(base: Mapping[str, object], over: Mapping[str, object]) -> dict[str, object]:
    """Deep-merge two JSON-like mappings (``over`` wins)."""
    out = dict(base)
    for k, v in over.items():
        if isinstance(v, Mapping) and isinstance(out.get(k), Mapping):
            out[k] = _merge(out[k], v)  # type: ignore[arg-type]
        else:
            out[k] = v
    return out


def avatar_env(
    home: AgentHome,
    avatar_home: Path | None = None,
    config: Path | None = None,
    **extra: str,
) -> dict[str, str]:
    """Environment for running the ``avatar`` CLI in a subprocess against the fake server.

    ``AVATAR_HOME`` defaults to ``<root>/avatar-home``; ``AVATAR_CONFIG`` to
    ``<root>/avatar-config.yaml``, which is not created, so the developer's config never leaks
    in (write to it to give a test a config). The native agent is pointed at the fake server
    too (``OPENAI_BASE_URL``/``OPENAI_API_KEY``, and the Anthropic variables the agents use),
    and the running interpreter's ``bin`` directory leads PATH so ``avatar`` resolves to this
    checkout.
    """
    import sys

    env = home.env_for()
    venv_bin = str(Path(sys.executable).parent)
    env["PATH"] = f"{venv_bin}:{env['PATH']}"
    env["AVATAR_HOME"] = str(avatar_home or home.root / "avatar-home")
    env["AVATAR_CONFIG"] = str(config or home.root / "avatar-config.yaml")
    env["OPENAI_BASE_URL"] = home.server.openai_base_url
    env["OPENAI_API_KEY"] = "test"
    env["PYTHONUNBUFFERED"] = "1"
    # The server's socket dir (`avatar serve`) is the test's own: a server one test starts is
    # never another's, nor the developer's.
    runtime = home.root / "run"
    runtime.mkdir(mode=0o700, parents=True, exist_ok=True)
    env["XDG_RUNTIME_DIR"] = str(runtime)
    env.update(extra)
    return env
