"""What the host was doing: its events classified, and the innermost one at each instant.

Shared by the idle attribution (:mod:`.idle`) and the step-time breakdown (:mod:`.steps`).

*Host events* are the trace process's (see :func:`traceprobe.metrics.host.host_process`)
CPU ops, CUDA runtime/driver calls, host-side sync records and ``user_annotation`` ranges
(``record_function``), except the ``ProfilerStep#N`` ranges, which cover everything. Each is
put in one class:

* ``dataloader`` — a range whose name contains ``DataLoader`` (PyTorch's
  ``enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__``);
* ``optimizer`` — a range named ``Optimizer.*`` (``Optimizer.step#SGD.step``);
* ``region`` — any other ``user_annotation`` range (the user's own ``record_function``);
* ``sync`` — a call that waits for the GPU: a runtime/driver call whose name contains
  ``Synchronize``, a host ``cuda_sync`` record, ``aten::_local_scalar_dense`` and
  ``aten::item`` (what ``.item()`` runs);
* ``runtime`` — any other CUDA/HIP runtime or driver call (launches, copies, allocations);
* ``cpu_op`` — any other CPU op.

The first three are *regions*, the rest *leaves*. At an instant the *innermost* event of a
set is the covering one that started last (ties: the one that ends first): on one thread
ranges nest, so that is the deepest; across threads it is the most recent.

**The host account** (:func:`owners`, :func:`account`) is the one answer to "what was the
host doing at this instant", used by the idle causes (:mod:`.idle`, over the whole
process), the critical path's host segments (:mod:`traceprobe.graph`, thread by thread)
and the HTML lanes. At each instant it holds the innermost region, the innermost sync
call and the innermost other leaf covering it; the instant's class is, first rule first:

1. the innermost region's class (``dataloader``, ``optimizer``, ``region``);
2. ``sync`` when a sync call covers it;
3. the innermost leaf's class (``runtime``, or ``cpu_op``: that op's *self* time);
4. ``python`` — "Python (untraced)": no event at all (the interpreter ran code the
   profiler does not record, or the thread slept).

The critical path refines rule 1 for plain ``region``s (:data:`PATH_CLASSES`): inside the
user's own ``record_function`` range it reports what ran inside (rules 2-4) and names the
region, as the idle causes' ``children`` do.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from traceprobe.intervals import sorted_unique
from traceprobe.metrics.grouping import factorized, win_of

REGION_CLASSES = ("dataloader", "optimizer", "region")
LEAF_CLASSES = ("sync", "runtime", "cpu_op")
RUNTIME_KINDS = frozenset({"cuda_runtime", "cuda_driver"})
SYNC_OPS = frozenset({"aten::_local_scalar_dense", "aten::item"})
STEP_PREFIX = "ProfilerStep#"
UNTRACED = "Python (untraced)"  # the account's name for time no event covers
ACCOUNT_CLASSES = ("dataloader", "optimizer", "region", "sync", "runtime", "cpu_op", "python")


@dataclass(frozen=True)
class HostEvents:
    """The host events with their class, as arrays (one entry per event)."""

    name: np.ndarray  # object
    cls: np.ndarray  # object: one of REGION_CLASSES + LEAF_CLASSES
    start: np.ndarray  # int64
    end: np.ndarray
    win: np.ndarray | None = None  # int64 window index of each event (a cut frame), else None
    tid: np.ndarray | None = None  # int64 thread of each event

    def where(self, classes: tuple[str, ...]) -> np.ndarray:
        return np.isin(self.cls, classes)


def host_events(cpu: pd.DataFrame, pid: int | None, threads: bool = True) -> HostEvents:
    """Classify the events of process ``pid`` (see the module docstring); empty if None.
    ``threads=False`` leaves their threads out (``tid`` None: readers of the whole process,
    the idle causes and the step breakdown, do not need them)."""
    if pid is None or cpu.empty:
        z = np.empty(0, np.int64)
        return HostEvents(np.empty(0, object), np.empty(0, object), z, z, z)
    mine = cpu["pid"].to_numpy() == pid  # columns at the mask, not a copy of the frame
    name = cpu["name"].to_numpy(dtype=object)[mine]
    cls = _classes(cpu["kind"].to_numpy(dtype=object)[mine], name)
    keep = cls != ""
    return HostEvents(
        name=name[keep],
        cls=cls[keep],
        start=cpu["start"].to_numpy(dtype=np.int64)[mine][keep],
        end=cpu["end"].to_numpy(dtype=np.int64)[mine][keep],
        win=win_of(cpu)[mine][keep] if "win" in cpu.columns else None,  # None: one window
        tid=cpu["tid"].to_numpy(dtype=np.int64)[mine][keep] if threads else None,
    )


def classify(cpu: pd.DataFrame) -> np.ndarray:
    """The class (module docstring) of every row of ``cpu``, whatever its process; "" for
    rows of no class (the ``ProfilerStep#N`` ranges, Python functions, GPU-side
    annotations). The one classification: :func:`host_events` and the HTML lanes use it."""
    return _classes(cpu["kind"].to_numpy(dtype=object), cpu["name"].to_numpy(dtype=object))


def _classes(kind: np.ndarray, name: np.ndarray) -> np.ndarray:
    cls = np.full(len(kind), "", object)
    if not len(kind):
        return cls
    inverse, distinct = factorized(name)  # each distinct name once (hashing, not sorting)
    names = np.array([str(n) for n in distinct], dtype=object)
    is_dl = np.array(["DataLoader" in n for n in names], bool)[inverse]
    is_opt = np.array([n.startswith("Optimizer.") for n in names], bool)[inverse]
    is_step = np.array([n.startswith(STEP_PREFIX) for n in names], bool)[inverse]
    is_sync_name = np.array(["Synchronize" in n for n in names], bool)[inverse]
    is_sync_op = np.array([n in SYNC_OPS for n in names], bool)[inverse]
    ann = kind == "user_annotation"
    rt = pd.Series(kind).isin(list(RUNTIME_KINDS)).to_numpy()
    op = kind == "cpu_op"
    cls[ann & ~is_step] = "region"
    cls[(ann | op) & is_opt & ~is_step] = "optimizer"
    cls[(ann | op) & is_dl & ~is_step] = "dataloader"
    leaf = (rt | op | (kind == "cuda_sync")) & (cls == "")
    cls[leaf & op & ~is_step] = "cpu_op"
    cls[leaf & rt] = "runtime"
    cls[leaf & ((rt & is_sync_name) | (op & is_sync_op) | (kind == "cuda_sync"))] = "sync"
    return cls


@dataclass(frozen=True)
class Owners:
    """The host account on the elementary segments ``[bounds[i], bounds[i+1])``: the
    innermost region, sync call and other leaf covering each (event indices, -1 none;
    :func:`innermost`'s dtype, int32 for any real trace)."""

    bounds: np.ndarray
    reg: np.ndarray
    syn: np.ndarray
    leaf: np.ndarray


def owners(cls: np.ndarray, s: np.ndarray, e: np.ndarray, rank: np.ndarray,
           bounds: np.ndarray) -> Owners:
    """The account's owners of each segment of ``bounds`` among events of classes ``cls``
    covering ``[s, e)`` (``rank``: the innermost rule's order; :func:`innermost`)."""

    def owner(classes: tuple[str, ...]) -> np.ndarray:
        idx = np.flatnonzero(np.isin(cls, classes))
        if len(cls) < 2**31:
            idx = idx.astype(np.int32)
        o = _innermost_at(bounds, s, e, rank, idx)
        has = o >= 0
        o[has] = idx[o[has]]  # into the events of ``cls``, in place (innermost's dtype)
        return o

    return Owners(bounds, owner(REGION_CLASSES), owner(("sync",)),
                  owner(tuple(c for c in LEAF_CLASSES if c != "sync")))


@dataclass(frozen=True)
class Account:
    """One thread's account: segments ``[start[i], end[i])`` tiling ``[lo, hi)`` with a
    class (:data:`ACCOUNT_CLASSES`, the path's refinement: :func:`account`) and a name (the
    owning event's; inside a user region ``"region / inner"``; :data:`UNTRACED` for none).
    :func:`account` makes them runs (no two adjacent of one class and name), their classes
    and names pandas categoricals: every reader (:meth:`time_in`, :meth:`pieces`,
    :meth:`summaries`) gives the same for runs or not, object arrays or categoricals."""

    start: np.ndarray
    end: np.ndarray
    cls: Any  # object array, or a pandas Categorical of the texts
    name: Any

    def time_in(self, cls: str, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """Per interval ``[lo[i], hi[i])``: its time of class ``cls`` (int64 ns)."""
        lo, hi = np.asarray(lo, np.int64), np.asarray(hi, np.int64)
        if not len(self.start):
            return np.zeros(len(lo), np.int64)
        on = (self.cls == cls).astype(np.int64)
        cum = np.r_[0, np.cumsum((self.end - self.start) * on)]

        def upto(t: np.ndarray) -> np.ndarray:
            t = np.clip(t, self.start[0], self.end[-1])
            k = np.clip(np.searchsorted(self.start, t, side="right") - 1, 0, len(on) - 1)
            return cum[k] + (t - self.start[k]) * on[k]

        return np.maximum(upto(hi) - upto(lo), 0)

    def _runs(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[str]]:
        """The account's *runs* (adjacent segments of one class and name as one, as
        :meth:`pieces` merges them): starts, ends, class codes into the list returned
        last, names; made once."""
        got = self.__dict__.get("_as_runs")
        if got is None:
            n = len(self.start)
            new = np.ones(n, bool)
            if n > 1:
                new[1:] = (self.cls[1:] != self.cls[:-1]) | (self.name[1:] != self.name[:-1])
            if new.all():  # already runs (:func:`account` makes them so): no copies
                rs, re_, cls, names = self.start, self.end, self.cls, self.name
            else:
                first = np.flatnonzero(new)
                rs, re_ = self.start[first], self.end[np.append(first[1:], n) - 1]
                cls, names = self.cls[first], self.name[first]
            code, classes = pd.factorize(cls)
            small = np.int8 if len(classes) < 128 else np.int64
            got = (rs, re_, code.astype(small), names, [str(c) for c in classes])
            object.__setattr__(self, "_as_runs", got)
        return got

    def summaries(self, lo: np.ndarray, hi: np.ndarray, order: tuple[str, ...]) -> list[
            tuple[str, str, tuple[tuple[str, int], ...]] | None]:
        """Per interval ``[lo[i], hi[i])`` (int64 ns), what :meth:`pieces` cuts it into, in
        brief: the class holding the most time (ties: the first in ``order``, which must
        hold every class), the name of that class's longest run inside it (the first on
        ties) and, when it holds more than one class, its time per class in ``order``
        (else ``()``). None for an interval not inside the account (or empty): ask
        :meth:`pieces`. All intervals at once, where :meth:`pieces` is one call each."""
        lo, hi = np.asarray(lo, np.int64), np.asarray(hi, np.int64)
        out: list[tuple[str, str, tuple[tuple[str, int], ...]] | None] = [None] * len(lo)
        if not len(self.start):
            return out
        rs, re_, code, names, classes = self._runs()
        ok = np.flatnonzero((hi > lo) & (lo >= rs[0]) & (hi <= re_[-1]))
        if not ok.size:
            return out
        a = np.searchsorted(re_, lo[ok], side="right")
        cnt = np.searchsorted(rs, hi[ok], side="left") - a
        pid = np.repeat(np.arange(ok.size), cnt)  # one row per (interval, run inside it)
        run = np.arange(pid.size) - np.repeat(np.cumsum(cnt) - cnt, cnt) + np.repeat(a, cnt)
        ln = np.minimum(re_[run], hi[ok][pid]) - np.maximum(rs[run], lo[ok][pid])
        width = len(order)
        rank = np.array([order.index(c) for c in classes], np.int64)[code[run]]
        per = np.bincount(pid * width + rank, weights=ln, minlength=ok.size * width)
        per = per.reshape(ok.size, width).astype(np.int64)  # exact: sums of ns < 2**53
        top = per.argmax(axis=1)  # the first of the largest, in ``order``
        mine = rank == top[pid]
        longest = np.zeros(ok.size, np.int64)
        np.maximum.at(longest, pid[mine], ln[mine])
        best = np.flatnonzero(mine & (ln == longest[pid]))
        first = best[np.r_[True, pid[best][1:] != pid[best][:-1]]]  # rows are in time order
        name_of = names[run[first]].tolist()
        many = ((per > 0).sum(axis=1) > 1).tolist()
        top_l, per_l = top.tolist(), per.tolist()
        for j, i in enumerate(ok.tolist()):
            parts = tuple((order[c], v) for c, v in enumerate(per_l[j]) if v) if many[j] else ()
            out[i] = (order[top_l[j]], name_of[j], parts)
        return out

    def pieces(self, lo: int, hi: int) -> list[tuple[int, int, str, str]]:
        """``[lo, hi)`` cut by the account: (start, end, class, name), merged runs (one call
        per interval: :meth:`summaries` answers many at once)."""
        if hi <= lo:
            return []
        a = int(np.searchsorted(self.end, lo, side="right"))
        b = int(np.searchsorted(self.start, hi, side="left"))
        starts, ends = self.start[a:b].tolist(), self.end[a:b].tolist()
        classes, names = self.cls[a:b].tolist(), self.name[a:b].tolist()
        out: list[tuple[int, int, str, str]] = []
        for s, e, c, n in zip(starts, ends, classes, names, strict=True):
            s, e = max(s, lo), min(e, hi)
            if e <= s:
                continue
            if out and out[-1][2] == c and out[-1][3] == n and out[-1][1] == s:
                out[-1] = (out[-1][0], e, c, n)
            else:
                out.append((s, e, c, n))
        if not out:  # outside the account: untraced
            return [(lo, hi, "python", UNTRACED)]
        if out[0][0] > lo:
            out.insert(0, (lo, out[0][0], "python", UNTRACED))
        if out[-1][1] < hi:
            out.append((out[-1][1], hi, "python", UNTRACED))
        return out


@dataclass(frozen=True)
class RangedAccount:
    """The whole process's account (:func:`account` with ``whole``), made only for the
    intervals asked, each from the events that overlap it: the same :meth:`Account.pieces`
    (an instant's owner depends only on the events covering it, a segment's bounds only on
    the events inside), without making the account of the whole trace when a caller needs
    a few of its intervals (the critical path: its long GPU waits).

    :meth:`of` makes one that classifies its process's events only when first asked (the
    critical path often never is: no copy of them is held meanwhile)."""

    ev: HostEvents | None
    source: tuple[pd.DataFrame, int] | None = None  # (CPU frame, pid) of an ``of`` one

    @classmethod
    def of(cls, cpu: pd.DataFrame, pid: int) -> RangedAccount:
        return cls(None, (cpu, pid))

    def pieces(self, lo: int, hi: int) -> list[tuple[int, int, str, str]]:
        if hi <= lo:
            return []
        ev = self.ev
        if ev is None:
            assert self.source is not None
            ev = host_events(*self.source, threads=False)
            object.__setattr__(self, "ev", ev)
        on = np.flatnonzero((ev.start < hi) & (ev.end > lo))
        sub = HostEvents(ev.name[on], ev.cls[on], ev.start[on], ev.end[on])
        acc = account(sub, lo, hi, whole=True).get(-1)
        return acc.pieces(lo, hi) if acc is not None else [(lo, hi, "python", UNTRACED)]


def account(ev: HostEvents, lo: int, hi: int, whole: bool = False) -> dict[int, Account]:
    """Per thread of ``ev`` (one window): its account over ``[lo, hi)`` (module docstring),
    with the path's refinement of rule 1: a plain ``region`` reports the class of what runs
    inside it (rules 2-4) named ``"region / inner"``; ``dataloader`` and ``optimizer``
    keep theirs. ``whole``: one account of the whole process (key -1), its threads as one,
    as the idle causes read it."""
    out: dict[int, Account] = {}
    tid = ev.tid if ev.tid is not None else np.zeros(len(ev.start), np.int64)
    if whole:
        tid = np.full(len(ev.start), -1, np.int64)
    for t in sorted_unique(tid).tolist():
        m = np.flatnonzero(tid == t)
        s, e, cls = ev.start[m], ev.end[m], ev.cls[m]
        rank = np.empty(m.size, np.int64)
        rank[np.lexsort((-e, s))] = np.arange(m.size)
        bounds = np.concatenate([s, e, [lo, hi]]).astype(np.int64, copy=False)
        np.clip(bounds, lo, hi, out=bounds)
        bounds = sorted_unique(bounds, mine=True)
        o = owners(cls, s, e, rank, bounds)
        del s, e, rank
        out[int(t)] = _labelled(bounds, o, cls, ev.name[m])
    return out


class _Texts:
    """Texts numbered as first given, each once: codes that compare as their texts do."""

    def __init__(self) -> None:
        self.table: dict[str, int] = {}

    def code(self, text: str) -> int:
        return self.table.setdefault(text, len(self.table))

    def codes(self, values: np.ndarray) -> np.ndarray:
        """The code of each of ``values`` (object), by one hashing pass over them."""
        inverse, uniques = factorized(values)
        return np.array([self.code(str(u)) for u in uniques], np.int64)[inverse]

    def categorical(self, codes: np.ndarray) -> pd.Categorical:
        return pd.Categorical.from_codes(codes, categories=list(self.table))


def _labelled(bounds: np.ndarray, o: Owners, cls: np.ndarray, name: np.ndarray) -> Account:
    """The account of segments ``[bounds[i], bounds[i+1])`` with the owners ``o`` among
    events of classes ``cls`` and names ``name``: each segment's class and name by the rules
    (:func:`account`), worked out on codes of the texts, then adjacent segments of one class
    and name as one (what every reader merges them into: its runs are its segments), their
    texts as categoricals (a small code per run, each text once: the critical path holds an
    account of every host thread)."""
    classes, names = _Texts(), _Texts()
    c_ev, n_ev = classes.codes(cls), names.codes(name)
    python, region, untraced = classes.code("python"), classes.code("region"), names.code(UNTRACED)
    inner = np.where(o.syn >= 0, o.syn, o.leaf)
    has_in = inner >= 0
    k = np.where(has_in, c_ev[np.maximum(inner, 0)], python)
    nm = np.where(has_in, n_ev[np.maximum(inner, 0)], untraced)
    del inner
    r = o.reg >= 0
    reg = np.maximum(o.reg, 0)
    rc = c_ev[reg]
    phase = r & (rc != region)
    k = np.where(phase, rc, k)
    nm = np.where(phase, n_ev[reg], nm)
    plain = r & (rc == region)
    if plain.any():  # "region / inner": one text per pair
        width = len(names.table)
        pair = n_ev[reg[plain]] * width + nm[plain]
        uniq, inv = np.unique(pair, return_inverse=True)
        text = list(names.table)
        joined = np.array([names.code(f"{text[p // width]} / {text[p % width]}")
                           for p in uniq.tolist()], np.int64)
        nm[plain] = joined[inv.reshape(-1)]
        k = np.where(plain & ~has_in, region, k)
    n = len(k)
    new = np.ones(n, bool)
    if n > 1:
        new[1:] = (k[1:] != k[:-1]) | (nm[1:] != nm[:-1])
    first = np.flatnonzero(new)
    edges = bounds[np.append(first, n)]  # the runs' bounds: their starts and ends are views
    return Account(edges[:-1], edges[1:], classes.categorical(k[first]),
                   names.categorical(nm[first]))


def innermost(
    bounds: np.ndarray, starts: np.ndarray, ends: np.ndarray, rank: np.ndarray | None = None
) -> np.ndarray:
    """For each elementary segment ``[bounds[i], bounds[i+1])``: the index of the innermost
    event (into ``starts``/``ends``) covering it, or -1 (int32, or int64 where the segments,
    events or ranks outgrow int32).

    ``bounds`` must be sorted and hold every start and end that falls inside its range.
    The innermost event is the covering one of highest ``rank``; by default the rank is the
    order by start, then the longer first, then the index (the one that started last wins,
    ties: the one that ends first, then the later event). ``rank`` lets a caller order by
    other times than those it covers with (unclipped ones) or rank many windows at once.

    No loop over events: each event's run of segments ``[a, b)`` is split into two
    power-of-two blocks that cover it (``[a, a + 2^k)`` and ``[b - 2^k, b)``, ``2^k <= b - a``),
    each block keeps the highest rank put on it, and the blocks are halved level by level
    down to single segments (a sparse table run backwards): one pass over the segments per
    level, ``log2`` of the longest run levels. Its arrays are int32 where the sizes allow
    (half the memory of int64: the idle causes' peak).
    """
    if rank is None:
        rank = np.empty(starts.size, np.int64)
        rank[np.lexsort((-ends, starts))] = np.arange(starts.size)
    return _innermost_at(bounds, starts, ends, rank, None)


def _innermost_at(bounds: np.ndarray, starts: np.ndarray, ends: np.ndarray, rank: np.ndarray,
                  of: np.ndarray | None) -> np.ndarray:
    """:func:`innermost` among the events ``of`` (indices; None: all), indices into them."""
    size = max(len(bounds) - 1, 0)
    n = len(starts) if of is None else len(of)
    top_rank = int(np.max(rank)) if len(rank) else 0
    dtype: Any = np.int32 if max(size, n, top_rank + 1) < 2**31 else np.int64
    owner = np.full(size, -1, dtype)
    if size == 0 or n == 0:
        return owner
    # (each made in ``dtype`` at once: the int64 ones go)
    a = np.searchsorted(bounds, starts if of is None else starts[of], side="left").astype(dtype)
    b = np.searchsorted(bounds, ends if of is None else ends[of], side="left").astype(dtype)
    np.minimum(b, size, out=b)
    keep = b > a
    r = np.asarray(rank if of is None else rank[of]).astype(dtype)
    if keep.all():
        idx = np.arange(len(a), dtype=dtype)
    else:
        idx = np.flatnonzero(keep).astype(dtype)
        if not idx.size:
            return owner
        a, b, r = a[idx], b[idx], r[idx]
    del keep
    level = np.frexp(b - a)[1] - 1  # floor(log2(b - a)), exact for any int32 length
    by_level = np.argsort(level, kind="stable").astype(dtype)
    cuts = np.searchsorted(level[by_level], np.arange(int(level.max()) + 2))
    del level
    best = np.full(size, -1, dtype)
    for lev in range(len(cuts) - 2, -1, -1):
        sel = by_level[cuts[lev] : cuts[lev + 1]]
        if sel.size:
            rs = r[sel]
            np.maximum.at(best, a[sel], rs)
            np.maximum.at(best, b[sel] - (1 << lev), rs)
        if lev:
            half = 1 << (lev - 1)
            np.maximum(best[half:], best[:-half].copy(), out=best[half:])
    del a, b, by_level
    has = best >= 0
    if has.any():
        back = np.full(int(r.max()) + 1, -1, dtype)
        back[r] = idx
        owner[has] = back[best[has]]
    return owner
