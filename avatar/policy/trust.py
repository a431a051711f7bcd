"""Trust in a project's `.avatar.yaml` (docs/design.md §10): what a file nobody vouched for may set.

A cloned repository carries its own `.avatar.yaml`, and the next `avatar` in it would run
whatever that file names. So until the user trusts the file (`avatar trust`, which records
the SHA-256 of its bytes; `--trust` for one run), the keys below are ignored; every other key
applies at once. A changed file is untrusted again. The user's own config file is always
trusted, and so is a project file that *is* the user's file.

Keys ignored in a file not trusted, and why:

- `providers.<name>.command`, `.executable`, `.args`: the program avatar runs as the agent and
  its arguments (`sh -c …`, `--dangerously-skip-permissions`, an agent's own config file);
- `providers.<name>.env`: the agent's environment — `NODE_OPTIONS=--require x.js` or
  `LD_PRELOAD` run code, `ANTHROPIC_BASE_URL` sends the user's key and code elsewhere;
- `providers.<name>.permission_mode`: the agent's own mode (`bypassPermissions` asks nothing);
- `providers.<name>.quirks`: named behaviours that change how the agent is started (its
  executable, its environment);
- `providers.<name>.state_dirs`, `.state_protected`, `.state_projects`, `.walled_mode`: where
  the sandbox lets the agent write outside the project (`~` would be the whole home), what of
  it stays read-only, and the agent's own mode inside the walls;
- `providers.<name>.login_command`, `.install_hint`, `.auth_hint`: avatar prints them as the
  command that fixes a provider; a repository must not choose what avatar tells you to run;
- `providers.<name>.model_from`: files avatar reads (a key of one is shown as the model);
  a repository must not choose which of your files avatar reads;
- `providers.<name>.env_read`: the variables the server's warm agents are keyed on; a
  repository must not make an agent started with one environment's keys serve another's;
- `providers.<name>.project_config`, `.untrusted_args`, `.untrusted_env`, `.untrusted_meta`:
  which of the repository's own agent config files are held back until trusted, and how the
  agent is told to start without them; a repository must not release its own files;
- `mcp_servers.<name>`: each is a program every agent starts, or a URL it sends tool calls and
  the configured headers to;
- `models[i].base_url`, `models[i].api_key_env`: where the native agent sends the
  conversation, and which of the user's variables it sends there as the key (a model the user's
  file defines keeps the user's values);
- `scope` and `presets.<name>.scope` where they widen what agents may touch: `read`/`write`
  patterns not within the trusted ones, `deny` patterns removed (those added apply),
  `shell_commands` wider than the trusted list (an empty list allows every command),
  `allow_protected` and `read_outside` entries not already given, a `sandbox` less strict than
  the trusted one (`agents` > `commands` > `off`), `sockets` not already opened, a `network`
  more open than the trusted one (`off` < `loopback` < `on`);
- `permission` and `presets.<name>.permission` more permissive than the trusted value
  (`deny` < `ask` < `allow`): a repository may make avatar ask more, never less;
- any key this module does not classify (a key added to the config later is ignored in an
  untrusted file until it is classified here).

Harmless, applied at once: `provider`, `model`, `default_model`, `preset` (choosing one),
`system_prompt`, `handoff_share`, `notify` (how the REPL rings: avatar's own words), `server`
(how long the server keeps a session loaded); a provider's `model`, `session`, `transport`,
`auth_method`, `package`, `login_env`, `login_files` and the native compaction keys; a
preset's `provider`, `model`, `system_prompt`; a model's id, api, context window and cost.
None of them starts a program or widens what an agent may touch: a provider or preset chosen
by name is one the shipped table or the trusted file defines, or one whose commands were
ignored.

This module works on the plain mappings a config file holds; `avatar.engine.config_layers` applies
it. The store of trusted files is `trust.json` in avatar's data dir: each file's absolute
real path and the SHA-256 of the bytes trusted.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from avatar.core import quickjson
from avatar.core.fileio import atomic_write
from avatar.core.ids import sha256_hex
from avatar.policy.patterns import is_whole_project, pattern_matches

#: Top-level keys that neither run nor widen anything.
HARMLESS = frozenset(
    {
        "provider",
        "model",
        "default_model",
        "preset",
        "system_prompt",
        "handoff_share",
        "notify",
        "server",
    }
)
#: `providers.<name>` keys that neither run nor widen anything.
PROVIDER_HARMLESS = frozenset(
    {
        "model",
        "session",
        "transport",
        "auth_method",
        "package",
        "login_env",
        "login_files",
        "auto_compact",
        "compact_threshold",
        "compaction",
    }
)
#: `presets.<name>` keys that neither run nor widen anything.
PRESET_HARMLESS = frozenset({"provider", "model", "system_prompt"})
#: `models[i]` keys that say where the conversation and the key go.
MODEL_ENDPOINT = ("base_url", "api_key_env")

# What the module docstring says is ignored, as data: with the harmless keys above, every key of
# the config schema (tests/core/test_trust.py checks that none is left out).
#: Top-level keys applied only as far as they narrow what the trusted layers allow.
NARROWED = frozenset({"permission", "scope"})
#: Top-level keys whose entries are judged one by one (below).
ENTRIES = frozenset({"providers", "models", "presets"})
#: Top-level keys ignored whole.
GUARDED = frozenset({"mcp_servers"})
#: `providers.<name>` keys ignored (unless the user's file gives the same value).
PROVIDER_GUARDED = frozenset(
    {
        "command",
        "executable",
        "args",
        "env",
        "permission_mode",
        "quirks",
        "login_command",
        "install_hint",
        "auth_hint",
        "state_dirs",
        "state_protected",
        "state_projects",
        "walled_mode",
        "model_from",
        "env_read",
        "project_config",
        "untrusted_args",
        "untrusted_env",
        "untrusted_meta",
    }
)
#: `presets.<name>` keys applied only as far as they narrow.
PRESET_NARROWED = frozenset({"permission", "scope"})
#: `models[i]` keys that change nothing but the model's name, size and price.
MODEL_HARMLESS = frozenset({"id", "api", "context_window", "max_output", "cost", "provider"})

_PERMISSIVE = {"deny": 0, "ask": 1, "allow": 2}
_SANDBOX_OPEN = {"agents": 0, "commands": 1, "off": 2}
_NETS = ("off", "loopback", "on")  # scope.network, least open first

Ignored = dict[str, Any]
"""The keys a restriction dropped (dotted, as config errors name them) and their values."""


def restrict(
    project: Mapping[str, Any], base: Mapping[str, Any], scope_defaults: Mapping[str, Any]
) -> tuple[dict[str, Any], Ignored]:
    """The project layer `project` as an untrusted file may set it, and what was dropped.

    `base` is the configuration of the trusted layers (built-in defaults and the user's file,
    merged: every top-level key present); `scope_defaults` is what an unset `scope` key means.
    """
    out: dict[str, Any] = {}
    ignored: Ignored = {}
    for key, value in project.items():
        if key in HARMLESS:
            out[key] = value
        elif key == "permission":
            _keep_if(out, ignored, key, value, _narrower_permission(value, base["permission"]))
        elif key == "scope":
            out[key] = _restrict_scope(value, base["scope"], ignored)
        elif key == "providers":
            out[key] = _restrict_providers(value, base.get("providers") or {}, ignored)
        elif key == "models":
            out[key] = _restrict_models(value, base.get("models") or [], ignored)
        elif key == "presets":
            out[key] = _restrict_presets(value, base, scope_defaults, ignored)
        else:  # mcp_servers, and anything not classified
            _drop(ignored, key, value)
    return out, ignored


def _drop(ignored: Ignored, key: str, value: Any) -> None:
    if key == "mcp_servers" and isinstance(value, Mapping):
        ignored.update({f"{key}.{name}": entry for name, entry in value.items()})
    elif value is not None:
        ignored[key] = value


def _keep_if(out: dict[str, Any], ignored: Ignored, key: str, value: Any, ok: bool) -> None:
    if ok:
        out[key] = value
    else:
        ignored[key] = value


def _narrower_permission(value: Any, trusted: Any) -> bool:
    return bool(_PERMISSIVE.get(value, 9) <= _PERMISSIVE.get(trusted, 0))


# -- scope ------------------------------------------------------------------------------------


def _within(patterns: Sequence[str], trusted: Sequence[str]) -> bool:
    """Does every pattern of `patterns` select only what `trusted` selects? Conservative: a
    glob is within only a whole-project pattern or itself."""
    if any(is_whole_project(t) for t in trusted):
        return True
    for p in patterns:
        text = p.strip()
        if not text or text in (t.strip() for t in trusted):
            continue
        path = text.removeprefix("./").lstrip("/")
        anchored = text.startswith(("/", "./")) or "/" in text.rstrip("/")
        if anchored and not set("*?[\\") & set(path) and path.strip("/"):
            is_dir = path.endswith("/")
            if any(pattern_matches(t, path.rstrip("/"), is_dir) for t in trusted):
                continue
        return False
    return True


def _narrower_shell(value: Sequence[str], trusted: Sequence[str]) -> bool:
    if not trusted:  # any command: every list narrows it (an empty one allows the same)
        return True
    return bool(value) and set(value) <= set(trusted)


#: `scope` key → does the project's value narrow (or keep) the trusted one?
SCOPE_RULES: dict[str, Callable[[Any, Any], bool]] = {
    "read": _within,
    "write": _within,
    "deny": lambda value, trusted: set(trusted) <= set(value),
    "shell_commands": _narrower_shell,
    "allow_protected": lambda value, trusted: set(value) <= set(trusted),
    "read_outside": lambda value, trusted: set(value) <= set(trusted),
    "sandbox": lambda value, trusted: _SANDBOX_OPEN.get(value, 9) <= _SANDBOX_OPEN[trusted],
    "sockets": lambda value, trusted: set(value) <= set(trusted),
    "network": lambda value, trusted: _NETS.index(value) <= _NETS.index(trusted),
}


def _restrict_scope(value: Any, trusted: Mapping[str, Any], ignored: Ignored) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, given in (value or {}).items():
        rule = SCOPE_RULES.get(key)
        if rule is not None and rule(given, trusted[key]):
            out[key] = given
        elif key == "deny":
            # The patterns it adds narrow and apply; the trusted ones it left out stay.
            out[key] = [*trusted[key], *(p for p in given if p not in trusted[key])]
            ignored["scope.deny"] = given
        else:
            ignored[f"scope.{key}"] = given
    return out


def _widens_scope(effective: Mapping[str, Any], trusted: Mapping[str, Any]) -> bool:
    return any(not rule(effective[k], trusted[k]) for k, rule in SCOPE_RULES.items())


# -- providers, models, presets ----------------------------------------------------------------


def _restrict_providers(value: Any, trusted: Mapping[str, Any], ignored: Ignored) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, entry in (value or {}).items():
        mine = trusted.get(name) or {}
        kept: dict[str, Any] = {}
        for key, given in (entry or {}).items():
            # `env: {}` adds nothing, and a value the user's file gives already changes nothing.
            idle = given is None or given == mine.get(key) or (key == "env" and not given)
            if key in PROVIDER_HARMLESS or idle:
                kept[key] = given
            else:
                ignored[f"providers.{name}.{key}"] = given
        out[name] = kept
    return out


def _restrict_models(value: Any, trusted: Sequence[Any], ignored: Ignored) -> list[Any]:
    mine = {m.get("id"): m for m in trusted if isinstance(m, Mapping)}
    out: list[Any] = []
    for i, entry in enumerate(value or []):
        kept = dict(entry)
        own = mine.get(kept.get("id")) or {}
        for key in MODEL_ENDPOINT:
            if key in kept and kept[key] != own.get(key):
                ignored[f"models.{i}.{key}"] = kept.pop(key)
            if key in own:
                kept[key] = own[key]
        out.append(kept)
    return out


def _restrict_presets(
    value: Any, base: Mapping[str, Any], scope_defaults: Mapping[str, Any], ignored: Ignored
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, entry in (value or {}).items():
        mine = (base.get("presets") or {}).get(name) or {}
        kept: dict[str, Any] = {}
        for key, given in (entry or {}).items():
            if key in PRESET_HARMLESS or given is None:
                ok = True
            elif key == "permission":
                ok = _narrower_permission(given, mine.get("permission") or base["permission"])
            elif key == "scope":
                # A preset's scope replaces the whole scope when chosen: compared whole,
                # against what the trusted layers give (the user's preset's, else theirs).
                own = mine.get("scope")
                ceiling = {**scope_defaults, **own} if own else base["scope"]
                ok = not _widens_scope({**scope_defaults, **(own or {}), **given}, ceiling)
            else:
                ok = False
            if ok:
                kept[key] = given
            else:
                ignored[f"presets.{name}.{key}"] = given
        out[name] = kept
    return out


# -- the store --------------------------------------------------------------------------------

TrustState = Literal["trusted", "changed", "untrusted"]


class TrustStore:
    """The project files the user trusts: `trust.json` in avatar's data dir, mapping each
    file's absolute real path to the SHA-256 of the bytes trusted. The same store holds the
    project's `.avatar.yaml` and the agents' own project config (`avatar.policy.agent_config`):
    one record per file, in the form the store has always had."""

    def __init__(self, home: Path) -> None:
        self.path = Path(home) / "trust.json"

    @staticmethod
    def digest(data: bytes) -> str:
        """The SHA-256 of a file's bytes, in hex."""
        return sha256_hex(data)

    def _files(self) -> dict[str, Any]:
        try:
            data = quickjson.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}  # none yet, or damaged: nothing is trusted
        files = data.get("files") if isinstance(data, dict) else None
        return files if isinstance(files, dict) else {}

    def state(self, real: Path, data: bytes) -> TrustState:
        """`trusted` when these bytes were trusted at this path, `changed` when other bytes
        were, else `untrusted`."""
        return self.judge(real, self.digest(data))

    def records(self) -> dict[str, Any]:
        """Every record, read once: real path → {sha256, trusted} (for `judge` of many)."""
        return self._files()

    def judge(
        self, real: Path, digest: str | None, records: Mapping[str, Any] | None = None
    ) -> TrustState:
        """`state` for bytes known by their digest (against `records` when given, else the
        store as it is now); None (bytes that cannot be read whole) is never trusted."""
        entry = (self._files() if records is None else records).get(os.fspath(real))
        if not isinstance(entry, dict):
            return "untrusted"
        return "trusted" if digest is not None and entry.get("sha256") == digest else "changed"

    def trust(self, real: Path, data: bytes) -> None:
        """Trust these bytes at this path (replacing what was trusted there)."""
        self.trust_digests([(real, self.digest(data))])

    def trust_digests(self, files: Sequence[tuple[Path, str]]) -> None:
        """Trust each path's bytes, known by their digest, in one write."""
        from datetime import UTC, datetime  # (only `avatar trust` writes)

        records = self._files()
        when = datetime.now(UTC).isoformat(timespec="seconds")
        for real, digest in files:
            records[os.fspath(real)] = {"sha256": digest, "trusted": when}
        self._write(records)

    def revoke(self, real: Path) -> bool:
        """Forget the path; False when it was not trusted."""
        return bool(self.revoke_all([real]))

    def revoke_all(self, paths: Sequence[Path]) -> list[Path]:
        """Forget every path; the ones that were trusted (nothing is written when none was)."""
        records = self._files()
        gone = [p for p in paths if records.pop(os.fspath(p), None) is not None]
        if gone:
            self._write(records)
        return gone

    def _write(self, files: dict[str, Any]) -> None:
        import json  # (only `avatar trust` writes: a one-shot reads the store before its agent)

        text = json.dumps({"v": 1, "files": files}, indent=1, ensure_ascii=False, sort_keys=True)
        atomic_write(self.path, text.encode() + b"\n")
