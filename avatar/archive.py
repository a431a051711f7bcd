"""Sessions between machines: `avatar session export ID --archive FILE.tar.gz` and
`avatar session import FILE [--cwd DIR]` (DESIGN §3).

An archive is a gzipped tar of:

- `manifest.json`: `{"format": 1, "kind", "provider", "cwd", "session": {…list fields…}}`
  (`kind` names the store that wrote the files: claude, codex, gemini, native, records);
- `session/…`: the provider's own session files, as its store keeps them (see
  `avatar.archive_stores` for where each store puts them and what it keys on);
- `records/…`: avatar's records of the session (its record, the turns it carried, the
  settings it was started with).

Importing restores each file where the provider running in the new project directory looks
for it, rewriting the paths it keys on; it refuses to overwrite a session that exists, an
archive of a newer format, and any member that is not a plain file under those names.

Secrets are masked in everything packed (`avatar.policy.secrets`: key variables' values, key
shapes, password assignments, private keys): an archive moves a session to another machine,
and a key the model saw must not travel with it. JSON (a line of a JSONL file, or a whole
file) has each string masked and is written again only where something changed; other text
is masked as text. The session resumes as before, with `[redacted]` where a secret was.
"""

from __future__ import annotations

import io
import json
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from avatar.errors import UsageError

if TYPE_CHECKING:
    from avatar.library import SessionLibrary
    from avatar.policy.secrets import SecretDetector
    from avatar.sessions.types import SessionInfo

ARCHIVE_FORMAT = 1
MANIFEST = "manifest.json"
_PREFIXES = ("session/", "records/")
#: A session file larger than this is not a session avatar packed: refuse to read it whole.
MAX_MEMBER = 1 << 30


class Archives:
    """Packs sessions of a library's stores into archives, and restores them."""

    def __init__(self, library: SessionLibrary) -> None:
        self.library = library

    def pack(self, session: SessionInfo | str, target: Path) -> Path:
        """Write the archive of `session` (a listed one, or an id or prefix) to `target`."""
        from avatar.archive_stores import kind_of, provider_files

        info = self.library.info(session)
        store = self.library.store(info.provider)
        kind = kind_of(store)
        members: dict[str, bytes] = {}
        for name, path in provider_files(kind, store, info):
            members[f"session/{name}"] = path.read_bytes()
        members.update(_records_of(self.library.avatar_home, info))
        manifest = {
            "format": ARCHIVE_FORMAT,
            "kind": kind,
            "provider": info.provider,
            "cwd": info.cwd,
            "session": info.to_public(),
        }
        members = {MANIFEST: json.dumps(manifest, indent=1).encode(), **members}
        secrets = self.library.registry.secrets()
        members = {name: masked(data, secrets) for name, data in members.items()}
        _write_tar(target, members)
        return target

    def restore(self, archive: Path, cwd: Path) -> SessionInfo:
        """Restore the session in `archive` for project directory `cwd`; returns it as listed."""
        from avatar.archive_stores import after_restore, kind_of, place
        from avatar.fileio import atomic_write
        from avatar.ids import check_id

        members = read_archive(archive)
        manifest = _manifest(members)
        provider, kind = self.library.registry.spec(manifest["provider"]).name, manifest["kind"]
        store = self.library.store(provider)
        if kind_of(store) != kind:
            raise UsageError(f"the archive holds a {kind} session; {provider} here reads another")
        sid = check_id(str(manifest["session"]["id"]))
        if store is not None and any(s.id == sid for s in store.find(sid)):
            raise UsageError(f"{provider} session {sid} already exists here; not overwritten")
        new_cwd = os.path.realpath(cwd)
        files = {k.removeprefix("session/"): v for k, v in members.items() if k[:8] == "session/"}
        writes = place(kind, store, sid, files, manifest.get("cwd"), new_cwd)
        home = self.library.avatar_home
        turns = members.get("records/turns.jsonl")
        if turns is not None:
            writes.append((self.library.records().turns_path(provider, sid), turns))
        for path, _ in writes:
            if path.exists():
                raise UsageError(f"{path} exists; not overwritten")
        for path, data in writes:
            atomic_write(path, data)
        _record_back(home, provider, sid, members, new_cwd)
        _settings_back(home, provider, sid, members)
        after_restore(kind, store, [p for p, _ in writes], new_cwd)
        return self.library.find(sid, provider)


def masked(data: bytes, secrets: SecretDetector) -> bytes:
    """A file's bytes with every secret masked: JSON (the whole file, else each JSONL line)
    string by string, rewritten only where something changed; other lines as text. Bytes that
    are not UTF-8 pass through as they were."""
    text = data.decode("utf-8", "surrogateescape")
    new = _masked_json(text, secrets, indent=1)
    if new is None:
        lines = []
        for line in text.splitlines(keepends=True):
            body = line.rstrip("\r\n")
            done = _masked_json(body, secrets)
            lines.append((secrets.mask(body) if done is None else done) + line[len(body) :])
        new = "".join(lines)
    return new.encode("utf-8", "surrogateescape")


