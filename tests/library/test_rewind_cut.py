"""Where a turn begins in a conversation (docs/design.md §12): the turns avatar recorded are found
among the prompts a store kept by their first words, from the last back, so context an agent
inserted, a prompt opened by handed-over context, a turn run outside avatar and a turn the agent
never kept all leave the cut where the user's turn began."""

from __future__ import annotations

from avatar.library.checkpoints.turns import Turn, cut_before
from avatar.sessions.handoff_marker import END, START
from avatar.sessions.types import TranscriptMessage


def _msg(role: str, text: str) -> TranscriptMessage:
    return TranscriptMessage(role=role, text=text)  # type: ignore[arg-type]


def _turns(*prompts: str) -> list[Turn]:
    return [Turn(n, prompt=p) for n, p in enumerate(prompts, 1)]


def test_each_turn_cuts_before_its_prompt() -> None:
    messages = [
        _msg("user", "<session_context>the agent's own context</session_context>"),
        _msg("user", f"fix the bug\n\n{START} from codex ===\nearlier turns\n{END}"),
        _msg("assistant", "looking"),
        _msg("tool", "output"),
        _msg("assistant", "fixed"),
        _msg("user", "typed in the agent's own terminal, outside avatar"),
        _msg("assistant", "ok"),
        _msg("user", "now  the\ntests"),
        _msg("assistant", "done"),
    ]
    turns = _turns("fix the bug", "now the tests")
    assert cut_before(messages, turns, 1) == 1
    assert cut_before(messages, turns, 2) == 7


def test_a_turn_the_agent_did_not_keep_is_passed_over() -> None:
    messages = [_msg("user", "first"), _msg("assistant", "a"), _msg("user", "third")]
    turns = _turns("first", "second, which failed before the agent kept it", "third")
    assert cut_before(messages, turns, 3) == 2
    assert cut_before(messages, turns, 1) == 0
    assert cut_before(messages, turns, 2) is None


def test_the_same_words_twice_map_to_their_own_turns() -> None:
    messages = [_msg("user", "go on"), _msg("assistant", "1"), _msg("user", "go on")]
    turns = _turns("go on", "go on")
    assert (cut_before(messages, turns, 1), cut_before(messages, turns, 2)) == (0, 2)
