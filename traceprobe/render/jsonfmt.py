"""The report as JSON: the schema object itself, keys in schema order, never NaN.

``render(report, top=None) -> str``. Keys keep the order ``Report.to_dict()`` gave
them (the order of docs/REPORT_SCHEMA.md), so diffs of two reports line up. NaN and
infinities, which JSON has no spelling for, become ``null`` (a figure that is
undefined), and numpy scalars become plain numbers. With ``top`` the
``top_kernels``/``top_ops`` lists are cut to that many rows, as in the other formats.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

_TOP_LISTS = ("top_kernels", "top_ops")


def render(report: Mapping[str, Any], *, top: int | None = None, color: bool = False) -> str:
    del color
    return json.dumps(clean(report, top=top), indent=2, ensure_ascii=False, allow_nan=False) + "\n"


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
