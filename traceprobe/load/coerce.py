"""Untyped JSON values to numpy columns: the value rules of loading.

Kineto writes the same field with different JSON types (``"stream": 7`` on a
CUDA kernel, ``"stream": "0x0"`` on a HIP call, ``"tid": "stream 7"`` in 2021
traces), so :class:`traceprobe.reader.Args` leaves them untyped and these
functions turn a batch of them into int64 arrays in one go, falling back to one
value at a time only for a batch that holds something unusual:

* :func:`int64` — ints, numeric strings (``"7"``, ``"0x0"``) and a trailing
  number (``"stream 7"``); ``None``, bools and junk become ``missing``.
* :func:`with_fallback` — per row, the first of several sources that holds a number.
* :func:`ids` — pid/tid: ints stay, digit strings become ints, other strings a
  stable hash (``2**32 + crc32``, the same in every run, unlike ``hash()``).
* :func:`encode` — strings to int32 codes into a growing lookup table.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Callable
from typing import Any

import numpy as np

_TRAILING_INT = re.compile(r"(-?\d+)\s*$")
_DIGITS = re.compile(r"-?\d{1,18}")
_MAX_TEXT = 64  # characters of a string that may hold a number ("stream 7", "0x1f")


def encode(
    values: list[Any], lut: dict[Any, int], on_new: Callable[[Any], None] | None = None
) -> np.ndarray:
    """Codes of ``values`` in ``lut``, extending it with values not seen before."""
    try:
        return np.fromiter(map(lut.__getitem__, values), np.int32, len(values))
    except KeyError:
        for v in dict.fromkeys(values):
            if v not in lut:
                lut[v] = len(lut)
                if on_new is not None:
                    on_new(v)
        return np.fromiter(map(lut.__getitem__, values), np.int32, len(values))


def int64(values: list[Any], missing: int = -1) -> np.ndarray:
    """Ints (or numeric strings) to int64; None and junk become ``missing``.

    Only whole numbers count: ``0.9`` is junk, not device 0, and a list is junk, not
    a row of a 2-D array."""
    arr = _ints(values)
    if arr is not None:
        return arr
    absent = values.count(None)
    if absent == len(values):
        return np.full(len(values), missing, np.int64)
    if absent:
        arr = _ints([missing if v is None else v for v in values])
        if arr is not None:
            return arr
    return np.array([to_int(v, missing) for v in values], dtype=np.int64)


def without_bools(values: list[Any], arr: np.ndarray, missing: int = -1) -> np.ndarray:
    """``arr`` (:func:`int64` of ``values``) with ``missing`` where a value is a bool:
    numpy reads ``true`` among ints as 1 (``args.device: true`` is no GPU 1)."""
    if bool in set(map(type, values)):
        arr = arr.copy()
        arr[np.array([type(v) is bool for v in values])] = missing
    return arr


def _ints(values: list[Any]) -> np.ndarray | None:
    """``values`` as int64 when every one is a plain int within int64 (the common case)."""
    try:
        arr = np.array(values)
    except (ValueError, OverflowError):  # ragged nested lists
        return None
    if arr.ndim != 1 or arr.dtype.kind != "i":
        return None
    return arr.astype(np.int64, copy=False)


def to_int(v: Any, missing: int = -1) -> int:
    """One value by the rules of :func:`int64`."""
    if isinstance(v, bool) or v is None:
        return missing
    if isinstance(v, int):
        return v if -(2**63) < v < 2**63 else missing
    if isinstance(v, float):
        return int(v) if v.is_integer() and abs(v) < 2**63 else missing
    if isinstance(v, str):
        s = v.strip()
        if len(s) > _MAX_TEXT:  # no number fits; and the search below would be quadratic
            return missing
        try:
            n = int(s, 0)  # "7", "0x0"
        except ValueError:
            m = _TRAILING_INT.search(s)  # "stream 7", "GPU 0"
            if not m:
                return missing
            n = int(m.group(1))
        return n if -(2**63) < n < 2**63 else missing
    return missing


def with_fallback(first: list[Any], *others: list[Any]) -> np.ndarray:
    """Per row, the first of several sources that holds a number (else -1)."""
    out = int64(first)
    for other in others:
        gap = np.flatnonzero(out < 0)
        if not len(gap):
            break
        out[gap] = int64([other[i] for i in gap.tolist()])
    return out


def ids(values: list[Any]) -> np.ndarray:
    """pid/tid: ints stay, digit strings become ints, other values a stable hash."""
    arr = _ints(values)
    if arr is not None:
        return arr
    memo: dict[Any, int] = {}

    def one(v: Any) -> int:
        key = v if isinstance(v, (str, int, float)) else str(v)  # lists are not hashable
        if key not in memo:
            memo[key] = str_id(key)
        return memo[key]

    return np.array(
        [v if type(v) is int and -(2**63) < v < 2**63 else one(v) for v in values],
        dtype=np.int64,
    )


def str_id(v: Any) -> int:
    """A pid/tid that is not an int: its number if it is one, else a stable hash."""
    s = str(v).strip()
    if _DIGITS.fullmatch(s):
        return int(s)
    return (1 << 32) + zlib.crc32(s.encode())  # stable across runs, unlike hash()
