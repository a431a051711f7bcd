"""A small, valid image for tests that attach one (a PNG built with the standard library)."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path


def png_bytes(width: int = 4, height: int = 3) -> bytes:
    """A real PNG of `width` x `height` red pixels."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    rows = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def write_png(path: Path) -> bytes:
    """Write a PNG at `path`; its bytes."""
    data = png_bytes()
    path.write_bytes(data)
    return data
