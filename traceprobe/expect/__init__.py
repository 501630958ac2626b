"""Expectations on a report: ``utilization[0] >= 0.8``, checked without ``eval``.

The pipeline::

    exps = parse_all(["cross_device_overlap >= 0.9"]) + parse_file("ci.expect")
    results = evaluate(report.to_dict(), exps)      # -> list[Result], one per expectation
    require(results)                                # raises ExpectationFailed if any failed

Grammar (whitespace anywhere between the parts; one expectation per string or line)::

    expectation := SUBJECT OP VALUE
    SUBJECT     := NAME [ "[" DEVICE "]" ]
    NAME        := one of NAMES (traceprobe.expect.names)
    DEVICE      := integer, the "device" field of the report's rows (the GPU index)
    OP          := ">=" | ">" | "<=" | "<" | "==" | "!="
    VALUE       := NUMBER | WORD | [ NUMBER "*" ] "baseline." SUBJECT [ "*" NUMBER ]
                   [ ("+" | "-") NUMBER ]
    NUMBER      := decimal or scientific, e.g. 0.9  2  -1  .5  1e6  2.5E-3
    WORD        := a quoted string, "kernel" or 'kernel' (names of unit ``text`` only,
                   with == or !=)

``baseline.NAME`` is the same name read from the baseline report (``--baseline``, or
``evaluate(report, exps, baseline=...)``): ``step_p50_us <= 1.05 * baseline.step_p50_us``
passes when the median step is at most 5% slower than the baseline's. An expectation that
names ``baseline.`` without a baseline report is a usage error.

In a file, ``#`` starts a comment and blank lines are ignored. Comparisons are exact
on the report's floats (``==`` is rarely what you want for a time).

Each name is read from the report dict by :func:`traceprobe.expect.names.measure` (its
module docstring has the table of names). A value that is undefined (the report has
``null``, or no row to read) makes the expectation **fail**, with the reason, never pass;
so does an undefined baseline value.
A ``[d]`` naming a device absent from the report fails too.
"""

from __future__ import annotations

import difflib
import math
import operator
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from traceprobe.errors import ExpectationFailed, UsageError
from traceprobe.expect.names import NAMES, Measured, Name, Report, measure, names_help
from traceprobe.render.units import fmt_time

__all__ = [
    "GRAMMAR_HINT", "NAMES", "OPS", "BaselineRef", "Expectation", "Measured", "Name", "Report",
    "Result", "evaluate", "failure_message", "format_value", "measure", "names_help",
    "needs_baseline", "parse",
    "parse_all", "parse_file", "parse_lines", "require",
]

OPS: dict[str, Callable[[Any, Any], bool]] = {
    ">=": operator.ge,
    ">": operator.gt,
    "<=": operator.le,
    "<": operator.lt,
    "==": operator.eq,
    "!=": operator.ne,
}

_NUMBER = r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?"
_EXPECTATION = re.compile(
    r"^\s*(?P<name>[A-Za-z_][A-Za-z0-9_]*)"
    r"\s*(?:\[\s*(?P<index>[+-]?\d+)\s*\])?"
    r"\s*(?P<op>>=|<=|==|!=|>|<)"
    r"\s*(?P<value>.*?)\s*$"
)
_WORD = re.compile(r"^(?:\"(?P<dq>[^\"]*)\"|'(?P<sq>[^']*)')$")
_BASELINE = re.compile(
    rf"^(?:(?P<scale>{_NUMBER})\s*\*\s*)?"
    r"baseline\.(?P<name>[A-Za-z_][A-Za-z0-9_]*)"
    r"\s*(?:\[\s*(?P<index>[+-]?\d+)\s*\])?"
    rf"(?:\s*\*\s*(?P<scale2>{_NUMBER}))?"
    rf"(?:\s*(?P<sign>[+-])\s*(?P<offset>{_NUMBER}))?$"
)
GRAMMAR_HINT = (
    "write NAME[DEVICE] OP VALUE, e.g. 'utilization[0] >= 0.8', "
    "'step_p50_us <= 1.05 * baseline.step_p50_us' or 'bound_by == \"kernel\"'; "
    "OP is one of >= > <= < == !="
)


# ----------------------------------------------------------------------------- values


@dataclass(frozen=True)
class BaselineRef:
    """``scale * baseline.NAME[index] + offset``: a threshold read from the baseline report."""

    name: str
    index: int | None
    scale: float = 1.0
    offset: float = 0.0

    @property
    def subject(self) -> str:
        return self.name if self.index is None else f"{self.name}[{self.index}]"


@dataclass(frozen=True)
class Expectation:
    """One parsed expectation. ``source`` says where it came from (``file:line``) if a file.
    The value compared with is ``threshold`` (a number), ``word`` (a string, for a name of
    unit ``text``) or ``baseline`` (read from the baseline report)."""

    name: str
    index: int | None
    op: str
    threshold: float
    number: str  # the value as written, for messages
    source: str | None = None
    word: str | None = None
    baseline: BaselineRef | None = None

    @property
    def subject(self) -> str:
        return self.name if self.index is None else f"{self.name}[{self.index}]"

    def __str__(self) -> str:
        return f"{self.subject} {self.op} {self.number}"


