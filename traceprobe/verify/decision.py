"""What a rule answers: the three verdicts, a rule's :class:`Decision`, and its claim.

    rule(v: Recorded, peers: dict[str, Recorded]) -> Decision   # the :data:`Rule` signature

Each verdict answers the claim printed beside it: the registry's claim for the variant
that tests it, a variant-specific claim (:data:`CLAIMS`) for controls and baselines.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from traceprobe.verify.figures import Figures
from traceprobe.verify.recorded import Recorded

HOLDS = "holds"
PARTLY = "partly holds"  # the effect is there but short of what the claim says; why has the number
FAILS = "does not hold"
CANNOT_TELL = "cannot tell on this machine"
VERDICTS = (HOLDS, PARTLY, FAILS, CANNOT_TELL)

# Variants whose verdict answers another claim than the registry's (controls, baselines).
CLAIMS: dict[tuple[str, str], str] = {
    ("two-devices", "sequential"): (
        "With torch.cuda.synchronize between them, the two devices take turns: they "
        "overlap about 0% (the control for parallel)."
    ),
    ("copy", "blocking"): (
        "Copying each result to the host with a blocking .to('cpu') hides under the "
        "compute of the next ones."
    ),
    ("copy", "nonblocking-same-stream"): (
        "The notes' .to('cpu', non_blocking=True) on the compute stream hides the copies "
        "under the compute of the next results."
    ),
    ("copy", "side-stream"): (
        "Copies on a side stream, each waiting only for its own result, hide under the "
        "compute of the next results."
    ),
    ("independent-ops", "single"): (
        "Fifty independent matmuls take less than fifty times one matmul (the notes read "
        "1.4930 s against 0.0457 s, 32.7x, as automatic parallelism)."
    ),
    ("small-ops", "loop"): (
        "10x10 matmuls are launch-bound on the GPU: it waits for the host between kernels."
    ),
    ("dag", "serial"): (
        "On one stream the DAG runs in order: no two streams are busy at once "
        "(the control for two-streams)."
    ),
    ("mlp", "single"): (
        "The hand-made data parallelism on two GPUs makes the training step faster than "
        "this single GPU."
    ),
}


@dataclass(frozen=True)
class Decision:
    verdict: str
    why: str
    figures: Figures = field(default_factory=dict)

    def __post_init__(self) -> None:
        assert self.verdict in VERDICTS, self.verdict


Rule = Callable[[Recorded, Mapping[str, Recorded]], Decision]
