"""A stand-in for `claude -p` stream-json mode, for fast bridge tests (the real CLI is covered
by tests/integration/test_claude_real.py).

It speaks the same lines as Claude Code 2.1 (see tests/claude/fixtures) and writes a transcript
under `$CLAUDE_CONFIG_DIR or ~/.claude/projects/<slug>/` like the real one. What a turn does
depends on the prompt: `TOOL` asks for a permission to run Bash, `WRITE <path>` for one to
Write `<path>` (and writes it when allowed), `SLOW` streams slowly (interruptible), `CRASH`
dies with a message on stderr, `FLOOD` writes 2 MB to stderr first, `HOOK` sends a control
request the client does not know.
`FAKE_CLAUDE_LOG` gets one JSON line per event (argv, env, cwd, control requests and
answers). `FAKE_CLAUDE_NO_INTERRUPT=1` refuses interrupts, `FAKE_CLAUDE_DEAF=1` confirms them
but streams on; `FAKE_CLAUDE_SLOW_CHUNKS=N` sets how many chunks (0.1 s apart) `SLOW` streams
(default 40).
"""

from __future__ import annotations

import json
import os
import queue
import re
import sys
import threading
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

ARGV = sys.argv[1:]
LOG = os.environ.get("FAKE_CLAUDE_LOG")
inbox: queue.Queue[dict | None] = queue.Queue()
answers: dict[str, dict] = {}
answered = threading.Condition()
interrupted = threading.Event()


def log(kind: str, **data: object) -> None:
    if LOG:
        with open(LOG, "a") as f:
            f.write(json.dumps({"event": kind, **data}) + "\n")


