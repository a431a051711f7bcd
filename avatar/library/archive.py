"""Sessions between machines: `avatar session export ID --archive FILE.tar.gz` and
`avatar session import FILE [--cwd DIR]` (docs/design.md §3).

An archive is a gzipped tar of:

- `manifest.json`: `{"format": 1, "kind", "provider", "cwd", "session": {…list fields…}}`
  (`kind` names the store that wrote the files: claude, codex, gemini, native, records);
- `session/…`: the provider's own session files, as its store keeps them (each store says
  which files they are and where they go back, `SessionStore.archive_files` and `restore`);
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

An archive holds at most MAX_TOTAL bytes, and (past RATIO_FLOOR) at most MAX_RATIO times its
own size: a 917 KB archive once expanded to 1.9 GB. Both are checked from the tar headers and
again on the bytes read, as members are staged in a temporary directory; the files move into
place only when everything has been read and checked, so a refused archive leaves nothing.
Archives are written owner-only, beside their target and renamed, never through a symlink,
FIFO or device at the target.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import stat
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from avatar.core.errors import UsageError
from avatar.core.ids import check_id

if TYPE_CHECKING:
    from avatar.library.catalog import Catalog
    from avatar.policy.secrets import SecretDetector
    from avatar.sessions.settings_log import SessionSettings
    from avatar.sessions.store import SessionStore
    from avatar.sessions.types import SessionInfo

ARCHIVE_FORMAT = 1
MANIFEST = "manifest.json"
_PREFIXES = ("session/", "records/")
#: What an archive may expand to in all: sessions are JSON text, tens of MB at the most.
MAX_TOTAL = 256 << 20
#: How many times its own size an archive may expand to, once past RATIO_FLOOR (JSON text
#: packs 5-20 times; a stream of one byte repeated, 1000 times).
MAX_RATIO = 200
RATIO_FLOOR = 16 << 20
_CHUNK = 1 << 20


class Archives:
    """Packs sessions of a catalog's stores into archives, and restores them."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog

    def pack(self, session: SessionInfo | str, target: Path) -> Path:
        """Write the archive of `session` (a listed one, or an id or prefix) to `target`."""
        info = self.catalog.info(session)
        store = self.catalog.store(info.provider)
        kind = _kind(store)
        members: dict[str, bytes] = {}
        for name, path in store.archive_files(info) if store is not None else []:
            members[f"session/{name}"] = path.read_bytes()
        members.update(_records_of(self.catalog.avatar_home, info))
        manifest = {
            "format": ARCHIVE_FORMAT,
            "kind": kind,
            "provider": info.provider,
            "cwd": info.cwd,
            "session": info.to_public(),
        }
        members = {MANIFEST: json.dumps(manifest, indent=1).encode(), **members}
        size = sum(len(data) for data in members.values())
        if size > MAX_TOTAL:  # (it could not be imported)
            raise UsageError(
                f"{info.provider} session {info.id} is {size >> 20} MiB, over the "
                f"{MAX_TOTAL >> 20} MiB an archive holds"
            )
        secrets = self.catalog.registry.secrets()
        members = {name: masked(data, secrets) for name, data in members.items()}
        _write_tar(target, members)
        return target

    def restore(self, archive: Path, cwd: Path) -> SessionInfo:
        """Restore the session in `archive` for project directory `cwd`; returns it as listed."""
        import tempfile

        with tempfile.TemporaryDirectory(prefix="avatar-import-") as staging:
            staged = stage_archive(archive, Path(staging))
            members = {name: path.read_bytes() for name, path in staged.items()}
            return self._restore(members, cwd)

    def _restore(self, members: dict[str, bytes], cwd: Path) -> SessionInfo:
        from avatar.sessions.relocate import check_names

        manifest = _manifest(members)
        provider, kind = self.catalog.registry.spec(manifest["provider"]).name, manifest["kind"]
        store = self.catalog.store(provider)
        if _kind(store) != kind:
            raise UsageError(f"the archive holds a {kind} session; {provider} here reads another")
        sid = check_id(str(manifest["session"]["id"]))
        if store is not None and any(s.id == sid for s in store.find(sid)):
            raise UsageError(f"{provider} session {sid} already exists here; not overwritten")
        new_cwd = os.path.realpath(cwd)
        files = {k.removeprefix("session/"): v for k, v in members.items() if k[:8] == "session/"}
        if store is None:  # (a provider without a store: its archives hold records alone)
            check_names(files, kind, sid, lambda name: False)
            writes: list[tuple[Path, bytes]] = []
        else:
            writes = store.restore(sid, files, manifest.get("cwd"), new_cwd)
        home = self.catalog.avatar_home
        turns = members.get("records/turns.jsonl")
        if turns is not None:
            writes.append((self.catalog.records().turns_path(provider, sid), turns))
        for path, _ in writes:
            if path.exists() or path.is_symlink():
                raise UsageError(f"{path} exists; not overwritten")
        record = _record_of(members)  # (checked before anything is written)
        settings = _settings_of(members)
        placed = _Placed()
        try:
            placed.write(writes)
            _record_back(home, provider, sid, record, new_cwd)
            _settings_back(home, provider, sid, settings)
        except BaseException:
            placed.undo()
            raise
        return self.catalog.find(sid, provider)


def _kind(store: SessionStore | None) -> str:
    """What an archive calls the files of `store` (a provider without one: `records`)."""
    return store.kind if store is not None else "records"


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


