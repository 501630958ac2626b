"""One error hierarchy for traceprobe.

The library raises these; only the CLI turns them into messages and exit codes.
Every message is one line that names the file (where there is one), what is wrong
and what to do about it.

Exit codes (documented in README):
    0  success
    1  a `check` expectation failed (the trace was read fine)
    2  usage error (click's own: bad option, missing argument)
    3  bad input: the trace file could not be read or understood
    4  output error: will not overwrite, cannot write
    5  recording failed (torch missing, workload error)
   70  internal error: a bug in traceprobe (an inference that should hold did not)
"""

from __future__ import annotations


class TraceprobeError(Exception):
    """Base class. `exit_code` is what the CLI returns for it."""

    exit_code = 3

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class TraceError(TraceprobeError):
    """A trace file that cannot be read or understood."""

    exit_code = 3

    def __init__(self, path: object, problem: str, fix: str = "") -> None:
        self.path = str(path)
        self.problem = problem
        self.fix = fix
        msg = f"{self.path}: {problem}"
        if fix:
            msg += f"; {fix}"
        super().__init__(msg)

    def __reduce__(self):  # picklable across worker processes
        return (type(self), (self.path, self.problem, self.fix))


class OutputError(TraceprobeError):
    """An output that would overwrite something, or cannot be written."""

    exit_code = 4


class ExpectationFailed(TraceprobeError):
    """A `traceprobe check` expectation did not hold."""

    exit_code = 1


class UsageError(TraceprobeError):
    """Options that make no sense together, or name something that is not there."""

    exit_code = 2


class RecordError(TraceprobeError):
    """A workload could not be recorded."""

    exit_code = 5


class InternalError(TraceprobeError):
    """A bug in traceprobe: something its own inference guarantees did not hold."""

    exit_code = 70


class GraphCycle(InternalError):
    """The dependency graph inferred from a trace has a cycle: an inferred dependency
    contradicts the others (the inference failed, not the trace)."""
