"""Many rows of one frozen dataclass at once, from columns (for the ``*_by_window`` metrics).

A frozen dataclass's ``__init__`` sets each field through ``object.__setattr__``, a Python
call per field; 10,000 windows make tens of thousands of rows, so that alone would cost a
good part of a windowed metric's budget. :func:`rows_of` builds the rows with C-level loops
instead: one dict of the fields per row, set as a bare instance's ``__dict__``. That is the
instance ``__init__`` would make (same fields, equality, hash, repr, immutability; tested),
in about half the time. It is only for plain frozen dataclasses: no ``__post_init__``, no
slots, every field given.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import fields
from itertools import repeat
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
    n = sizes.pop() if sizes else 0
    # C-level loops (map), no Python bytecode per row: one dict of the fields per row, one
    # bare instance per row, then each instance's __dict__ set (object.__setattr__ passes
    # by the frozen class's refusal, as dataclasses' own __init__ does)
    fields_ = map(dict, map(zip, repeat(keys), zip(*columns.values(), strict=True)))
    out = list(map(object.__new__, repeat(cls, n)))
    deque(map(object.__setattr__, out, repeat("__dict__"), fields_), maxlen=0)
    return out