def out(msg: dict) -> None:
    sys.stdout.write(json.dumps(msg, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def arg(flag: str) -> str | None:
    return ARGV[ARGV.index(flag) + 1] if flag in ARGV else None


def transcript_dir() -> Path:
    base = os.environ.get("CLAUDE_CONFIG_DIR") or os.path.join(os.environ["HOME"], ".claude")
    slug = re.sub(r"[^a-zA-Z0-9]", "-", os.path.realpath(os.getcwd()))
    return Path(base) / "projects" / slug


def respond(request_id: str, ok: bool = True) -> None:
    body = {"subtype": "success" if ok else "error", "request_id": request_id}
    if not ok:
        body["error"] = "not supported"
    out({"type": "control_response", "response": body})


def reader() -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        msg = json.loads(line)
        if msg.get("type") == "control_response":
            resp = msg["response"]
            with answered:
                answers[resp["request_id"]] = resp
                answered.notify_all()
            log("control_response", response=resp)
        elif msg.get("type") == "control_request":
            log("control_request", request=msg["request"])
            if msg["request"]["subtype"] == "interrupt":
                if os.environ.get("FAKE_CLAUDE_NO_INTERRUPT"):
                    respond(msg["request_id"], ok=False)
                    continue
                if not os.environ.get("FAKE_CLAUDE_DEAF"):
                    interrupted.set()
            respond(msg["request_id"])
        else:
            inbox.put(msg)
    inbox.put(None)


def ask(request: dict) -> dict:
    rid = str(uuid.uuid4())
    out({"type": "control_request", "request_id": rid, "request": request})
    with answered:
        answered.wait_for(lambda: rid in answers, timeout=30)
        return answers.pop(rid, {})


def main_message(kind: str, body: dict) -> None:
    out({"type": kind, **body, "parent_tool_use_id": None})


def record(path: Path, entry: dict) -> None:
    with path.open("a") as f:
        f.write(json.dumps(entry) + "\n")


def copy_parent(parent: str, path: Path, session: str) -> None:
    src = transcript_dir() / f"{parent}.jsonl"
    for line in src.read_text().splitlines() if src.exists() else []:
        entry = json.loads(line)
        entry["sessionId"] = session
        record(path, entry)


def tool_turn(mid: str, name: str, tool_input: dict) -> str:
    use = {"type": "tool_use", "id": "toolu_1", "name": name, "input": tool_input}
    main_message("assistant", {"message": {"id": mid, "model": "fake-model", "content": [use]}})
    verdict = ask(
        {
            "subtype": "can_use_tool",
            "tool_name": name,
            "input": tool_input,
            "tool_use_id": "toolu_1",
        }
    ).get("response", {})
    log("verdict", verdict=verdict)
    allowed = verdict.get("behavior") == "allow"
    result = {
        "type": "tool_result",
        "tool_use_id": "toolu_1",
        "content": "done" if allowed else verdict.get("message", "denied"),
        "is_error": not allowed,
    }
    main_message("user", {"message": {"role": "user", "content": [result]}})
    return "allowed" if allowed else "denied"


def stream(mid: str, chunks: list[str], slow: bool) -> str:
    start = {"type": "message_start", "message": {"id": mid, "usage": {"input_tokens": 10}}}
    main_message("stream_event", {"event": start})
    sent = []
    for chunk in chunks:
        if interrupted.is_set():
            break
        delta = {"type": "text_delta", "text": chunk}
        main_message("stream_event", {"event": {"type": "content_block_delta", "delta": delta}})
        sent.append(chunk)
        if slow:
            time.sleep(0.1)
    return "".join(sent)


def result(session: str, n: int) -> None:
    if interrupted.is_set():
        usage = {"input_tokens": 0, "output_tokens": 0}
        out(
            {
                "type": "result",
                "subtype": "error_during_execution",
                "is_error": True,
                "session_id": session,
                "usage": usage,
            }
        )
        return
    out(
        {
            "type": "result",
            "subtype": "success",
            "is_error": False,
            "stop_reason": "end_turn",
            "session_id": session,
            "total_cost_usd": 0.01 * n,
            "usage": {"input_tokens": 10, "output_tokens": 5},
            "modelUsage": {"fake-model": {"contextWindow": 1000}},
        }
    )


def main() -> int:
    log("start", argv=ARGV, cwd=os.getcwd(), env=dict(os.environ))
    session = arg("--session-id") or arg("--resume") or str(uuid.uuid4())
    parent = arg("--resume") if "--fork-session" in ARGV else None
    resumed = arg("--resume")
    model = arg("--model") or "fake-model"
    path = transcript_dir() / f"{session}.jsonl"
    if resumed and not parent and not path.exists():
        sys.stderr.write(f"No conversation found with session ID: {resumed}\n")
        return 1
    threading.Thread(target=reader, daemon=True).start()
    n = 0
    while True:
        msg = inbox.get()
        if msg is None:
            return 0
        n += 1
        prompt = msg["message"]["content"][0]["text"]
        log("user", text=prompt)
        interrupted.clear()
        path.parent.mkdir(parents=True, exist_ok=True)
        if parent and not path.exists():
            copy_parent(parent, path, session)
        stamp = datetime.now(UTC).isoformat()
        cwd = os.path.realpath(os.getcwd())
        user = {"role": "user", "content": prompt}
        record(
            path,
            {"type": "user", "sessionId": session, "cwd": cwd, "timestamp": stamp, "message": user},
        )
        out(
            {
                "type": "system",
                "subtype": "init",
                "session_id": session,
                "model": model,
                "slash_commands": ["compact"],
                "cwd": os.getcwd(),
            }
        )
        if "CRASH" in prompt:
            sys.stderr.write("some noise\nfatal: something broke\n")
            sys.stderr.flush()
            os._exit(3)
        if "FLOOD" in prompt:
            sys.stderr.write(("x" * 1023 + "\n") * 2048)
            sys.stderr.flush()
        if "HOOK" in prompt:
            log("hook_answer", response=ask({"subtype": "hook_callback", "callback_id": "h1"}))
        mid = f"msg_{n}"
        answer = "Hello from fake claude."
        if "TOOL" in prompt:
            answer = tool_turn(mid, "Bash", {"command": "touch x", "description": "make x"})
            mid = f"msg_{n}b"
        elif prompt.startswith("WRITE "):
            path = prompt[6:]
            answer = tool_turn(mid, "Write", {"file_path": path, "content": "x"})
            if answer == "allowed":  # as Claude Code does: the tool runs once allowed
                Path(path).parent.mkdir(parents=True, exist_ok=True)
                Path(path).write_text("written by fake claude\n")
            mid = f"msg_{n}b"
        slow = int(os.environ.get("FAKE_CLAUDE_SLOW_CHUNKS") or 40)
        chunks = [f"w{i} " for i in range(slow)] if "SLOW" in prompt else [answer]
        said = stream(mid, chunks, slow="SLOW" in prompt)
        reply = {
            "id": mid,
            "role": "assistant",
            "model": model,
            "content": [{"type": "text", "text": said}],
        }
        main_message("assistant", {"message": reply})
        record(
            path, {"type": "assistant", "sessionId": session, "timestamp": stamp, "message": reply}
        )
        result(session, n)


if __name__ == "__main__":
    sys.exit(main())
