"""`avatar mcp [--allow-prompt [--permission …]] [--install claude|codex|gemini [--yes]]`.

Without `--install`: the MCP server on stdio (`avatar.cli.mcp.protocol`) with the library's
tools (`library_tools`), and with `--allow-prompt` the tools that ask another agent
(`asking`). Nothing but the protocol goes to stdout; stderr carries avatar's notices. With
`--install AGENT`: the entry that starts it in that agent's user config (`install`).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from avatar.core.errors import UsageError
from avatar.core.version import __version__

if TYPE_CHECKING:
    from avatar.cli.state import AppState

#: The agents whose user config `--install` writes.
AGENTS = ("claude", "codex", "gemini")

INSTRUCTIONS = (
    "avatar's library of coding-agent sessions: every session of Claude Code, Codex, Gemini "
    "CLI, avatar's native agent and other ACP agents, in this project (or every directory). "
    "search_sessions finds what any agent said or did; list_sessions lists them; "
    "show_session reads one; handoff gives the structured summary of one, to take over its "
    "work. Secrets are masked in everything returned."
)


@click.command("mcp")
@click.option(
    "--allow-prompt",
    is_flag=True,
    help="Add open_session and prompt: the caller may ask other agents (inside avatar's walls).",
)
@click.option(
    "--permission",
    type=click.Choice(["ask", "allow", "deny"]),
    help="With --allow-prompt: answer to actions that change things (ask denies: nobody can "
    "answer).",
)
@click.option(
    "--install",
    "agent",
    type=click.Choice(AGENTS),
    help="Add `avatar mcp` (with these flags) to that agent's user config, after asking.",
)
@click.option("--yes", is_flag=True, help="With --install: write without asking.")
@click.pass_obj
def mcp_command(
    state: AppState, allow_prompt: bool, permission: str | None, agent: str | None, yes: bool
) -> int:
    """The session library as MCP tools on stdio, for other agents."""
    if permission is not None and not allow_prompt:
        raise UsageError("--permission goes with --allow-prompt (the library tools only read)")
    if yes and agent is None:
        raise UsageError("--yes goes with --install")
    if agent is not None:
        return install(state, agent, allow_prompt, permission, yes)
    return serve(state, allow_prompt, permission)


def serve(state: AppState, allow_prompt: bool, permission: str | None) -> int:
    """Answer MCP on stdin and stdout until stdin ends."""
    from avatar.cli.mcp.library_tools import Reader, library_tools
    from avatar.cli.mcp.protocol import Server
    from avatar.cli.startup import settled

    reader = Reader(state)
    tools = library_tools(reader)
    closing = None
    if allow_prompt:
        from avatar.cli.mcp.asking import Asker

        asker = Asker(state, permission)
        tools += asker.tools()
        closing = asker.close
    server = Server("avatar", __version__, tools, INSTRUCTIONS, on_close=closing)
    settled()  # (a server lives long: the collector runs again from here)
    try:
        server.serve()
    finally:
        reader.close()
    return 0


def install(
    state: AppState, agent: str, allow_prompt: bool, permission: str | None, yes: bool
) -> int:
    """Write the `avatar mcp` entry into `agent`'s user config, after showing it and asking."""
    import os

    from avatar.cli.mcp import install as installing

    argv = [*installing.command_line(), "mcp"]
    argv += ["--allow-prompt"] if allow_prompt else []
    argv += ["--permission", permission] if permission else []
    dirs = [d for spec in state.engine().registry.specs() for d in spec.state_dirs]
    env = installing.locating(os.environ, dirs)
    path = installing.config_path(agent, os.environ)
    planned = installing.plan(agent, path, argv, env, allow_prompt)
    if not planned.changes:
        sys.stderr.write(f"{agent}'s user config {path} already has this avatar entry\n")
        return 0
    if not (yes or sys.stdin.isatty()):
        raise UsageError(f"refusing to write {path} without confirmation; pass --yes")
    sys.stderr.write(planned.question() + "\n")
    if not yes and not click.confirm("write it?", err=True):
        return 1
    planned.write()
    sys.stderr.write(f"wrote the avatar entry to {path}\n")
    return 0