@dataclass(frozen=True)
class Result:
    expectation: Expectation
    value: float | None
    passed: bool
    note: str = ""
    text: str | None = None  # the measured value of a string name
    threshold: float | str | None = None  # what it was compared with (a baseline's: computed)

    @property
    def verdict(self) -> str:
        return "PASS" if self.passed else "FAIL"

    def measured_text(self) -> str:
        """The measured value for people: ``0.9123 = 91.2%, GPU 1``, ``1234.5 µs``,
        ``undefined, no copies in the window``."""
        text = (f"\"{self.text}\"" if self.text is not None
                else format_value(self.expectation.name, self.value))
        return f"{text}, {self.note}" if self.note else text

    def describe(self) -> str:
        """``PASS  utilization[0] >= 0.8  measured 0.9123 = 91.2%``."""
        where = f"  [{self.expectation.source}]" if self.expectation.source else ""
        return f"{self.verdict}  {self.expectation}  measured {self.measured_text()}{where}"

    def to_dict(self) -> dict[str, Any]:
        e = self.expectation
        return {
            "expectation": str(e),
            "name": e.name,
            "device": e.index,
            "op": e.op,
            "threshold": self.threshold if self.threshold is not None else e.threshold,
            "value": self.text if self.text is not None else self.value,
            "passed": self.passed,
            "note": self.note,
            "source": e.source,
        }


def format_value(name: str, value: float | None) -> str:
    if value is None:
        return "undefined"
    unit = NAMES[name].unit if name in NAMES else ""
    if unit == "fraction":
        return f"{value:.4g} = {value * 100:.1f}%"
    if unit == "us":
        text = f"{value:.10g} µs"
        return f"{text} = {fmt_time(value)}" if abs(value) >= 1000 else text
    if unit == "count":
        return f"{value:g}"
    return f"{value:.4g}"


# ----------------------------------------------------------------------------- parsing


def parse(text: str, *, source: str | None = None) -> Expectation:
    """Parse one expectation; UsageError says what is wrong and how to write it."""
    where = f"{source}: " if source else ""
    m = _EXPECTATION.match(text)
    if m is None:
        raise UsageError(f"{where}cannot read expectation {text.strip()!r}: {GRAMMAR_HINT}")
    name = m["name"]
    if name not in NAMES:
        close = difflib.get_close_matches(name, NAMES, n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        raise UsageError(
            f"{where}unknown name {name!r} in {text.strip()!r}{hint}; valid names: "
            + ", ".join(NAMES)
        )
    index = _index(name, m["index"], text, where)
    op, value = m["op"], m["value"]
    is_text = NAMES[name].unit == "text"
    if re.fullmatch(_NUMBER, value):
        if is_text:
            raise UsageError(f"{where}{name} is a word, not a number, in {text.strip()!r}: "
                             f"compare it with a quoted word, e.g. {name} == \"kernel\"")
        return Expectation(name, index, op, float(value), value, source)
    word = _WORD.match(value)
    if word:
        if not is_text:
            raise UsageError(f"{where}{name} is a number in {text.strip()!r}; "
                             "compare it with a number")
        if op not in ("==", "!="):
            raise UsageError(f"{where}{name} is a word: compare it with == or !=, "
                             f"not {op}, in {text.strip()!r}")
        w = word["dq"] if word["dq"] is not None else word["sq"]
        return Expectation(name, index, op, math.nan, f"\"{w}\"", source, word=w)
    base = _BASELINE.match(value)
    if base is None:
        raise UsageError(f"{where}cannot read expectation {text.strip()!r}: {GRAMMAR_HINT}")
    bname = base["name"]
    if bname not in NAMES:
        close = difflib.get_close_matches(bname, NAMES, n=1)
        hint = f" (did you mean baseline.{close[0]}?)" if close else ""
        raise UsageError(f"{where}unknown name baseline.{bname} in {text.strip()!r}{hint}")
    if (NAMES[bname].unit == "text") != is_text:
        raise UsageError(f"{where}{name} and baseline.{bname} are not both words or both "
                         f"numbers in {text.strip()!r}")
    scale = float(base["scale"] or 1) * float(base["scale2"] or 1)
    offset = float(base["offset"] or 0) * (-1 if base["sign"] == "-" else 1)
    if is_text and (scale != 1 or offset != 0 or op not in ("==", "!=")):
        raise UsageError(f"{where}{name} is a word: compare it with == or != and "
                         f"baseline.{bname} alone, in {text.strip()!r}")
    ref = BaselineRef(bname, _index(bname, base["index"], text, where), scale, offset)
    return Expectation(name, index, op, scale, " ".join(value.split()), source, baseline=ref)


def _index(name: str, written: str | None, text: str, where: str) -> int | None:
    index = None if written is None else int(written)
    if index is not None and not NAMES[name].indexed:
        indexed = ", ".join(n for n, s in NAMES.items() if s.indexed)
        raise UsageError(
            f"{where}{name} takes no [device] in {text.strip()!r}; names that do: {indexed}"
        )
    return index


def needs_baseline(expectations: Iterable[Expectation]) -> bool:
    """Whether any expectation reads ``baseline.``."""
    return any(e.baseline is not None for e in expectations)


def parse_all(texts: Iterable[str | Expectation]) -> list[Expectation]:
    return [t if isinstance(t, Expectation) else parse(t) for t in texts]


def parse_lines(lines: Iterable[str], *, source: str = "<expectations>") -> list[Expectation]:
    """One expectation per line; ``#`` starts a comment; blank lines are skipped."""
    out = []
    for number, line in enumerate(lines, start=1):
        text = line.split("#", 1)[0].strip()
        if text:
            out.append(parse(text, source=f"{source}:{number}"))
    return out


MAX_FILE_BYTES = 1 << 20  # an expectations file is a few lines; more is not one


def parse_file(path: str | Path) -> list[Expectation]:
    """Expectations from a file, at most ``MAX_FILE_BYTES``. A FIFO or a pipe (``<(...)``)
    is read while a writer holds it open (one without a writer reads as empty, instead of
    waiting forever); a device that never ends (``/dev/zero``) is refused at the limit."""
    p = Path(path)
    try:
        text = _read_bounded(p).decode("utf-8")
    except OSError as e:
        raise UsageError(f"cannot read expectations file {p}: {e.strerror or e}") from e
    except UnicodeDecodeError as e:
        raise UsageError(f"expectations file {p} is not UTF-8 text: {e}") from e
    return parse_lines(text.splitlines(), source=str(p))


def _read_bounded(p: Path) -> bytes:
    import os

    fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))  # a FIFO: no wait for a writer
    try:
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        chunks: list[bytes] = []
        size = 0
        while size <= MAX_FILE_BYTES:
            chunk = os.read(fd, 65536)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
            size += len(chunk)
    finally:
        os.close(fd)
    raise UsageError(f"expectations file {p} holds more than {MAX_FILE_BYTES:,} bytes; an "
                     "expectations file is one expectation per line")


