"""Traces and reports at fsspec URLs: ``s3://``, ``gs://``, ``az://``, ``http(s)://``, ``file://``...

    is_url(text) -> bool                        "scheme://..." (or fsspec's "a::b://..."); no import
    parse_options(["KEY=VALUE", ...]) -> dict   the ``--storage-option`` flags
    filesystem(url, options) -> (fs, path)      fsspec's file system for the URL
    open_url(url, options) -> Reader            the object's bytes, streamed (``read(n)``)
    describe(url, error) -> (problem, fix)      one line for what the store (or the network) said

fsspec is imported only here and only once a URL is given, so the light install and local
paths never import it. Storage options come from, in order of precedence, the ``options``
passed (the CLI's ``--storage-option``), fsspec's environment variables
(``FSSPEC_<PROTOCOL>_<OPTION>``, e.g. ``FSSPEC_S3_ENDPOINT_URL``) and each back end's own
(``AWS_*`` for s3fs, ``GOOGLE_APPLICATION_CREDENTIALS`` for gcsfs, ``AZURE_STORAGE_*``...).
Nothing here knows what a trace is: :mod:`traceprobe.load` reads and lists, :mod:`traceprobe.output`
writes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from traceprobe.errors import TraceError, UsageError

_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*(://|::)")
GLOB_CHARS = frozenset("*?[")
# the package that gives fsspec a protocol, as pip installs it
EXTRAS = {
    "s3": "pip install 'traceprobe[s3]' (s3fs)",
    "s3a": "pip install 'traceprobe[s3]' (s3fs)",
    "gs": "pip install 'traceprobe[gcs]' (gcsfs)",
    "gcs": "pip install 'traceprobe[gcs]' (gcsfs)",
    "az": "pip install adlfs",
    "abfs": "pip install adlfs",
    "abfss": "pip install adlfs",
    "http": "pip install aiohttp",
    "https": "pip install aiohttp",
}
CREDENTIALS = (
    "check the credentials the store sees (AWS_ACCESS_KEY_ID/AWS_PROFILE, "
    "GOOGLE_APPLICATION_CREDENTIALS, AZURE_STORAGE_*, or --storage-option key=... secret=...) "
    "and that they may read this object"
)


def is_url(path: object) -> bool:
    """Whether ``path`` is a URL for fsspec (a string with a protocol), not a local path."""
    return isinstance(path, str) and _URL.match(path) is not None


def protocol(url: str) -> str:
    """The protocol that reads the data: ``s3`` for ``s3://b/k`` (the last of a chain)."""
    last = url.split("::")[-1]
    return last.split("://", 1)[0].lower() if "://" in last else "file"


def has_glob(url: str) -> bool:
    return any(c in GLOB_CHARS for c in url.split("://", 1)[-1])


def parse_options(items: Iterable[str]) -> dict[str, Any]:
    """``["KEY=VALUE", ...]`` as storage options. VALUE is read as JSON when it is JSON
    (``true``, ``5``, ``{"read_timeout": 60}``), else kept as text; a dotted KEY nests
    (``client_kwargs.region_name=eu-west-1``)."""
    out: dict[str, Any] = {}
    for item in items:
        key, eq, text = item.partition("=")
        key = key.strip()
        if not eq or not key:
            raise UsageError(f"--storage-option {item!r}: give KEY=VALUE, "
                             "e.g. --storage-option endpoint_url=http://127.0.0.1:9000")
        try:
            value: Any = json.loads(text)
        except ValueError:
            value = text
        *path, last = key.split(".")
        node = out
        for part in path:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise UsageError(f"--storage-option {item!r}: {part} is given twice, "
                                 "as a value and as a group of options")
        node[last] = value
    return out


def filesystem(url: str, options: Mapping[str, Any] | None = None) -> tuple[Any, str]:
    """(fsspec file system, its path for the URL); a missing back end is one TraceError."""
    try:
        import fsspec.core
    except ImportError:
        raise TraceError(url, "reading URLs needs fsspec, which is not installed",
                         EXTRAS.get(protocol(url), "pip install fsspec")) from None
    try:
        return fsspec.core.url_to_fs(url, **dict(options or {}))
    except Exception as e:  # the back end's own: ImportError, ValueError, TypeError
        problem, fix = describe(url, e)
        raise TraceError(url, problem, fix) from None


def error(url: str, e: BaseException) -> TraceError:
    problem, fix = describe(url, e)
    return TraceError(url, problem, fix)