class _Placed:
    """Files written into their places all at once, or (`undo`) not at all: each goes to a
    temporary name beside its place first, and all are renamed only when all are written."""

    def __init__(self) -> None:
        self.dirs: list[Path] = []  # made for them, outermost first
        self.files: list[Path] = []  # temporary or final, whatever exists now

    def write(self, writes: list[tuple[Path, bytes]]) -> None:
        """Write every (path, data); a failure leaves the temporary files for `undo`."""
        ready: list[tuple[Path, Path]] = []
        for path, data in writes:
            self._mkdirs(path.parent)
            tmp = path.with_name(f".{path.name}.{os.getpid()}.import")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
            self.files.append(tmp)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            ready.append((tmp, path))
        for tmp, path in ready:
            os.replace(tmp, path)
            self.files[self.files.index(tmp)] = path

    def undo(self) -> None:
        """Remove what `write` made."""
        for path in self.files:
            with contextlib.suppress(OSError):
                path.unlink()
        for made in reversed(self.dirs):
            with contextlib.suppress(OSError):
                made.rmdir()

    def _mkdirs(self, directory: Path) -> None:
        missing = []
        while not directory.exists():
            missing.append(directory)
            directory = directory.parent
        for made in reversed(missing):
            made.mkdir()
            self.dirs.append(made)


# -- avatar's own records -------------------------------------------------------------------


def _records_of(avatar_home: Path, info: SessionInfo) -> dict[str, bytes]:
    from avatar.sessions.records import SessionRecords
    from avatar.sessions.settings_log import SessionSettingsLog

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


def _record_of(members: dict[str, bytes]) -> dict[str, Any] | None:
    if "records/record.json" not in members:
        return None
    return _json_object(members["records/record.json"], "records/record.json")


def _record_back(
    avatar_home: Path, provider: str, sid: str, record: dict[str, Any] | None, cwd: str
) -> None:
    """Append the session's record (append-only file), under its new project directory."""
    from avatar.sessions.records import SessionRecords

    records = SessionRecords(avatar_home)
    if record is not None and (provider, sid) not in records.all():
        records.put(record | {"provider": provider, "id": sid, "cwd": cwd})


def _settings_of(members: dict[str, bytes]) -> SessionSettings | None:
    from avatar.sessions.settings_log import SessionSettings

    if "records/settings.json" not in members:
        return None
    record = SessionSettings.from_json(members["records/settings.json"])
    if record is None:
        raise UsageError("the archive's records/settings.json is damaged")
    return record


def _settings_back(
    avatar_home: Path, provider: str, sid: str, record: SessionSettings | None
) -> None:
    from dataclasses import replace

    from avatar.sessions.settings_log import SessionSettingsLog

    if record is not None:
        SessionSettingsLog(avatar_home).put(replace(record, provider=provider, id=sid))


# -- the tar file ---------------------------------------------------------------------------


def _write_tar(target: Path, members: dict[str, bytes]) -> None:
    import tarfile  # here, not at the top: every command's engine holds an `Archives`

    refuse_special(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "wb") as f, tarfile.open(fileobj=f, mode="w:gz") as tar:
            for name, data in members.items():
                entry = tarfile.TarInfo(name)
                entry.size, entry.mtime, entry.mode = len(data), int(time.time()), 0o600
                tar.addfile(entry, io.BytesIO(data))
        refuse_special(target)  # (made one while the archive was written?)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


def refuse_special(target: Path) -> None:
    """A usage error when `target` exists and is not a regular file: a symlink (replacing it
    would not write where it points, writing through it would write elsewhere), a FIFO, a
    device, a directory."""
    try:
        mode = os.lstat(target).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISREG(mode):
        raise UsageError(f"{target} exists and is not a regular file; not replaced")


def stage_archive(path: Path, into: Path) -> dict[str, Path]:
    """Every member of an archive, by name, copied into directory `into`; a usage error for
    anything not plain and safe, or an archive expanding too far (see the module docstring):
    checked on the sizes the headers give before a member is read, and on the bytes read."""
    import tarfile

    staged: dict[str, Path] = {}
    try:
        packed = os.stat(path).st_size
        with tarfile.open(path, "r:gz") as tar:
            headers = read = 0
            for n, entry in enumerate(tar):
                name = entry.name
                parts = name.split("/")
                if name.startswith("/") or ".." in parts or "\\" in name or "" in parts:
                    raise UsageError(f"{path}: unsafe member name {name!r}; nothing imported")
                if entry.isdir():
                    continue
                if not entry.isreg() or not (name == MANIFEST or name.startswith(_PREFIXES)):
                    raise UsageError(f"{path}: unexpected member {name!r}; nothing imported")
                headers += entry.size
                _check_expansion(path, headers, packed)
                source = tar.extractfile(entry)
                staged[name] = into / str(n)
                with staged[name].open("wb") as out:
                    while source is not None and (chunk := source.read(_CHUNK)):
                        read += len(chunk)
                        _check_expansion(path, read, packed)
                        out.write(chunk)
    except FileNotFoundError:
        raise UsageError(f"no such archive: {path}") from None
    except (tarfile.TarError, EOFError, OSError) as e:
        raise UsageError(f"{path} is not a session archive ({e})") from None
    return staged


def _check_expansion(path: Path, size: int, packed: int) -> None:
    if size > MAX_TOTAL:
        raise UsageError(
            f"{path}: expands to over {MAX_TOTAL >> 20} MiB, more than a session archive "
            "holds; nothing imported"
        )
    if size > RATIO_FLOOR and size > MAX_RATIO * packed:
        raise UsageError(
            f"{path}: expands over {MAX_RATIO} times its size, as no session archive does; "
            "nothing imported"
        )


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
