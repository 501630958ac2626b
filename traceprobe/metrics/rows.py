"""Many rows of one frozen dataclass at once, from columns (for the ``*_by_window`` metrics).

A frozen dataclass's ``__init__`` sets each field through ``object.__setattr__`` (a few µs
for a dozen fields); 10,000 windows make tens of thousands of rows, so that alone would
cost most of a windowed metric's budget. :func:`rows_of` fills each new instance's
``__dict__`` with the given fields instead, which gives the same instance ``__init__``
would (same fields, equality, hash, repr; tested), at about a third of the cost. It is
only for plain frozen dataclasses: no ``__post_init__``, no slots, every field given.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import fields
from typing import Any, TypeVar

T = TypeVar("T")


def rows_of(cls: type[T], **columns: Sequence[Any]) -> list[T]:
    """``[cls(**{k: columns[k][i] for k in columns}) for i]``: one instance per position.

    Every field of ``cls`` must be given (defaults are not applied), all columns of one
    length."""
    names = [f.name for f in fields(cls)]  # type: ignore[arg-type]
    if sorted(names) != sorted(columns):
        raise TypeError(f"{cls.__name__}: give exactly its fields {names}, not {list(columns)}")
    if hasattr(cls, "__post_init__") or hasattr(cls, "__slots__"):
        raise TypeError(f"{cls.__name__} needs its own __init__")
    sizes = {len(c) for c in columns.values()}
    if len(sizes) > 1:
        raise ValueError(f"{cls.__name__}: columns differ in length: {sorted(sizes)}")
    keys = list(columns)
    new, put = object.__new__, object.__setattr__
    out = []
    for values in zip(*columns.values(), strict=True):
        row = new(cls)
        put(row, "__dict__", dict(zip(keys, values, strict=True)))
        out.append(row)
    return out
