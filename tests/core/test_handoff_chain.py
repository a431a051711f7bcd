"""A handoff chain keeps every leg: A → B → C hands C A's facts and B's turns as B's, fitted as
one budget with the newest first; failed commands go on down the chain until a run passes; a
return to A carries B's and C's turns but none of A's own; `--import` after a handoff writes
the earlier legs as turns."""

from __future__ import annotations

from avatar.handoff import build_handoff, seed_prompt
from avatar.handoff.importing import flattened
from avatar.handoff.window import estimate_tokens
from avatar.policy.secrets import SecretDetector
from avatar.sessions.types import SessionInfo, ToolCall, Transcript, TranscriptMessage

GOAL = "ALPHA: port the parser to Rust"


def user(text: str) -> TranscriptMessage:
    return TranscriptMessage(role="user", text=text)


def said(text: str = "", *calls: ToolCall) -> TranscriptMessage:
    return TranscriptMessage(role="assistant", text=text, tool_calls=list(calls))


def result(call_id: str, text: str, *, error: bool = False) -> TranscriptMessage:
    return TranscriptMessage(role="tool", text=text, tool_call_id=call_id, is_error=error)


def session(provider: str, sid: str, *msgs: TranscriptMessage) -> Transcript:
    return Transcript(info=SessionInfo(id=sid, provider=provider), messages=list(msgs))


def pytest_run(call_id: str) -> ToolCall:
    return ToolCall(id=call_id, name="run_shell_command", input={"command": "pytest -q"})


def chain() -> tuple[str, str]:
    """A (native) → B (codex) → C (claude): the handoffs B and C received."""
    a = session(
        "native",
        "a-1",
        user(GOAL),
        said("", ToolCall(name="write", input={"path": "src/lib.rs", "content": "x"})),
        said("", pytest_run("t1")),
        result("t1", "E   assert 1 == 2\n1 failed", error=True),
        said("Wrote src/lib.rs; one test fails."),
    )
    to_b = build_handoff(a)
    b = session("codex", "b-1", user(seed_prompt(to_b, "BETA: keep it small")), said("Kept."))
    to_c = build_handoff(b)
    return to_b, to_c


def test_the_third_agent_gets_the_first_one_s_facts_and_the_second_one_s_turns() -> None:
    _, to_c = chain()
    assert f"## Goal\n{GOAL}" in to_c and "## Files changed\n- src/lib.rs" in to_c
    turns = to_c.split("## Most recent turns, verbatim", 1)[1]
    on_a = turns.index("=== on native session a-1 ===")
    on_b = turns.index("=== on codex session b-1 ===")
    assert on_a < turns.index(f"USER: {GOAL}") < on_b  # A's turns, as A's
    assert on_b < turns.index("USER: BETA: keep it small") < turns.index("ASSISTANT: Kept.")
    assert "left out here" not in to_c and to_c.count("=== context handed over") == 1


def test_a_failed_command_goes_on_down_the_chain_until_a_run_passes() -> None:
    _, to_c = chain()
    assert "## Commands that failed\n- `pytest -q`:\n  E   assert 1 == 2\n  1 failed" in to_c
    c = session(
        "claude",
        "c-1",
        user(seed_prompt(to_c, "GAMMA: fix it")),
        said("", pytest_run("t2")),
        result("t2", "3 passed"),
    )
    assert "Commands that failed" not in build_handoff(c)
    still = session("claude", "c-2", user(seed_prompt(to_c, "GAMMA: wait")), said("Waiting."))
    assert "- `pytest -q`:" in build_handoff(still)


def test_the_chain_is_fitted_as_one_budget_newest_first() -> None:
    a = session(
        "native", "a-1", user(GOAL), *[said(f"A-ANSWER-{i} " + "a" * 2_000) for i in range(6)]
    )
    to_b = build_handoff(a)  # the default budget holds all of A
    b = session(
        "codex", "b-1", user(seed_prompt(to_b, "BETA one")), said("B-ANSWER " + "b" * 2_000)
    )
    to_c = build_handoff(b, 2_000)
    assert estimate_tokens(to_c) <= 2_000
    assert f"## Goal\n{GOAL}" in to_c  # the facts are never dropped
    assert "B-ANSWER" in to_c and "USER: BETA one" in to_c  # the newest leg whole
    assert "A-ANSWER-5" in to_c and "A-ANSWER-0" not in to_c  # then A's newest turns
    left = to_c.split("earlier messages left out")[0].rsplit("[… ", 1)[1]
    assert int(left) == 7 - sum(f"A-ANSWER-{i}" in to_c for i in range(6))  # A's goal, 6 answers


def test_a_return_to_the_first_agent_carries_every_other_leg_but_not_its_own_turns() -> None:
    _, to_c = chain()
    c = session("claude", "c-1", user(seed_prompt(to_c, "GAMMA: add a test")), said("Added."))
    back_to_a = build_handoff(c, since=0, target=("native", "a-1"))
    assert "You are back in this session" in back_to_a
    assert "USER: BETA: keep it small" in back_to_a and "USER: GAMMA: add a test" in back_to_a
    assert GOAL not in back_to_a and "one test fails" not in back_to_a  # A's own turns
    assert "- `pytest -q`:" in back_to_a  # still failing, as far as anyone ran it


def test_a_return_hands_nothing_of_what_the_target_itself_handed_over() -> None:
    to_b, _ = chain()
    # native → codex → native: codex's delta for native; then native → codex again
    b = session("codex", "b-1", user(seed_prompt(to_b, "BETA")), said("Kept."))
    to_a = build_handoff(b, since=0, target=("native", "a-1"))
    a_again = session("native", "a-1", user(seed_prompt(to_a, "ALPHA-2")), said("Done."))
    to_b_again = build_handoff(a_again, since=0, target=("codex", "b-1"))
    assert "USER: ALPHA-2" in to_b_again
    assert "BETA" not in to_b_again and "Kept." not in to_b_again


def test_an_import_after_a_handoff_writes_the_earlier_legs_as_turns() -> None:
    _, to_c = chain()
    c = session("claude", "c-1", user(seed_prompt(to_c, "GAMMA")), said("On it."))
    flat = flattened(c, SecretDetector())
    texts = [(m.role, m.text) for m in flat.messages]
    assert texts[0] == ("user", GOAL)
    users = [t for r, t in texts if r == "user"]
    assert users == [GOAL, "BETA: keep it small", "GAMMA"]
    assert texts[-1] == ("assistant", "On it.")
    assert all("context handed over" not in t for _, t in texts)
