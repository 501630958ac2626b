"""Expectations on a report: ``utilization[0] >= 0.8``, checked without ``eval``.

The pipeline::

    exps = parse_all(["cross_device_overlap >= 0.9"]) + parse_file("ci.expect")
    results = evaluate(report.to_dict(), exps)      # -> list[Result], one per expectation
    require(results)                                # raises ExpectationFailed if any failed

Grammar (whitespace anywhere between the parts; one expectation per string or line)::

    expectation := NAME [ "[" DEVICE "]" ] OP NUMBER
    NAME        := one of NAMES (traceprobe.expect.names)
    DEVICE      := integer, the "device" field of the report's rows (the GPU index)
    OP          := ">=" | ">" | "<=" | "<" | "==" | "!="
    NUMBER      := decimal or scientific, e.g. 0.9  2  -1  .5  1e6  2.5E-3

In a file, ``#`` starts a comment and blank lines are ignored. Comparisons are exact
on the report's floats (``==`` is rarely what you want for a time).

Each name is read from the report dict by :func:`traceprobe.expect.names.measure` (its
module docstring has the table of names). A value that is undefined (the report has
``null``, or no row to read) makes the expectation **fail**, with the reason, never pass.
A ``[d]`` naming a device absent from the report fails too.
"""

from __future__ import annotations

import difflib
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
    "GRAMMAR_HINT", "NAMES", "OPS", "Expectation", "Measured", "Name", "Report", "Result",
    "evaluate", "failure_message", "format_value", "measure", "names_help", "parse",
    "parse_all", "parse_file", "parse_lines", "require",
]

OPS: dict[str, Callable[[float, float], bool]] = {
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
    rf"\s*(?P<number>{_NUMBER})\s*$"
)
GRAMMAR_HINT = (
    "write NAME[DEVICE] OP NUMBER, e.g. 'utilization[0] >= 0.8' or "
    "'cross_device_overlap >= 0.9'; OP is one of >= > <= < == !="
)


# ----------------------------------------------------------------------------- values


@dataclass(frozen=True)
class Expectation:
    """One parsed expectation. ``source`` says where it came from (``file:line``) if a file."""

    name: str
    index: int | None
    op: str
    threshold: float
    number: str  # the threshold as written, for messages
    source: str | None = None

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

    @property
    def verdict(self) -> str:
        return "PASS" if self.passed else "FAIL"

    def measured_text(self) -> str:
        """The measured value for people: ``0.9123 = 91.2%, GPU 1``, ``1234.5 µs``,
        ``undefined, no copies in the window``."""
        text = format_value(self.expectation.name, self.value)
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
            "threshold": e.threshold,
            "value": self.value,
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
    index = None if m["index"] is None else int(m["index"])
    if index is not None and not NAMES[name].indexed:
        indexed = ", ".join(n for n, s in NAMES.items() if s.indexed)
        raise UsageError(
            f"{where}{name} takes no [device] in {text.strip()!r}; names that do: {indexed}"
        )
    return Expectation(name, index, m["op"], float(m["number"]), m["number"], source)


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


def evaluate(report: Report, expectations: Sequence[str | Expectation]) -> list[Result]:
    """Check each expectation against the report; an undefined value fails."""
    results = []
    for e in parse_all(expectations):
        m = measure(report, e.name, e.index)
        passed = m.value is not None and OPS[e.op](m.value, e.threshold)
        results.append(Result(e, m.value, passed, m.note))
    return results


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
