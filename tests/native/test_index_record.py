"""The native index's lines read without pydantic (`avatar.native.store.index_record`): each
line avatar writes is made into its record directly, and whatever that makes, pydantic makes
the same from the same line; any other line is pydantic's to convert or refuse, as before."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter, ValidationError

from avatar.native.store.index_record import IndexRecord, read_index
from tests.hardening.fuzzing import JSON
from tests.support import drive
from tests.support.homes import AgentHome, avatar_env
from tests.support.model_server import FakeModelServer

CHECKED = TypeAdapter(IndexRecord)
SETTINGS = settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)

_times = st.datetimes(
    min_value=datetime(1970, 1, 2), timezones=st.sampled_from([UTC, timezone(timedelta(hours=2))])
)
_records = st.builds(
    IndexRecord,
    id=st.text(min_size=1, max_size=12),
    cwd=st.none() | st.text(max_size=12),
    title=st.none() | st.text(max_size=12),
    created=st.none() | _times,
    updated=st.none() | _times,
    messages=st.integers(0, 10**6),
    model=st.none() | st.text(max_size=8),
    parent_id=st.none() | st.text(max_size=8),
    size=st.integers(0, 10**9),
    deleted=st.booleans(),
)
#: Values a hand-edited or foreign line may hold: any JSON, and times in other shapes.
_foreign = JSON | st.sampled_from(["2026-11-29T20:21:51.076000Z", "2026-11-29", "20261129T2021"])
_keys = st.sampled_from(["id", "created", "updated", "messages", "title", "size", "new_field"])


def _read(tmp_path: Path, content: bytes) -> list[IndexRecord]:
    index = tmp_path / ".index.jsonl"
    index.write_bytes(content)
    return read_index(index)


@SETTINGS
@given(record=_records)
def test_a_written_record_reads_back_as_itself(tmp_path: Path, record: IndexRecord) -> None:
    assert _read(tmp_path, record.line()) == [record]


@SETTINGS
@given(record=_records, changed=st.dictionaries(_keys, _foreign, max_size=2))
def test_whatever_a_line_reads_as_pydantic_reads_the_same(
    tmp_path: Path, record: IndexRecord, changed: dict[str, Any]
) -> None:
    line = json.dumps(json.loads(record.line()) | changed).encode()
    try:
        checked = [CHECKED.validate_python(json.loads(line))]
    except ValidationError:
        checked = []
    read = _read(tmp_path, line + b"\n")
    assert read == checked
    for ours, theirs in zip(read, checked, strict=True):
        for field in dataclasses.fields(ours):
            a, b = getattr(ours, field.name), getattr(theirs, field.name)
            assert type(a) is type(b), field.name
            if isinstance(a, datetime):
                assert a.utcoffset() == b.utcoffset(), field.name


def test_a_newer_avatars_line_is_read_and_a_torn_one_skipped(tmp_path: Path) -> None:
    newer = b'{"id": "s1", "title": "kept", "messages": 3, "colour": "blue"}\n'
    torn = b'{"id": "s2", "title": "cut off'
    assert _read(tmp_path, newer + torn) == [IndexRecord(id="s1", title="kept", messages=3)]


def test_a_listing_of_native_sessions_loads_no_pydantic(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    env, cwd = avatar_env(agent_home), agent_home.workdir
    model_server.script("chat", "Answered.")
    assert drive.avatar(env, cwd, "-p", "native", "chat", "a native question").returncode == 0
    code = (
        "import sys\n"
        "from avatar.cli import main\n"
        "try:\n    main(['session', 'list'])\n"
        "except SystemExit:\n    pass\n"
        "print('PYDANTIC', 'pydantic' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=cwd, timeout=60
    )
    assert "a native question" in out.stdout, out.stderr
    assert out.stdout.splitlines()[-1] == "PYDANTIC False"
