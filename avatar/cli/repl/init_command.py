"""`/init`, as in Claude Code, Codex and Gemini CLI: the agent studies the project and writes
(or brings up to date) the instructions file it reads at the start of each session.

Where the agent has its own init (claude, claude-acp and gemini list `init` among their
commands; the provider data says so before they have listed any), that runs; elsewhere (native,
codex-acp, other ACP agents) the agent is asked to do it in a prompt naming its file
(`instructions` in `avatar/providers/providers.toml`: AGENTS.md unless the agent reads another).
Which of the two runs is said in one line first."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from avatar.cli.repl.host import ReplHost

#: What the agent is asked when it has no init of its own; `{file}`: its instructions file.
PROMPT = (
    "Study this project (its layout, its build, test and lint commands, its conventions) and "
    "write the instructions file {file} at the project's root for the coding agents that work "
    "on it; if {file} exists, bring it up to date and keep what is still true. Make it short "
    "and specific to this project: what it is, how to build, test and run it, how the code is "
    "organised, and the rules to follow when changing it."
)


async def init(repl: ReplHost, args: list[str]) -> bool:
    """Run `/init` on the current provider (see the module docstring)."""
    if args:
        repl.say("usage: /init (the agent writes the instructions file it reads)")
        return False
    provider = repl.engine.chosen_provider()
    spec = repl.engine.registry.spec(provider)
    offered = repl.agent_commands()
    own = "init" in offered if offered else spec.own_init
    file = spec.instructions
    if own:
        repl.say(
            f"(/init: {provider}'s own /init, which studies the project and writes {file})", "dim"
        )
        await repl.run_turn("/init")
    else:
        repl.say(
            f"(/init: asking {provider} to study the project and write or update {file})", "dim"
        )
        await repl.run_turn(PROMPT.format(file=file))
    return False