# ----------------------------------------------------------------------------- evaluating


def evaluate(
    report: Report, expectations: Sequence[str | Expectation], *, baseline: Report | None = None
) -> list[Result]:
    """Check each expectation against the report (``baseline.`` names against ``baseline``);
    an undefined value fails. UsageError when one reads ``baseline.`` and none is given."""
    exps = parse_all(expectations)
    if baseline is None and needs_baseline(exps):
        first = next(e for e in exps if e.baseline is not None)
        raise UsageError(f"{first} reads the baseline, but no baseline was given: "
                         "pass --baseline TRACE_OR_JSON (a trace, or a report JSON)")
    return [_evaluate_one(report, e, baseline) for e in exps]


def _evaluate_one(report: Report, e: Expectation, baseline: Report | None) -> Result:
    m = measure(report, e.name, e.index)
    if e.baseline is None:
        if e.word is not None:
            return Result(e, None, m.text is not None and OPS[e.op](m.text, e.word),
                          m.note, m.text, e.word)
        return Result(e, m.value, m.value is not None and OPS[e.op](m.value, e.threshold),
                      m.note, None, e.threshold)
    ref = e.baseline
    b = measure(baseline or {}, ref.name, ref.index)
    if NAMES[e.name].unit == "text":
        note = f'baseline "{b.text}"' if b.text is not None else f"baseline undefined: {b.note}"
        note = f"{m.note}; {note}" if m.note else note
        ok = m.text is not None and b.text is not None and OPS[e.op](m.text, b.text)
        return Result(e, None, ok, note, m.text, b.text)
    if b.value is None:
        note = f"baseline.{ref.subject} undefined: {b.note}"
        return Result(e, m.value, False, f"{m.note}; {note}" if m.note else note)
    limit = ref.scale * b.value + ref.offset
    note = (f"baseline.{ref.subject} = {format_value(ref.name, b.value)}, so "
            f"{e.subject} {e.op} {format_value(e.name, limit)}")
    note = f"{m.note}; {note}" if m.note else note
    return Result(e, m.value, m.value is not None and OPS[e.op](m.value, limit), note, None,
                  limit)


def failure_message(failed: Sequence[Result], *, label: str = "") -> str:
    """``1 expectation failed: hidden_copy_fraction > 0.5 (measured 0.3125 = 31.2%, GPU 1)``."""
    parts = "; ".join(f"{r.expectation} (measured {r.measured_text()})" for r in failed)
    head = f"{label}: " if label else ""
    noun = "expectation" if len(failed) == 1 else "expectations"
    return f"{head}{len(failed)} {noun} failed: {parts}"


def require(results: Sequence[Result], *, label: str = "") -> None:
    """Raise ExpectationFailed (exit 1) naming each failed expectation and its measured value."""
    failed = [r for r in results if not r.passed]
    if failed:
        raise ExpectationFailed(failure_message(failed, label=label))
