"""One writer per session file: ordered, non-blocking appends under an exclusive file lock.

`add()` serializes the entry on the caller's thread (so a bad entry fails where it was made)
and hands the line to a writer thread through a queue. The thread drains whatever is queued
and writes it with one `os.write` — nothing stays in a userspace buffer, so a killed process
loses at most the lines it had not yet handed to the kernel. `flush()` waits until everything
added so far is written; `sync()` also fsyncs (done at every turn end).
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import os
import queue
import threading
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from avatar.core.errors import AvatarError
from avatar.core.fileio import append_all, write_all

if TYPE_CHECKING:
    import asyncio

    from pydantic import BaseModel


def model_line(model: BaseModel) -> bytes:
    """A model as one JSONL line with its newline (fields left at None are not written)."""
    return model.model_dump_json(exclude_none=True).encode() + b"\n"


class SessionBusyError(AvatarError):
    """Another process holds the session's write lock."""


class _Barrier:
    """A marker in the queue: set once every line before it is written (and fsynced)."""

    __slots__ = ("callback", "done", "error", "fsync")

    def __init__(self, fsync: bool, callback: Callable[[BaseException | None], None] | None):
        self.fsync = fsync
        self.callback = callback
        self.done = threading.Event()
        self.error: BaseException | None = None


_STOP = object()
_open_writers: weakref.WeakSet[SessionWriter] = weakref.WeakSet()


@atexit.register
def _close_open_writers() -> None:
    # The writer thread is a daemon (a hung disk must not hang exit); so that queued lines
    # are not lost when a caller forgets close(), write them out at interpreter exit.
    for writer in list(_open_writers):
        with contextlib.suppress(Exception):
            writer.close()


