"""File bytes in pieces, gunzipped when they start with the gzip magic: the first stage.

    read_chunks(path) -> Iterator[bytes]      raises on a gzip stream cut short
    FileChunks(path)                          the same, iterable; a cut sets ``cut`` instead
    FileChunks(url, storage_options)          an object at an fsspec URL, streamed the same way

Plain or gzip is told apart by the magic bytes, not the name. Every failure to open or
read is one :class:`~traceprobe.errors.TraceError` that names the file, the problem and
the fix (a missing file, a loop of symbolic links, a name too long, permissions). A URL
(``s3://...``, see :mod:`traceprobe.urls`) is opened through fsspec and read in the same
pieces, gunzipped by the same code; a local path never touches fsspec.
:mod:`.read` decodes the JSON these pieces hold.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from traceprobe.errors import TraceError
from traceprobe.load.folders import os_error
from traceprobe.urls import is_url, open_url

GZIP_MAGIC = b"\x1f\x8b"
REEXPORT = (
    "re-export the trace with torch.profiler's export_chrome_trace or tensorboard_trace_handler"
)
BATCH_BYTES = 1 << 20  # JSON text decoded at a time (bounds the memory for structs)
READ_BYTES = 1 << 16  # compressed bytes read at a time (about 1 MB of JSON)

try:  # ISA-L inflates about 3x as fast as zlib, with the same interface; optional
    from isal import isal_zlib as _inflate

    _INFLATE_ERRORS: tuple[type[Exception], ...] = (zlib.error, _inflate.error)  # type: ignore[assignment]
except ImportError:
    _inflate = zlib  # type: ignore[misc, unused-ignore]
    _INFLATE_ERRORS = (zlib.error,)


def read_chunks(
    path: str | os.PathLike[str], storage_options: Mapping[str, Any] | None = None
) -> Iterator[bytes]:
    """The file's bytes in pieces, gunzipped when they start with the gzip magic.

    A gzip stream that ends early raises (use :class:`FileChunks` to salvage it)."""
    chunks = FileChunks(path, storage_options)
    yield from chunks
    if chunks.cut is not None:
        raise chunks.cut


def _read(f: Any, p: Path | str, n: int) -> bytes:
    try:
        return f.read(n)
    except OSError as e:
        raise TraceError(
            p, f"cannot read the file ({e.strerror or e})", "check the file and the disk"
        ) from None


class FileChunks:
    """The file's bytes in pieces, gunzipped when they start with the gzip magic.

    A gzip stream that ends early (a killed writer, a partial copy) does not raise:
    iteration ends with what it held and ``cut`` is the error it would have been, so
    :class:`EventStream` can keep the complete events. Trailing bytes after the last
    gzip member that are not another member (NUL padding, junk) are ignored, as
    ``gzip -dc`` does, and counted in ``trailing``.
    """

    def __init__(
        self, path: str | os.PathLike[str], storage_options: Mapping[str, Any] | None = None
    ) -> None:
        self.path: Path | str = str(path) if is_url(path) else Path(path)
        self.storage_options = storage_options
        self.cut: TraceError | None = None
        self.trailing = 0

    def __iter__(self) -> Iterator[bytes]:
        p = self.path
        f = open_url(p, self.storage_options) if isinstance(p, str) else self._open(p)
        with f:
            first = _read(f, p, READ_BYTES)
            if not first:
                raise TraceError(
                    p,
                    "the file is empty (0 bytes)",
                    f"the profiler probably stopped before writing; {REEXPORT}",
                )
            if first[:2] == GZIP_MAGIC:
                yield from self._gunzip(first, f)
                return
            yield first
            while block := _read(f, p, BATCH_BYTES):
                yield block

    @staticmethod
    def _open(p: Path) -> Any:
        try:
            f = p.open("rb")
        except FileNotFoundError as e:
            raise (os_error(p, e) or TraceError(p, "no such file", "check the path")) from None
        except IsADirectoryError:
            raise TraceError(
                p,
                "is a directory, not a trace file",
                "use load_many() or find_traces() for a directory",
            ) from None
        except PermissionError:
            raise TraceError(
                p, "cannot read the file (permission denied)", "check the file's permissions"
            ) from None
        except OSError as e:
            known = os_error(p, e)
            if known is not None:
                raise known from None
            raise TraceError(
                p, f"cannot read the file ({e.strerror or e})", "check the file and the disk"
            ) from None
        return f

    def _gunzip(self, first: bytes, f: Any) -> Iterator[bytes]:
        p = self.path

        def corrupt(why: str) -> TraceError:
            return TraceError(
                p,
                f"the gzip data is {why}",
                f"copy the file again or {REEXPORT}; `gzip -t FILE` tests it",
            )

        d = _inflate.decompressobj(wbits=31)
        block, produced, done = first, 0, False
        while block:
            if done:  # after the last member: trailing bytes, ignored as gzip -dc does
                self.trailing += len(block)
                block = _read(f, p, READ_BYTES)
                continue
            try:
                out = d.decompress(block)
                while d.eof and d.unused_data:  # concatenated gzip members, or trailing bytes
                    rest = d.unused_data
                    if rest[:2] != GZIP_MAGIC:
                        self.trailing += len(rest)
                        done = True
                        break
                    d = _inflate.decompressobj(wbits=31)
                    out += d.decompress(rest)
            except _INFLATE_ERRORS as e:
                raise corrupt(f"corrupt ({e})") from None
            if out:
                produced += len(out)
                yield out
            block = _read(f, p, READ_BYTES)
        if not d.eof:
            try:
                out = d.flush()
            except _INFLATE_ERRORS:  # pragma: no cover - flush of a cut stream gives what it has
                out = b""
            if out:
                produced += len(out)
                yield out
            self.cut = corrupt(f"truncated (it ends after {produced:,} bytes of JSON)")
        if not produced:
            if self.cut is not None:
                raise self.cut
            raise TraceError(
                p,
                "the gzip file holds no data",
                f"the profiler probably stopped before writing; {REEXPORT}",
            )