def describe(url: str, e: BaseException) -> tuple[str, str]:
    """(problem, fix) for an exception from fsspec or its back end, in one line each.

    Told apart by the standard classes the back ends raise (s3fs and gcsfs turn "no such
    key/bucket" into FileNotFoundError, "403" into PermissionError) and, for the network's,
    by name (botocore's ``ConnectTimeoutError``, aiohttp's ``ServerTimeoutError``), so that
    no back end is imported to classify its errors."""
    why = _one_line(e)
    names = {c.__name__ for c in type(e).__mro__}
    proto = protocol(url)
    if isinstance(e, ImportError) or "Protocol not known" in why:
        return (f"no fsspec back end for {proto}:// here ({why})",
                EXTRAS.get(proto, "install the fsspec back end for this protocol"))
    if isinstance(e, TypeError) and "unexpected keyword" in why:
        return (f"a storage option is not one this store takes ({why})",
                "check the --storage-option names against the back end's documentation")
    if any(w in n for n in names for w in ("Payload", "IncompleteRead", "ContentLength",
                                             "ResponseStreaming")):
        return (f"the connection ended before the whole object arrived ({why})",
                "retry; check the network and the endpoint")
    if isinstance(e, TimeoutError) or any("Timeout" in n for n in names):
        return (f"timed out talking to the store ({why})",
                "check the network and the endpoint, or allow more time (s3: "
                "--storage-option config_kwargs='{\"read_timeout\": 120}')")
    status = getattr(e, "status", None) or getattr(e, "code", None)
    if isinstance(e, PermissionError) or status in (401, 403):
        return f"access denied ({why})", CREDENTIALS
    if isinstance(e, FileNotFoundError) or status == 404:
        low = why.lower()
        if "bucket" in low and ("not exist" in low or "nosuchbucket" in low):
            return (f"no such bucket {_bucket(url)!r}",
                    "check the bucket's name, and the endpoint (--storage-option "
                    "endpoint_url=...) for a server other than the cloud's own")
        return "no such object or prefix", "check the URL (a prefix names a folder of traces)"
    if isinstance(e, ConnectionError) or any("Connect" in n for n in names):
        return (f"cannot connect to the store ({why})",
                "check the endpoint (--storage-option endpoint_url=...) and the network")
    return (f"cannot read it ({type(e).__name__}: {why})",
            "check the URL, the credentials and the --storage-option values")


def _one_line(e: BaseException) -> str:
    text = " ".join(str(e).split()) or type(e).__name__
    return text if len(text) <= 200 else text[:197] + "..."


def _bucket(url: str) -> str:
    rest = url.split("::")[-1].split("://", 1)[-1]
    return rest.split("/", 1)[0]


class Reader:
    """An object opened for reading: ``read(n)`` as a file's, errors as one TraceError.

    A read that fails part way (a reset connection, a timeout) says how far it got; a store
    that ends the data before the size it announced (a connection closed early) raises
    rather than hand on a short object, which would look like a trace cut short."""

    def __init__(self, url: str, f: Any) -> None:
        self.url = url
        self._f = f
        self.size: int | None = getattr(f, "size", None)
        self.done = 0

    def read(self, n: int) -> bytes:
        try:
            block = self._f.read(n)
        except Exception as e:
            problem, fix = describe(self.url, e)
            if self.done:
                problem = f"the read stopped after {self.done:,} bytes: {problem}"
                fix = f"retry; {fix}"
            raise TraceError(self.url, problem, fix) from None
        self.done += len(block)
        if not block and self.size is not None and self.done < self.size:
            raise TraceError(
                self.url,
                f"the store sent {self.done:,} of the object's {self.size:,} bytes "
                "(the connection ended early)",
                "retry; check the network and the endpoint",
            )
        return block

    def close(self) -> None:
        try:
            self._f.close()
        except Exception:  # noqa: BLE001 - nothing to report once the data is read
            pass

    def __enter__(self) -> Reader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_url(url: str, options: Mapping[str, Any] | None = None) -> Reader:
    """The object at ``url``, opened for streamed reading (fsspec's buffered file: the back
    end's block size at a time, never the whole object before the first bytes)."""
    fs, path = filesystem(url, options)
    try:
        f = fs.open(path, "rb")
    except IsADirectoryError:
        raise TraceError(url, "is a prefix (a folder), not a trace object",
                         "use load_many() or find_traces() for a prefix") from None
    except Exception as e:
        raise error(url, e) from None
    return Reader(url, f)
