"""The permission menu's answers and modes (Shift-Tab: ask, accept edits, plan). Answers as typed:
`y`, `a` or `n` alone (or the words they start), and any other text is "no, and tell the agent
this" (`Refusal`), as in Claude Code.

A single key answers at once when nothing follows it quickly (`SETTLE` seconds): `no, use tabs`
typed at speed is a refusal with a reason, not a deny followed by a prompt `o, use tabs`. A
word finished after its key already answered (`yes⏎` typed slowly) completes that answer and
is not sent as a prompt (`completes`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from avatar.policy.permissions import Refusal

if TYPE_CHECKING:
    from avatar.core.diffs import Edit
    from avatar.core.events import PermissionRequested
    from avatar.policy.permissions import Answer

ANSWERS: dict[str, Answer] = {
    "y": "allow",
    "yes": "allow",
    "a": "always",
    "always": "always",
    "n": "deny",
    "no": "deny",
}
#: The keys that answer by themselves.
KEYS = ("y", "a", "n")
#: How long a single key waits for more typing before it answers (seconds).
SETTLE = 0.35
#: How long after a single key the rest of its word is still taken as part of it (seconds).
FINISH = 5.0
#: The answers, in one line that fits a 60-column terminal.
OPTIONS = "  [y] yes  [a] always  [n] no  or type what to do instead"
PROMPT = "allow? [y/a/n, or say what instead] › "
#: The permission modes Shift-Tab cycles through (plan where the agent has a plan mode).
MODES = ("ask", "accept edits", "plan")
PLAN = "plan"
MODE_HELP = {
    "ask": "every action is asked",
    "accept edits": "file edits are allowed without asking, the rest is asked",
    "plan": "the agent reads and plans, and changes nothing",
}
#: What the agent is told when it tries to change something in plan mode.
PLAN_REFUSAL = Refusal("plan mode is on: change nothing, answer with the plan")
#: The kinds of action plan mode still asks about: those that change nothing, and the agent
#: leaving plan mode to carry the plan out (claude-acp's ExitPlanMode), which the user decides.
PLAN_ASKED = ("read", "search", "think", "fetch", "switch_mode")


def next_mode(mode: str, can_plan: bool) -> str:
    """The mode after `mode` (Shift-Tab); plan only where the agent has one."""
    at = MODES.index(mode)
    for step in range(1, len(MODES) + 1):
        following = MODES[(at + step) % len(MODES)]
        if following != PLAN or can_plan:
            return following
    return mode


def read_answer(text: str) -> Answer | Refusal | None:
    """The answer typed as `text` (a line); None for an empty line (no answer yet)."""
    said = text.strip()
    if not said:
        return None
    return ANSWERS.get(said.lower()) or Refusal(said)


def completes(key: str, line: str) -> bool:
    """True when `line` is the rest of the answer word that `key` began (`es` after `y`)."""
    word = (key + line.strip()).lower()
    return len(word) > 1 and ANSWERS.get(word) == ANSWERS.get(key)


#: What an "always" answer allows, by the request's kind (the policy remembers kinds).
KIND_NAMES = {
    "edit": "file edits",
    "delete": "file deletions",
    "move": "file moves",
    "execute": "commands",
    "read": "file reads",
    "search": "searches",
    "fetch": "web fetches",
}


def said(answer: Answer | Refusal, request: PermissionRequested, edit: Edit | None) -> str:
    """The menu's last line: what was answered, and what it covers ("allowed for this
    session: file edits, this one to calc.py")."""
    if isinstance(answer, Refusal):
        return f"  → denied; the agent is told: {answer.reason}"
    files = ", ".join(dict.fromkeys(c.path for c in edit.changes)) if edit else ""
    what = f"an edit to {files}" if files else request.title
    if answer == "deny":
        return f"  → denied: {what}"
    if answer == "always":
        kind = KIND_NAMES.get(request.kind or "", f"every {request.kind or request.title!r}")
        return f"  → allowed for this session, without asking again: {kind}" + (
            f" (this one: {files})" if files else ""
        )
    return f"  → allowed once: {what}"
