"""The legs of a handoff chain: the turns a handoff carries, each with the session it was said
in, and how they are read back out of a handed-over block (A → B → C: the block C received
holds B's turns and, before them, A's; each leg keeps its name on the way on).

In a rendered handoff the turns are lines opening with `USER: `, `ASSISTANT: ` or
`[tool result…] `, one blank line apart; when they come from more than one session, each
session's run of turns opens with a leg line `=== on <provider> session <id> ===`. Turns
before any leg line are the source session's own."""

from __future__ import annotations

import re
from dataclasses import dataclass

from avatar.sessions.handoff_marker import END, START

#: (provider, session id) of the session a turn was said in.
Leg = tuple[str, str]

_SOURCE = re.compile(r"^=== context handed over by avatar from (\S+) session (\S+?)(?:,.*)? ===$")
_LEG = re.compile(r"^=== on (\S+) session (\S+) ===$")
_TURN = re.compile(r"^(?:USER: |ASSISTANT: |\[tool result(?: \(error\))?\] )")
_LEFT_OUT = re.compile(r"^\[… (\d+) earlier messages left out …\]$")
TURNS_HEADING = "## Most recent turns, verbatim"


@dataclass(frozen=True)
class Turn:
    """One turn as a handoff shows it (`USER: …`, `ASSISTANT: …`, `[tool result] …`), and
    the earlier session it was said in (None: the session being handed over itself)."""

    line: str
    leg: Leg | None = None

    @property
    def role(self) -> str:
        """`user` for the user's words; `assistant` for the agent's (and tool results)."""
        return "user" if self.line.startswith("USER: ") else "assistant"

    @property
    def text(self) -> str:
        """The turn without its `USER: ` / `ASSISTANT: ` label."""
        for label in ("USER: ", "ASSISTANT: "):
            if self.line.startswith(label):
                return self.line[len(label) :]
        return self.line


def leg_line(leg: Leg) -> str:
    """The line that opens a run of turns said in session `leg`."""
    return f"=== on {leg[0]} session {leg[1]} ==="


def turn_lines(turns: list[Turn], own: Leg) -> list[str]:
    """`turns` as lines (the session `own` hands them over); where they come from more than
    one session, each run of a session's turns under its leg line."""
    if all(t.leg in (None, own) for t in turns):
        return [t.line for t in turns]
    out: list[str] = []
    leg: Leg | None = None
    for turn in turns:
        if (turn.leg or own) != leg:
            leg = turn.leg or own
            out.append(leg_line(leg))
        out.append(turn.line)
    return out


def as_block(source: Leg, turns: list[Turn]) -> str:
    """`turns` as a handed-over block from session `source`: what an imported session
    holds of its source's conversation, read back as the legs it was (`block_turns`)."""
    body = "\n\n".join(turn_lines(turns, source))
    return f"{START} from {source[0]} session {source[1]} ===\n\n{TURNS_HEADING}\n\n{body}\n\n{END}"


def block_source(block: str) -> Leg | None:
    """(provider, id) of the session a handed-over block came from."""
    match = _SOURCE.match(block.split("\n", 1)[0])
    return (match.group(1), match.group(2)) if match else None


@dataclass
class BlockTurns:
    """The turns a handed-over block carried, oldest first, and how many older ones it had
    left out already."""

    turns: list[Turn]
    left_out: int = 0


def block_turns(block: str) -> BlockTurns:
    """The turns of a handed-over block, each with the session it was said in (the block's
    source when no leg line names another)."""
    at = block.find("\n" + TURNS_HEADING)
    if at < 0:
        return BlockTurns([])
    body = block[at + len(TURNS_HEADING) + 1 :]
    if body.rstrip().endswith(END):
        body = body.rstrip()[: -len(END)]
    leg = block_source(block)
    out = BlockTurns([])
    current: list[str] | None = None

    def close() -> None:
        if current is not None:
            out.turns.append(Turn("\n".join(current).rstrip(), leg))

    for line in body.split("\n"):
        if match := _LEG.match(line):
            close()
            current, leg = None, (match.group(1), match.group(2))
        elif match := _LEFT_OUT.match(line):
            close()
            current = None
            out.left_out += int(match.group(1))
        elif _TURN.match(line):
            close()
            current = [line]
        elif current is not None:
            current.append(line)
    close()
    return out
