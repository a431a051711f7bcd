"""Structured handoffs: goal, decisions, files, failures and plan from any provider's
transcript, the newest turns verbatim, fitted to a share of the target's window."""

from __future__ import annotations

import subprocess
from pathlib import Path

from avatar.handoff import build_handoff, seed_prompt, strip_handoff
from avatar.handoff.window import context_window, estimate_tokens, handoff_budget
from avatar.policy.secrets import SecretDetector
from avatar.sessions.types import SessionInfo, ToolCall, Transcript, TranscriptMessage

GOAL = "TASK: port the parser from C to Rust"


def user(text: str) -> TranscriptMessage:
    return TranscriptMessage(role="user", text=text)


def said(text: str = "", *calls: ToolCall) -> TranscriptMessage:
    return TranscriptMessage(role="assistant", text=text, tool_calls=list(calls))


def result(call_id: str, text: str, *, error: bool = False) -> TranscriptMessage:
    return TranscriptMessage(role="tool", text=text, tool_call_id=call_id, is_error=error)


def transcript(*msgs: TranscriptMessage, provider: str = "codex") -> Transcript:
    info = SessionInfo(id="s1", provider=provider, title="port")
    return Transcript(info=info, messages=list(msgs))


def test_sections_of_a_small_session() -> None:
    text = build_handoff(
        transcript(
            user(GOAL),
            said("Reading it.", ToolCall(id="r", name="Read", input={"file_path": "src/p.c"})),
            result("r", "int main() {}"),
            said("", ToolCall(id="w", name="write", input={"path": "src/p.rs", "content": "x"})),
            result("w", "wrote src/p.rs"),
            user("Use nom, not pest. Never touch the tests."),
            said(
                "",
                ToolCall(id="b", name="Bash", input={"command": "cargo build"}),
                ToolCall(
                    id="t",
                    name="TodoWrite",
                    input={
                        "todos": [
                            {"content": "port lexer", "status": "completed"},
                            {"content": "port parser", "status": "in_progress"},
                        ]
                    },
                ),
            ),
            result(
                "b", "Compiling\nerror[E0425]: cannot find value `x`\nerror: aborting", error=True
            ),
            user("Actually, port the lexer only."),
            said("OK."),
        )
    )
    assert "## Goal\n" + GOAL in text
    assert "- Actually, port the lexer only." in text  # a request that changed the goal
    assert "- Use nom, not pest." in text and "- Never touch the tests." in text
    assert "## Files changed\n- src/p.rs" in text
    assert "## Files read\n- src/p.c" in text
    assert "- `cargo build`:\n  Compiling\n  error[E0425]" in text
    assert "- [x] port lexer\n- [~] port parser" in text
    assert "USER: " + GOAL in text and "ASSISTANT: OK." in text
    assert "left out" not in text


def test_a_500_turn_session_fits_the_share_and_keeps_goal_and_files() -> None:
    msgs = [user(GOAL)]
    for i in range(500):
        msgs.append(user(f"request {i} " + "please go on " * 100))
        call = ToolCall(id=f"w{i}", name="Write", input={"file_path": f"src/m{i}.rs"})
        msgs.append(said(f"answer {i} " + "y" * 3000, call))
        msgs.append(result(f"w{i}", "ok"))
    window = context_window("claude", None, None, {})
    budget = handoff_budget(window, 0.25)
    text = build_handoff(transcript(*msgs), budget)

    assert window == 200_000 and budget == 50_000
    assert estimate_tokens(text) <= budget
    assert estimate_tokens(text) > budget * 0.9  # the room is used, not wasted
    assert "## Goal\n" + GOAL in text
    files = text.split("## Files changed\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert files[:300] == [f"- src/m{i}.rs" for i in range(300)] and "200 more" in files[300]
    assert "answer 499 " in text and "answer 0 " not in text  # oldest turns go first
    assert "earlier messages left out" in text


def test_a_tight_budget_still_keeps_goal_and_file_list() -> None:
    msgs = [user(GOAL), said("", ToolCall(name="edit", input={"path": "lib.rs"}))]
    msgs += [said("z" * 4000) for _ in range(50)]
    text = build_handoff(transcript(*msgs), 1_000)
    assert GOAL in text and "- lib.rs" in text
    assert estimate_tokens(text) <= 1_000


def test_a_handoff_of_a_handed_over_session_carries_the_goal_once() -> None:
    first = build_handoff(
        transcript(user(GOAL), said("", ToolCall(name="write", input={"path": "a.rs"})))
    )
    second_source = transcript(
        user(seed_prompt(first, "carry on")),
        said("Continuing."),
        provider="claude",
    )
    second = build_handoff(second_source)
    assert second.count("## Goal") == 1
    assert second.count("=== context handed over by avatar") == 1
    assert "## Goal\n" + GOAL in second and "- a.rs" in second
    assert "USER: carry on" in second


def test_secrets_are_masked() -> None:
    key = "sk-ant-" + "a1" * 20
    env_secret = "hunter2hunter2"
    text = build_handoff(
        transcript(user(f"my key is {key}, password={env_secret}; token: {env_secret}x")),
        secrets=SecretDetector({"MY_DB_PASSWORD": env_secret}),
    )
    assert key not in text and env_secret not in text
    assert "[redacted]" in text


def test_a_command_that_later_passed_is_not_listed_as_failed() -> None:
    bash = {"command": "pytest -q"}
    text = build_handoff(
        transcript(
            user("fix the tests"),
            said("", ToolCall(id="1", name="run_shell_command", input=bash)),
            result("1", "1 failed", error=True),
            said("", ToolCall(id="2", name="run_shell_command", input=bash)),
            result("2", "3 passed"),
        )
    )
    assert "Commands that failed" not in text


def test_codex_patches_and_tool_titles_count_as_changed_files() -> None:
    patch = "*** Begin Patch\n*** Add File: new.py\n+x\n*** Update File: old.py\n*** End Patch"
    text = build_handoff(
        transcript(
            user("go"),
            said("", ToolCall(name="apply_patch", input={"input": patch})),
            said("", ToolCall(name="Write notes.md")),  # a title from avatar's own copy
        )
    )
    assert "## Files changed\n- new.py\n- old.py\n- notes.md" in text


def test_delta_hands_over_only_what_came_since() -> None:
    t = transcript(user(GOAL), said("old answer"), user("new request"), said("new answer"))
    text = build_handoff(t, since=2)
    assert "You are back in this session" in text
    assert "old answer" not in text and "new answer" in text


def test_handoff_text_is_cut_from_titles() -> None:
    from avatar.sessions.jsonl import title_from

    seeded = seed_prompt(build_handoff(transcript(user(GOAL))), "carry on")
    assert strip_handoff(seeded) == "carry on"
    assert title_from(seeded) == "carry on"


def test_git_diff_stat_is_included_in_a_repository(tmp_path: Path) -> None:
    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)

    git("init", "-q")
    (tmp_path / "a.txt").write_text("one\n")
    git("add", "a.txt")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
    (tmp_path / "a.txt").write_text("one\ntwo\n")
    (tmp_path / "b.txt").write_text("new\n")
    text = build_handoff(transcript(user(GOAL)), cwd=tmp_path)
    assert "## Uncommitted changes (git diff --stat)" in text
    assert "a.txt | 1 +" in text and "b.txt (new, untracked)" in text
    assert "git diff" not in build_handoff(transcript(user(GOAL)), cwd=tmp_path / "nothing")
