"""``--window steps|profiler|events``: what a whole-trace report covers (shared by the
commands that analyse a trace: analyze, compare, check, whatif)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])

WINDOW_HELP = (
    "What the whole-trace figures cover: 'steps' (first ProfilerStep start to last step "
    "end), 'profiler' (the profiler's recording span) or 'events' (every event, first "
    "start to last end); one that the trace lacks falls back to the next.  [default: steps]"
)


def window_option(f: F) -> F:
    """The ``--window`` option, passed to the command as ``window``."""
    return click.option(
        "--window", "window", type=click.Choice(["steps", "profiler", "events"]),
        default="steps", metavar="steps|profiler|events", help=WINDOW_HELP,
    )(f)
