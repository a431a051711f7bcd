"""The native index's lines read without pydantic (`avatar.native.store.index_record`): each
line avatar writes is made into its record directly (`records_of`), and whatever that makes,
pydantic makes the same from the same line (`records_checked`, which reads an index where
pydantic is loaded already or the index is very large); any other line is pydantic's to
convert or refuse, as before."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from avatar.native.store.index_record import (
    IndexRecord,
    read_index,
    records_checked,
    records_of,
)
from tests.hardening.fuzzing import JSON
from tests.support import drive
from tests.support.homes import AgentHome, avatar_env
from tests.support.model_server import FakeModelServer

SETTINGS = settings(max_examples=300, deadline=None)

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


def _lines(content: bytes) -> list[bytes]:
    return [line for line in content.split(b"\n") if line.strip()]


@SETTINGS
@given(record=_records)
def test_a_written_record_reads_back_as_itself(record: IndexRecord) -> None:
    assert records_of(_lines(record.line())) == [record]
    assert records_checked(_lines(record.line())) == [record]


@SETTINGS
@given(record=_records, changed=st.dictionaries(_keys, _foreign, max_size=2))
def test_whatever_a_line_reads_as_pydantic_reads_the_same(
    record: IndexRecord, changed: dict[str, Any]
) -> None:
    line = json.dumps(json.loads(record.line()) | changed).encode()
    read, checked = records_of([line]), records_checked([line])
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
    index = tmp_path / ".index.jsonl"
    index.write_bytes(newer + torn)
    kept = [IndexRecord(id="s1", title="kept", messages=3)]
    assert read_index(index) == records_of(_lines(newer + torn)) == kept


def test_a_listing_of_native_sessions_loads_no_pydantic(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    env, cwd = avatar_env(agent_home), agent_home.workdir
    model_server.script("chat", "Answered.")
    assert drive.avatar(env, cwd, "-p", "native", "chat", "a native question").returncode == 0
    out = drive.in_process(env, cwd, "session", "list", watch=["pydantic"])
    assert "a native question" in out.stdout, out.stderr
    assert out.loaded == []
