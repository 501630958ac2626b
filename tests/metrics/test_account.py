"""The host account's cuts: :meth:`Account.summaries` (all intervals at once, numpy) against
a slow reading of :meth:`Account.pieces` one interval at a time."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from hyp import examples
from traceprobe.graph.path import CATEGORIES
from traceprobe.metrics.regions import ACCOUNT_CLASSES, Account

I64 = np.int64


def _slow(acc: Account, lo: int, hi: int) -> tuple[str, str, tuple[tuple[str, int], ...]]:
    """What the docstring says, from the pieces: time per class, the top class (ties: the
    first in CATEGORIES), that class's longest piece's name (the first on ties)."""
    ns: dict[str, int] = {}
    best: dict[str, tuple[int, str]] = {}
    for s, e, c, n in acc.pieces(lo, hi):
        ns[c] = ns.get(c, 0) + e - s
        if c not in best or e - s > best[c][0]:
            best[c] = (e - s, n)
    top = max(CATEGORIES, key=lambda c: ns.get(c, -1))
    parts = tuple((c, ns[c]) for c in CATEGORIES if c in ns) if len(ns) > 1 else ()
    return top, best[top][1], parts


segments = st.lists(st.tuples(st.integers(1, 40), st.sampled_from(ACCOUNT_CLASSES),
                              st.sampled_from(["a", "b", "c"])), min_size=1, max_size=30)


@settings(max_examples=examples(200), deadline=None)
@given(segments, st.integers(-20, 20),
       st.lists(st.tuples(st.integers(-30, 1300), st.integers(-5, 300)), max_size=25))
def test_summaries_equal_a_reading_of_pieces(segs, origin, spans) -> None:
    lens = np.array([s[0] for s in segs], I64)
    end = origin + np.cumsum(lens)
    start = end - lens
    acc = Account(start, end, np.array([s[1] for s in segs], object),
                  np.array([s[2] for s in segs], object))
    lo = np.array([a for a, _ in spans], I64)
    hi = lo + np.array([w for _, w in spans], I64)
    got = acc.summaries(lo, hi, CATEGORIES)
    for a, b, brief in zip(lo.tolist(), hi.tolist(), got, strict=True):
        inside = b > a and a >= int(start[0]) and b <= int(end[-1])
        assert (brief is not None) == inside
        if inside:
            assert brief == _slow(acc, a, b)


def test_summaries_by_hand() -> None:
    # [0,10) runtime "k", [10,14) cpu_op "x", [14,20) cpu_op "y", [20,30) runtime "k"
    acc = Account(np.array([0, 10, 14, 20], I64), np.array([10, 14, 20, 30], I64),
                  np.array(["runtime", "cpu_op", "cpu_op", "runtime"], object),
                  np.array(["k", "x", "y", "k"], object))
    lo, hi = np.array([5, 11, 0, 30], I64), np.array([25, 19, 40, 30], I64)
    got = acc.summaries(lo, hi, CATEGORIES)
    # [5,25): runtime 5+5, cpu_op 4+6: a tie of 10 each, runtime first in CATEGORIES; its
    # longest run "k" (the first of two of 5 ns)
    assert got[0] == ("runtime", "k", (("runtime", 10), ("cpu_op", 10)))
    assert got[1] == ("cpu_op", "y", ())  # [11,19): x 3 ns, y 5 ns: one class
    assert got[2] is None and got[3] is None  # outside the account; empty


def test_pieces_outside_the_account_are_untraced() -> None:
    from traceprobe.metrics.regions import UNTRACED

    acc = Account(np.array([0, 10], I64), np.array([10, 20], I64),
                  np.array(["runtime", "cpu_op"], object), np.array(["k", "x"], object))
    assert acc.pieces(-10, -5) == [(-10, -5, "python", UNTRACED)]  # wholly before it
    assert acc.pieces(15, 30) == [(15, 20, "cpu_op", "x"), (20, 30, "python", UNTRACED)]
    assert acc.pieces(-2, 3) == [(-2, 0, "python", UNTRACED), (0, 3, "runtime", "k")]


def test_ranged_account_cuts_as_the_whole_account_does() -> None:
    """The process's account made per interval equals the one made over the whole trace,
    on a real trace (the backward pass on autograd's thread: two threads as one), at
    intervals of every size, some at the trace's edges."""
    from pathlib import Path

    from traceprobe import load
    from traceprobe.metrics.host import host_process
    from traceprobe.metrics.regions import RangedAccount, account, host_events

    here = Path(__file__).resolve().parents[2] / "sample_traces/h200/real-loops"
    tl = load(str(next(here.glob("transformer-tf32-item/*.pt.trace.json.gz"))))
    ev = host_events(tl.cpu, host_process(tl.cpu))
    lo, hi = int(ev.start.min()) - 1_000, int(ev.end.max()) + 1_000
    whole, ranged = account(ev, lo, hi, whole=True)[-1], RangedAccount(ev)
    lazy = RangedAccount.of(tl.cpu, host_process(tl.cpu))  # its events made when first read
    assert lazy.ev is None
    rng = np.random.default_rng(7)
    for width in (1, 500, 20_000, 2_000_000, hi - lo):
        for a in rng.integers(lo, hi - width + 1, 20).tolist():
            assert ranged.pieces(a, a + width) == whole.pieces(a, a + width)
            assert lazy.pieces(a, a + width) == whole.pieces(a, a + width)


host_events_ = st.lists(st.tuples(st.integers(0, 30), st.integers(0, 12),
                                  st.sampled_from(["dataloader", "optimizer", "region", "sync",
                                                   "runtime", "cpu_op"]),
                                  st.sampled_from(["f", "g"])), max_size=14)


@settings(max_examples=examples(300), deadline=None)
@given(host_events_)
def test_account_is_its_rules_at_every_instant(rows) -> None:
    """GIVEN one thread's events of every class (nested, crossing, equal, empty) WHEN making
    its account over [-2, 45) THEN its segments tile the range as runs (no two adjacent of
    one class and name) and at every ns hold the class and name of the module docstring's
    rules (the innermost: started last, then ends first, then the later event), read event
    by event."""
    from traceprobe.metrics.regions import UNTRACED, HostEvents, account

    lo, hi = -2, 45
    s = np.array([a for a, _, _, _ in rows], I64)
    e = np.array([a + d for a, d, _, _ in rows], I64)
    cls = np.array([c for _, _, c, _ in rows], object)
    name = np.array([f"{n}{i}" if i % 2 else n for i, (_, _, _, n) in enumerate(rows)], object)
    acc = account(HostEvents(name, cls, s, e, tid=np.zeros(len(rows), I64)), lo, hi).get(0)
    if acc is None:  # no event: no thread
        assert not rows
        return
    assert acc.start[0] == lo and acc.end[-1] == hi
    assert (acc.start[1:] == acc.end[:-1]).all() and (acc.end > acc.start).all()
    same = (acc.cls[1:] == acc.cls[:-1]) & (acc.name[1:] == acc.name[:-1])
    assert not same.any()

    def inner(t: int, classes: tuple[str, ...]) -> int:
        on = [i for i in range(len(rows)) if s[i] <= t < e[i] and cls[i] in classes]
        return max(on, key=lambda i: (s[i], -e[i], i)) if on else -1

    for t in range(lo, hi):
        reg = inner(t, ("dataloader", "optimizer", "region"))
        syn = inner(t, ("sync",))
        low = syn if syn >= 0 else inner(t, ("runtime", "cpu_op"))
        k, n = (cls[low], name[low]) if low >= 0 else ("python", UNTRACED)
        if reg >= 0 and cls[reg] != "region":
            k, n = cls[reg], name[reg]
        elif reg >= 0:
            k, n = (k if low >= 0 else "region"), f"{name[reg]} / {n}"
        j = int(np.searchsorted(acc.start, t, side="right")) - 1
        assert (acc.cls[j], acc.name[j]) == (k, n), t
