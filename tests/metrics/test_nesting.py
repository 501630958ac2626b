"""Parents and self times of nested ops (metrics/nesting.py) against the stack walk of its
docstring, one op at a time: small hypothesis cases (few levels of the sparse table, odd and
even) and long threads (many levels, where the table keeps only its even levels)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from hyp import examples
from traceprobe.metrics.nesting import enclosing, parents, self_times


def stack_parents(start: list[int], end: list[int], thread: list[int]) -> list[int]:
    """The docstring's loop: ops in (thread, start, longer first, row) order; pop the stack
    while its top ends at or before the op starts; the top is the parent when it encloses the
    op's end (for :func:`parents`), or whatever it is (for :func:`enclosing`)."""
    order = sorted(range(len(start)), key=lambda i: (thread[i], start[i], -end[i], i))
    out, loose = [-1] * len(start), [-1] * len(start)
    stack: list[int] = []
    for k, i in enumerate(order):
        if k and thread[order[k - 1]] != thread[i]:
            stack = []
        while stack and end[stack[-1]] <= start[i]:
            stack.pop()
        if stack:
            loose[i] = stack[-1]
            if end[i] <= end[stack[-1]]:
                out[i] = stack[-1]
        stack.append(i)
    return out, loose


ops = st.lists(st.tuples(st.integers(0, 40), st.integers(0, 12), st.integers(0, 2)),
               max_size=40)


@settings(max_examples=examples(300), deadline=None)
@given(ops)
def test_parents_are_the_stack_walks(rows) -> None:
    """GIVEN ops of a few threads, nested, crossing, equal or of zero length WHEN finding each
    op's parent (and the enclosing event, its depth, the self times) THEN they are the stack
    walk's, one op at a time."""
    s = [a for a, _, _ in rows]
    e = [a + d for a, d, _ in rows]
    t = [k for _, _, k in rows]
    want, loose = stack_parents(s, e, t)
    S, E, T = (np.array(x, np.int64) for x in (s, e, t))
    assert parents(S, E, [T]).tolist() == want
    par, depth = enclosing(S, E, [T])
    assert par.tolist() == loose
    for i in range(len(s)):
        d, j = 0, loose[i]
        while j >= 0:
            d, j = d + 1, loose[j]
        assert depth[i] == d
    own = [e[i] - s[i] - sum(e[j] - s[j] for j in range(len(s)) if want[j] == i)
           for i in range(len(s))]
    assert self_times(S, E, [T]).tolist() == [max(v, 0) for v in own]


def test_parents_of_long_threads() -> None:
    """GIVEN 3 threads of 3,000 random ops and one deep chain of 2,500 nested ops (up to 12
    levels of the search table, odd and even) WHEN finding parents THEN the stack walk's."""
    rng = np.random.default_rng(7)
    n = 9000
    s = rng.integers(0, 200_000, n)
    e = s + rng.choice([0, 1, 5, 50, 500, 5000, 60_000], n)
    chain = np.arange(2500)
    s = np.concatenate([s, chain * 3])
    e = np.concatenate([e, 100_000 - chain * 3])
    t = np.concatenate([rng.integers(0, 3, n), np.full(chain.size, 3)])
    want, _ = stack_parents(s.tolist(), e.tolist(), t.tolist())
    assert parents(s, e, [t]).tolist() == want
