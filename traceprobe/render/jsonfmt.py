"""The report as JSON: the schema object itself, keys in schema order, never NaN.

``render(report, top=None) -> str``. Keys keep the order ``Report.to_dict()`` gave
them (the order of docs/REPORT_SCHEMA.md), so diffs of two reports line up. NaN and
infinities, which JSON has no spelling for, become ``null`` (a figure that is
undefined), and numpy scalars become plain numbers. With ``top`` the
``top_kernels``/``top_ops`` lists are cut to that many rows, as in the other formats.

msgspec encodes (a ``--step all`` report of 10,000 steps is ~70 MB: 0.3 s, where the
standard library's encoder took 8 s). ``pieces(report, top=None)`` gives the same text as
bytes, in pieces, with the sub-reports of ``steps`` converted and encoded one at a time, so
that a writer never holds the whole text or all the steps' dicts
(:func:`traceprobe.output.write_pieces`). Numbers are spelled as the shortest text that reads
back to the same float, as Python's ``repr`` does, but exponents as ``1e-7`` (``json``
writes ``1e-07``): the same values for any JSON reader.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import msgspec

from traceprobe.report.model import MULTI_SCHEMA

_TOP_LISTS = ("top_kernels", "top_ops")
_NESTED = ("steps", "traces")  # where reports hold reports


def render(report: Any, *, top: int | None = None, color: bool = False) -> str:
    """The report as JSON: a Report, MultiReport, list or ranks summary by :func:`as_dict`
    (``to_dict``: the one place a report becomes the JSON dict), a dict as it is."""
    del color
    report = as_dict(report)
    data = report if top is None else _cut(report, top)
    raw = msgspec.json.encode(data, enc_hook=_hook)  # NaN and infinities: null
    return msgspec.json.format(raw, indent=2).decode() + "\n"


_PLACE = "\u0000steps\u0000"  # where the steps go in the encoded head (no report holds NUL)
_ITEM_INDENT = b"\n    "  # a step object's lines inside the top-level "steps" list


def pieces(report: Any, *, top: int | None = None) -> Iterator[bytes]:
    """``render(as_dict(report), top=top)`` as UTF-8 bytes, byte for byte, in pieces.

    A :class:`~traceprobe.report.model.Report` with steps is written as its head (the
    report without them) and then one step at a time: each step's dict is made, cut to
    ``top``, encoded and indented one level deeper, as the whole text would have it. Any
    other report is rendered whole."""
    step_dicts = getattr(report, "step_dicts", None)
    if not getattr(report, "steps", None) or not callable(step_dicts):
        yield render(as_dict(report), top=top).encode()
        return
    head = report.head_dict()
    head["steps"] = _PLACE
    text = render(head, top=top).encode()
    mark = msgspec.json.encode(_PLACE)
    before, after = text.split(mark)
    yield before + b"["
    sep = _ITEM_INDENT
    for step in step_dicts():
        data = step if top is None else _cut(step, top)
        raw = msgspec.json.format(msgspec.json.encode(data, enc_hook=_hook), indent=2)
        yield sep + raw.replace(b"\n", _ITEM_INDENT)
        sep = b"," + _ITEM_INDENT
    yield b"\n  ]" + after


def as_dict(report: Any) -> dict[str, Any]:
    """The schema dict of ``report``: a dict as is (a ranks summary's ``rank_report``
    object by its ``to_dict``), ``.to_dict()`` of an object, and a list of either as the
    several-traces object (without cross-trace figures)."""
    if isinstance(report, Mapping):
        rr = report.get("rank_report")
        if rr is not None and not isinstance(rr, Mapping):
            return {**report, "rank_report": as_dict(rr)}
        return dict(report)
    to_dict = getattr(report, "to_dict", None)
    if callable(to_dict):
        return as_dict(to_dict())
    if isinstance(report, Sequence) and not isinstance(report, (str, bytes)):
        return {"schema": MULTI_SCHEMA, "traces": [as_dict(r) for r in report], "cross_trace": None}
    raise TypeError(f"not a report: {type(report).__name__}")


def _cut(report: Mapping[str, Any], top: int) -> dict[str, Any]:
    """``report`` with its (and its nested reports') top lists cut to ``top`` rows."""
    out = dict(report)
    for k in _TOP_LISTS:
        if isinstance(out.get(k), list):
            out[k] = out[k][:top]
    for k in _NESTED:
        if isinstance(out.get(k), list):
            out[k] = [_cut(r, top) if isinstance(r, Mapping) else r for r in out[k]]
    return out


def _hook(value: Any) -> Any:
    """What msgspec cannot encode itself: numpy scalars and arrays, other mappings."""
    if isinstance(value, Mapping):
        return {str(k): v for k, v in value.items()}
    item = getattr(value, "item", None)
    if callable(item) and getattr(value, "ndim", 0) == 0:
        return item()
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"cannot put {type(value).__name__} into a report: {value!r}")


def clean(value: Any, *, top: int | None = None) -> Any:
    """A JSON-safe copy: NaN/inf -> None, numpy -> Python, tuples -> lists, top lists cut."""
    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            if top is not None and k in _TOP_LISTS and isinstance(v, list):
                v = v[:top]
            out[str(k)] = clean(v, top=top)
        return out
    if isinstance(value, (list, tuple)):
        return [clean(v, top=top) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value) if math.isfinite(value) else None
    item = getattr(value, "item", None)  # numpy scalars
    if callable(item):
        return clean(item(), top=top)
    if hasattr(value, "tolist"):  # numpy arrays
        return clean(value.tolist(), top=top)
    raise TypeError(f"cannot put {type(value).__name__} into a report: {value!r}")
