"""What the loader read leniently or salvaged, said once on stderr (every command that loads).

    notices(timelines, strict=False)    # one line per salvaged trace and per warning

A salvaged trace (cut short) is a ``notice``; with ``strict`` it is an error (exit 3)
instead. Each of ``meta.extra["warnings"]`` is a ``warning`` line. The JSON report
carries the same (``salvaged``, ``warnings``); rules: docs/INPUT.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import click

from traceprobe.errors import TraceError
from traceprobe.output import one_line


def say(line: str) -> None:
    """One line on stderr, whatever a file name or a trace's text holds."""
    click.echo(one_line(line), err=True)


def notices(timelines: Sequence[Any], *, strict: bool = False) -> None:
    """One stderr line per salvaged trace and per lenient reading (the report says it too)."""
    for tl in timelines:
        salvaged = tl.meta.extra.get("salvaged")
        if salvaged is not None:
            if strict:
                raise TraceError(
                    tl.source,
                    f"{salvaged['reason']}; {salvaged['events_kept']:,} complete events "
                    "before the cut could be analysed",
                    "drop --strict to analyse them, or record the trace again",
                )
            say(
                f"traceprobe: notice: {tl.source}: {salvaged['reason']}; analysing the "
                f"{salvaged['events_kept']:,} complete events before the cut "
                f"({salvaged['bytes_read']:,} bytes of JSON)"
            )
        for w in tl.meta.extra.get("warnings", ()):
            say(f"traceprobe: warning: {tl.source}: {w}")


def input_lines(tl: Any) -> list[str]:
    """The same, as lines for a report that has no place of its own for them (whatif)."""
    out = []
    salvaged = tl.meta.extra.get("salvaged")
    if salvaged is not None:
        out.append(f"notice: the trace was cut short ({salvaged['reason']}): only the "
                   f"{salvaged['events_kept']:,} complete events before the cut were replayed")
    out += [f"warning: {w}" for w in tl.meta.extra.get("warnings", ())]
    return out


def rank_notices(data: Any) -> None:
    """The many-rank summary's per-rank salvage and lenient-reading notes, on stderr too."""
    for note in (data.get("ranks") or {}).get("notes") or ():
        head, sep, rest = str(note).partition("): ")
        kind = rest.split(":", 1)[0]
        if sep and head.startswith("rank ") and kind in ("notice", "warning"):
            trace = head.split(" (", 1)[1] if " (" in head else head
            say(f"traceprobe: {kind}: {trace}: {rest.split(': ', 1)[1]}")
