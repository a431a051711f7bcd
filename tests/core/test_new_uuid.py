"""`avatar.core.ids.new_uuid`: the id claude is started with on a new session (before the rest
of avatar loads, without the `uuid` module): a random version-4 UUID, as `uuid.uuid4()`."""

from __future__ import annotations

import uuid

from avatar.core.ids import UUID_RE, is_valid_id, new_uuid


def test_a_new_uuid_is_a_random_version_4_uuid() -> None:
    made = [new_uuid() for _ in range(200)]
    assert len(set(made)) == len(made)
    for text in made:
        parsed = uuid.UUID(text)
        assert str(parsed) == text  # (lower case, the usual dashes)
        assert parsed.version == 4 and parsed.variant == uuid.RFC_4122
        assert UUID_RE.fullmatch(text) and is_valid_id(text)
