"""An ACP agent that writes only garbage on stdout (a wrong command in config, a program that
is no ACP agent) is given up on within seconds, in one line, instead of after the 60 s
`initialize` timeout."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.support.drive import avatar

FLOOD = "import sys\nwhile True:\n    sys.stdout.write('garbage, not JSON-RPC\\n')\n"
ONE_LINE = "import time\nprint('Welcome to my tool! Type help.', flush=True)\ntime.sleep(600)\n"


@pytest.mark.parametrize("script", [FLOOD, ONE_LINE], ids=["flood", "one-line-then-silence"])
def test_an_agent_writing_only_garbage_ends_in_one_line_saying_so(
    avatar_env: dict[str, str], tmp_path: Path, script: str
) -> None:
    command = json.dumps([sys.executable, "-c", script])
    Path(avatar_env["AVATAR_CONFIG"]).write_text(
        f"providers:\n  junky: {{transport: acp, command: {command}}}\n"
    )
    out = avatar(avatar_env, tmp_path, "-p", "junky", "chat", "hi", timeout=90)
    assert out.returncode == 1
    assert out.stderr.count("\n") == 1 and out.stderr.startswith("avatar: junky "), out.stderr
    # Said by the junk check (seconds after the junk), not by initialize's 60 s timeout.
    assert "is not speaking ACP: its output is not JSON-RPC" in out.stderr