def _masked_json(text: str, secrets: SecretDetector, indent: int | None = None) -> str | None:
    """`text` as JSON with its strings masked (`text` itself when nothing changed); None when
    it is not one JSON object or array (or one nested too deep to walk)."""
    if not text.lstrip().startswith(("{", "[")):
        return None
    try:
        value = json.loads(text)
        new = secrets.mask_data(value)
        if new == value:
            return text
        compact = (",", ":") if indent is None else None
        out = json.dumps(new, ensure_ascii=False, indent=indent, separators=compact)
        try:
            out.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:  # a lone surrogate (`"\\ud800"` in the file): escaped
            out = json.dumps(new, indent=indent, separators=compact)
        return out
    except (ValueError, RecursionError):
        return None


# -- avatar's own records -------------------------------------------------------------------


def _records_of(avatar_home: Path, info: SessionInfo) -> dict[str, bytes]:
    from avatar.records import SessionRecords
    from avatar.session_settings import SessionSettingsLog

    out: dict[str, bytes] = {}
    records = SessionRecords(avatar_home)
    record = records.all().get((info.provider, info.id))
    if record is not None:
        record = {k: v for k, v in record.items() if k != "child"}  # (links of avatar < 0.2)
        out["records/record.json"] = json.dumps(record, ensure_ascii=False).encode()
    turns = records.turns_path(info.provider, info.id)
    if turns.is_file():
        out["records/turns.jsonl"] = turns.read_bytes()
    settings = SessionSettingsLog(avatar_home).get(info.id)
    if settings is not None and settings.provider == info.provider:
        out["records/settings.json"] = settings.to_json()
    return out


def _record_back(
    avatar_home: Path, provider: str, sid: str, members: dict[str, bytes], cwd: str
) -> None:
    """Append the session's record (append-only file), under its new project directory."""
    from avatar.records import SessionRecords

    records = SessionRecords(avatar_home)
    if "records/record.json" in members and (provider, sid) not in records.all():
        record = _json_object(members["records/record.json"], "records/record.json")
        records.put(record | {"provider": provider, "id": sid, "cwd": cwd})


def _settings_back(avatar_home: Path, provider: str, sid: str, members: dict[str, bytes]) -> None:
    from dataclasses import replace

    from avatar.session_settings import SessionSettings, SessionSettingsLog

    if "records/settings.json" in members:
        record = SessionSettings.from_json(members["records/settings.json"])
        if record is None:
            raise UsageError("the archive's records/settings.json is damaged")
        SessionSettingsLog(avatar_home).put(replace(record, provider=provider, id=sid))


# -- the tar file ---------------------------------------------------------------------------


def _write_tar(target: Path, members: dict[str, bytes]) -> None:
    import tarfile  # here, not at the top: every command's engine holds an `Archives`

    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        with tarfile.open(tmp, "w:gz") as tar:
            for name, data in members.items():
                entry = tarfile.TarInfo(name)
                entry.size, entry.mtime, entry.mode = len(data), int(time.time()), 0o600
                tar.addfile(entry, io.BytesIO(data))
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


def read_archive(path: Path) -> dict[str, bytes]:
    """Every member of an archive, by name; a usage error for anything not plain and safe."""
    import tarfile

    members: dict[str, bytes] = {}
    try:
        with tarfile.open(path, "r:gz") as tar:
            for entry in tar:
                name = entry.name
                parts = name.split("/")
                if name.startswith("/") or ".." in parts or "\\" in name or "" in parts:
                    raise UsageError(f"{path}: unsafe member name {name!r}; nothing imported")
                if entry.isdir():
                    continue
                if not entry.isreg() or not (name == MANIFEST or name.startswith(_PREFIXES)):
                    raise UsageError(f"{path}: unexpected member {name!r}; nothing imported")
                if entry.size > MAX_MEMBER:
                    raise UsageError(f"{path}: member {name!r} is too large")
                f = tar.extractfile(entry)
                members[name] = f.read() if f is not None else b""
    except FileNotFoundError:
        raise UsageError(f"no such archive: {path}") from None
    except (tarfile.TarError, EOFError, OSError) as e:
        raise UsageError(f"{path} is not a session archive ({e})") from None
    return members


def _json_object(data: bytes, name: str) -> dict[str, Any]:
    try:
        value = json.loads(data)
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise UsageError(f"the archive's {name} is damaged")
    return value


def _manifest(members: dict[str, bytes]) -> dict[str, Any]:
    if MANIFEST not in members:
        raise UsageError("not a session archive (no manifest.json)")
    manifest = _json_object(members[MANIFEST], MANIFEST)
    version = manifest.get("format")
    if not isinstance(version, int):
        raise UsageError("the archive's manifest.json is damaged")
    if version > ARCHIVE_FORMAT:
        raise UsageError(
            f"the archive is format {version}, newer than this avatar reads ({ARCHIVE_FORMAT});"
            " upgrade avatar to import it"
        )
    session = manifest.get("session")
    if not (
        isinstance(manifest.get("provider"), str)
        and isinstance(manifest.get("kind"), str)
        and isinstance(session, dict)
        and isinstance(session.get("id"), str)
        and isinstance(manifest.get("cwd"), str | None)  # a number here once crashed the import
    ):
        raise UsageError("the archive's manifest.json is damaged")
    return manifest
