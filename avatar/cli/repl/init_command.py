"""`/init`, as in Claude Code, Codex and Gemini CLI: the agent studies the project and writes
(or brings up to date) the instructions file it reads at the start of each session.

Where the agent has its own init, that runs: Claude Code and claude-agent-acp (`own_init` in
`avatar/providers/providers.toml`, which says so before they have listed their commands), and
an ACP agent that lists `init`. Elsewhere the agent is asked in a prompt naming its file
(`instructions` there: AGENTS.md unless the agent reads another): native, codex-acp (which lists
no init), and Gemini CLI, whose /init over ACP only answers with the prompt it would send.
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
    own = spec.own_init if spec.own_init is not None else "init" in repl.agent_commands()
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
