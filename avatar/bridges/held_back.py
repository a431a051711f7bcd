"""How an agent starts without the project config it may not use yet (docs/design.md §10).

A repository's own agent config (`project_config` in the provider data: Claude Code's project
settings and `.mcp.json`, codex's `.codex/`, Gemini CLI's `.gemini/`, …) can run programs as the
agent starts. Until `avatar trust` recorded each file's hash (`avatar.policy.agent_config`), the
agent starts without the files held back, by its own switch where it has one (`untrusted_args`,
`untrusted_env`, `untrusted_meta`: Claude Code's `--setting-sources user --strict-mcp-config`,
the same options through claude-agent-acp, Gemini CLI's untrusted-folder mode), else under an
empty, readable stand-in over each of them in its walls; where the walls cannot cover them (the
agent outside them, or no mount namespaces here), the agent does not start, and one line says
why and what trusts them. The files are looked for again at each start, and before an ACP agent
opens each session (`Holding.holds_back`): such agents read that config per session.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from avatar.core.errors import ProviderError
from avatar.policy.agent_config import HeldBack, project_files
from avatar.policy.trust import TrustStore

if TYPE_CHECKING:
    from avatar.policy.sandbox import Sandbox
    from avatar.providers.registry import ProviderSpec


@dataclass(frozen=True)
class Holding:
    """What one start of an agent holds back, and how: what its command, environment and ACP
    session requests get, and what stand-ins its walls put over (`covered`)."""

    held: HeldBack = field(default_factory=HeldBack)
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)
    covered: tuple[Path, ...] = ()

    def notice(self, provider: str, cwd: Path) -> str | None:
        """The one line saying what was held back (None: nothing was)."""
        return self.held.notice(provider, cwd) if self.held else None

    def holds_back(self, now: Holding) -> bool:
        """Does an agent started with this holding already hold back what `now` (computed
        later: a file appeared or changed since) does? With its switch on, all of its project
        config is held back; stand-ins cover only the paths they were put over."""
        if not now.held:
            return True
        if not self.held:
            return False
        return set(now.covered) <= set(self.covered)

    def check(self, provider: str, cwd: Path, walls: Sandbox | None, mode: str) -> None:
        """A ProviderError when stand-ins are needed and `walls` (`scope.sandbox` `mode`)
        cannot put them in place: the agent must not start with files it may not use."""
        if not self.covered:
            return
        from avatar.policy import sandbox

        if walls is not None and sandbox.support().namespaces:
            return
        if walls is None:
            why = f"it runs outside the walls (scope.sandbox: {mode})"
        elif not sandbox.support().walls:
            why = "the kernel offers no Landlock here"
        else:
            why = "the kernel gives avatar no mount namespaces here"
        raise ProviderError(
            f"{provider} did not start: the project's agent config {self.held.names(cwd)} is "
            f"not trusted and can run programs, and {provider} has no switch to ignore it while "
            f"{why}; run `avatar trust` to use it (or --trust for this run)"
        )


def holding(
    spec: ProviderSpec,
    cwd: Path,
    store_home: Path,
    env: Mapping[str, str],
    *,
    trusted_run: bool = False,
) -> Holding:
    """How `spec`'s agent starts in `cwd`: what of its project config is held back (against
    the trust store in `store_home`; nothing under `trusted_run`, `--trust`) and how."""
    if trusted_run or not spec.project_config:
        return Holding()
    user_home = Path(env["HOME"]) if env.get("HOME") else None
    files = project_files(
        cwd, spec.project_config, TrustStore(store_home), user_home, lambda: own_state(spec, env)
    )
    if not any(f.held for f in files):
        return Holding()
    if spec.untrusted_args or spec.untrusted_env or spec.untrusted_meta:
        # The switch holds back all of the agent's project config, the trusted files too.
        whole = HeldBack(tuple(files))
        return Holding(
            whole, spec.untrusted_args, dict(spec.untrusted_env), dict(spec.untrusted_meta)
        )
    held = HeldBack(tuple(f for f in files if f.held))
    return Holding(held, covered=tuple(held.covered))


def own_state(spec: ProviderSpec, env: Mapping[str, str]) -> list[Path]:
    """The agent's own state paths (`state_dirs`), as far as they are set: never its project
    config, even where they lie in the project."""
    from avatar.policy.readable import expand

    home = env.get("HOME")
    found = (expand(e, env) for e in spec.state_dirs)
    # (never `/` nor the home directory: a variable set empty would make it one)
    return [p for p in found if p is not None and p.parent != p and str(p) != home]