class SessionWriter:
    """Appends JSONL lines to one session file from a single writer thread.

    Opening takes an exclusive `fcntl.flock`; a second writer (another process) gets
    `SessionBusyError`. The lock is released by `close()` or by the process dying.
    """

    def __init__(self, path: Path, *, header: bytes | None = None) -> None:
        """Open `path` for appending; with `header`, create it (it must not exist yet:
        FileExistsError)."""
        self.path = path
        if header is not None:
            self._fd = _create(path, header)
        else:
            self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)
            try:
                fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(self._fd)
                raise SessionBusyError(
                    f"session {path.stem} is open in another avatar process; close it there first"
                ) from None
            self._repair_torn_tail()
        self._queue: queue.SimpleQueue[object] = queue.SimpleQueue()
        self._error: BaseException | None = None
        self._closed = False
        self._thread = threading.Thread(target=self._run, name=f"avatar-writer-{path.stem}")
        self._thread.daemon = True
        self._thread.start()
        _open_writers.add(self)

    def _repair_torn_tail(self) -> None:
        # A crash mid-write leaves a last line without its newline; appending straight after it
        # would glue the next entry onto the fragment. End the fragment so it stays one bad line.
        size = os.fstat(self._fd).st_size
        if size == 0:
            return
        with open(self.path, "rb") as f:
            f.seek(size - 1)
            if f.read(1) != b"\n":
                write_all(self._fd, b"\n")

    # -- producer side ----------------------------------------------------------------------

    def add(self, entry: BaseModel) -> None:
        """Queue one entry; returns at once (the line lands in order, soon)."""
        self.add_line(model_line(entry))

    def add_line(self, line: bytes) -> None:
        """Queue one already serialized line (must end with a newline)."""
        if self._closed:
            raise RuntimeError(f"session writer for {self.path.name} is closed")
        if self._error is not None:
            raise self._error
        self._queue.put(line)

    def flush(self, timeout: float | None = None) -> None:
        """Block until every line added so far is written to the file (not fsynced)."""
        self._barrier(fsync=False, timeout=timeout)

    def sync(self, timeout: float | None = None) -> None:
        """Block until every line added so far is written and fsynced."""
        self._barrier(fsync=True, timeout=timeout)

    async def async_sync(self) -> None:
        """`sync()` for async code: waits without blocking the event loop."""
        if self._closed:
            return
        import asyncio  # only async callers need it; listing sessions must not pay for it

        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()

        def done(error: BaseException | None) -> None:
            def settle() -> None:
                if future.done():
                    return
                if error is None:
                    future.set_result(None)
                else:
                    future.set_exception(error)

            with contextlib.suppress(RuntimeError):  # loop already closed
                loop.call_soon_threadsafe(settle)

        self._queue.put(_Barrier(True, done))
        await future

    def size(self) -> int:
        """The file's current size in bytes (after a flush, everything added so far)."""
        return os.fstat(self._fd).st_size

    def close(self) -> None:
        """Write and fsync what is queued, stop the thread, release the lock; idempotent."""
        if self._closed:
            return
        self._closed = True
        self._queue.put(_Barrier(True, None))
        self._queue.put(_STOP)
        self._thread.join()
        with contextlib.suppress(OSError):
            fcntl.flock(self._fd, fcntl.LOCK_UN)
        os.close(self._fd)

    @property
    def closed(self) -> bool:
        """True after `close()`."""
        return self._closed

    def _barrier(self, fsync: bool, timeout: float | None) -> None:
        if self._closed:
            return
        barrier = _Barrier(fsync, None)
        self._queue.put(barrier)
        if not barrier.done.wait(timeout):
            raise TimeoutError(f"session writer for {self.path.name} did not flush in time")
        if barrier.error is not None:
            raise barrier.error

    # -- writer thread ----------------------------------------------------------------------

    def _run(self) -> None:
        get = self._queue.get
        get_nowait = self._queue.get_nowait
        while True:
            item = get()
            pending: list[bytes] = []
            stop = False
            while True:
                if isinstance(item, bytes):
                    pending.append(item)
                elif item is _STOP:
                    stop = True
                    break
                else:
                    assert isinstance(item, _Barrier)
                    self._write(pending)
                    pending = []
                    self._settle(item)
                try:
                    item = get_nowait()
                except queue.Empty:
                    break
            self._write(pending)
            if stop:
                return

    def _write(self, lines: list[bytes]) -> None:
        if not lines or self._error is not None:
            return
        try:
            append_all(self._fd, b"".join(lines))  # whole lines or none: no torn tail
        except OSError as e:  # disk full, I/O error: surface it on the next add/flush
            self._error = e

    def _settle(self, barrier: _Barrier) -> None:
        error = self._error
        if error is None and barrier.fsync:
            try:
                os.fsync(self._fd)
            except OSError as e:
                error = e
        barrier.error = error
        barrier.done.set()
        if barrier.callback is not None:
            barrier.callback(error)


def _create(path: Path, header: bytes) -> int:
    """A new session file holding `header`, open for appending and locked. It appears whole:
    the header is written to a file of another name (a dot-file, which no listing reads) and
    linked into place, so a full disk or a crash never leaves an empty session file behind;
    where the filesystem has no hard links, a file that got no header is removed again."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.new")
    fd = os.open(tmp, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # (made just now: nobody else has it)
        write_all(fd, header)
        try:
            os.link(tmp, path)  # (FileExistsError when the id is taken)
            return fd
        except FileExistsError:
            raise
        except OSError:  # no hard links here (a FAT or some FUSE filesystem)
            pass
    except OSError as e:
        os.close(fd)
        if e.filename is None or str(e.filename) == str(tmp):  # (say which session it was)
            raise OSError(e.errno, e.strerror, str(path)) from None
        raise
    except BaseException:
        os.close(fd)
        raise
    finally:
        tmp.unlink(missing_ok=True)
    os.close(fd)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        write_all(fd, header)
    except BaseException:
        os.close(fd)
        path.unlink(missing_ok=True)
        raise
    return fd
