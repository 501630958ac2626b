"""Exact microsecond JSON numbers to int64 nanoseconds.

``us_to_ns(tokens) -> (ns, status)`` converts a batch of JSON numbers, given as
their text (``msgspec.Raw`` or ``bytes``), with integer arithmetic: a float64
cannot hold ``1712195495519689.047`` µs to the nanosecond (its step there is
0.25 µs). One rounding rule everywhere: digits beyond the nanosecond round half
away from zero (``decimal.ROUND_HALF_UP``). Kineto writes at most three
fraction digits, so real traces convert without rounding.

Plain decimals (digits with an optional fraction) go through numpy in bulk;
anything else (signs, exponents, quoted numbers, values beyond int64 ns) goes
through ``decimal.Decimal`` one by one, so both paths give the same answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from functools import lru_cache
from typing import Any

import numpy as np

_MAX_INT_DIGITS = 18  # fits int64 before scaling; larger values are range-checked
_MAX_US = (2**63 - 1 - 999) // 1000
_CHUNK = 1 << 16
_NS_MIN, _NS_MAX = -(2**63) + 1, 2**63 - 1
_MAX_DECIMAL_US = Decimal(10) ** 17  # above int64 ns (9.2e15 µs); keeps quantize in range


def us_to_ns(tokens: Sequence[Any]) -> tuple[np.ndarray, np.ndarray]:
    """Exact microsecond JSON numbers (as text) to int64 nanoseconds.

    ``tokens`` are bytes-like (``msgspec.Raw``, ``bytes``) holding one JSON value
    each. Returns ``(ns, status)``: status 0 = converted, 1 = absent (empty or
    ``null``), 2 = not a number (then ns is 0). Plain decimals (digits with an
    optional fraction) are parsed with numpy in bulk; anything else (signs,
    exponents, quoted numbers, values beyond int64 ns) goes through
    ``decimal.Decimal`` one by one. Beyond-ns digits round half away from zero.
    A value beyond int64 nanoseconds (about ±9.2e15 µs) has status 2, like junk.
    """
    n = len(tokens)
    ns = np.zeros(n, np.int64)
    status = np.zeros(n, np.int8)
    if n == 0:
        return ns, status
    buf = b"\n".join(tokens)
    u = np.frombuffer(buf, np.uint8)
    nl = np.flatnonzero(u == 10)
    if len(nl) != n - 1:  # a token with a newline inside (an object or array value)
        for i in range(n):
            ns[i], status[i] = _slow(bytes(tokens[i]))
        return ns, status
    starts = np.empty(n, np.int64)
    starts[0] = 0
    starts[1:] = nl + 1
    lens = np.empty(n, np.int64)
    lens[:-1] = nl
    lens[-1] = len(u)
    lens -= starts
    slow = lens == 0
    # a byte other than a digit, '.' or the separator sends its token to the slow path
    other = np.flatnonzero(((u - np.uint8(48)) > 9) & (u != 46) & (u != 10))
    slow[np.searchsorted(starts, other, "right") - 1] = True
    dotpos = lens.copy()  # offset of the '.' in each token, or its length if none
    dots = np.flatnonzero(u == 46)
    if len(dots):
        owner = np.searchsorted(starts, dots, "right") - 1
        slow |= np.bincount(owner, minlength=n) > 1
        dotpos[owner] = dots - starts[owner]
    slow |= (dotpos > _MAX_INT_DIGITS) | (dotpos == 0)
    fast = np.flatnonzero(~slow)
    if len(fast):
        width = int(dotpos[fast].max())
        padded = np.concatenate([np.full(width, 48, np.uint8), u, np.full(5, 48, np.uint8)])
        windows = np.lib.stride_tricks.sliding_window_view(padded, width + 5)
        for lo in range(0, len(fast), _CHUNK):
            rows = fast[lo : lo + _CHUNK]
            ns[rows], big = _fast(windows, width, starts[rows], lens[rows], dotpos[rows])
            slow[rows[big]] = True
    for i in np.flatnonzero(slow).tolist():
        ns[i], status[i] = _slow(bytes(tokens[i]))
    return ns, status


def _fast(
    windows: np.ndarray, width: int, starts: np.ndarray, lens: np.ndarray, dotpos: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Plain decimals, aligned on the dot: ``width`` integer digits, the dot, 4 fraction digits.

    Returns the ns and a mask of values too large for int64 ns (left to the slow path).
    """
    digits = windows[starts + dotpos] - np.uint8(48)  # row i: the bytes around token i's dot
    digits *= _digit_masks(width)[dotpos * 5 + np.clip(lens - dotpos - 1, 0, 4)]
    value = np.zeros(len(starts), np.int64)
    for j in range(width):  # Horner, column by column
        value *= 10
        value += digits[:, j]
    frac = digits[:, width + 1] * np.int64(100) + digits[:, width + 2] * np.int64(10)
    frac += digits[:, width + 3]
    big = value > _MAX_US
    value[big] = 0
    return value * 1000 + frac + (digits[:, width + 4] >= 5), big


@lru_cache(maxsize=32)
def _digit_masks(width: int) -> np.ndarray:
    """Row ``5 * d + f``: which of the ``width + 5`` bytes around the dot are digits of a
    token with ``d`` integer digits and ``f`` fraction digits (f = 4: four or more)."""
    col = np.arange(width + 5)
    int_digits = (col >= width - np.arange(width + 1)[:, None]) & (col < width)  # by d
    frac_digits = (col > width) & (col - width <= np.arange(5)[:, None])  # by f
    masks = (int_digits[:, None, :] | frac_digits[None, :, :]).reshape(-1, width + 5)
    out = masks.astype(np.uint8)
    out.flags.writeable = False  # shared between calls
    return out


def _slow(text: bytes) -> tuple[int, int]:
    t = text.strip()
    if not t or t == b"null":
        return 0, 1
    if t[:1] == b'"' and t[-1:] == b'"':  # a number written as a JSON string
        t = t[1:-1].strip()
    try:
        d = Decimal(t.decode("ascii"))
    except (InvalidOperation, UnicodeDecodeError, ValueError):
        return 0, 2
    if not d.is_finite() or abs(d) > _MAX_DECIMAL_US:  # beyond int64 ns anyway
        return 0, 2
    v = int((d * 1000).quantize(Decimal(1), rounding=ROUND_HALF_UP))
    if not _NS_MIN <= v <= _NS_MAX:
        return 0, 2
    return v, 0
