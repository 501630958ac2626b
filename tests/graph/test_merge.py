"""The path's merge (a left fold over loose values) against the plain fold it replaced,
written here as the slow reference: one tuple per step, parts as (category, ns) pairs."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from hyp import examples
from traceprobe.graph.path import CATEGORIES, HOST_CATEGORIES, NEAR_NS, merge, parts


def _reference(pieces):
    out = []
    for p in pieces:
        if p[1] <= p[0]:
            continue
        q = out[-1] if out else None
        host = q is not None and q[2] in HOST_CATEGORIES and p[2] in HOST_CATEGORIES
        short = q is not None and min(q[1] - q[0], p[1] - p[0]) < NEAR_NS
        if q is None or q[1] != p[0] or not (
                (q[2] == p[2] and (q[3] == p[3] or host)) or (host and short)):
            out.append(p)
            continue
        ns: dict[str, int] = {}
        for c, v in parts(q) + parts(p):
            ns[c] = ns.get(c, 0) + v
        if len(ns) == 1 and q[3] == p[3]:
            out[-1] = (q[0], p[1], p[2], p[3], ())
            continue
        top = max(CATEGORIES, key=lambda c: ns.get(c, -1))
        longer = q if q[1] - q[0] >= p[1] - p[0] else p
        other = p if longer is q else q
        name = longer[3] if longer[2] == top else other[3] if other[2] == top else longer[3]
        out[-1] = (q[0], p[1], top, name,
                   tuple((c, ns[c]) for c in CATEGORIES if c in ns) if len(ns) > 1 else ())
    return out


KINDS = ("kernel", "copy", "runtime", "cpu_op", "python", "dataloader", "idle")
piece = st.tuples(st.integers(0, 3),  # gap before it (0: adjacent)
                  st.sampled_from([0, 1, 5_000, 9_999, 10_000, 30_000]),  # length
                  st.sampled_from(KINDS), st.sampled_from(["a", "b"]),
                  st.booleans())  # with parts (two host categories)


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(piece, max_size=40))
def test_merge_equals_the_plain_fold(spec) -> None:
    pieces, t = [], 0
    for gap, ln, kind, name, split in spec:
        t += gap
        pp = ()
        if split and ln >= 2 and kind in HOST_CATEGORIES:
            other = "runtime" if kind != "runtime" else "cpu_op"
            a = ln // 2 + 1
            pp = tuple(sorted(((kind, a), (other, ln - a)), key=lambda c: CATEGORIES.index(c[0])))
        pieces.append((t, t + ln, kind, name, pp))
        t += ln
    assert merge(pieces) == _reference(pieces)
