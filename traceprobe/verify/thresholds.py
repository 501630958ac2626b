"""The thresholds a verdict turns on, each with its reason (docs/FIGURES.md, "Verdicts").

:data:`THRESHOLDS` (every one but :data:`WALL_SPAN_MISMATCH`, which only words the
wall-clock note) goes into the verdicts file, so a reader sees what the verdicts used.
"""

from __future__ import annotations

# Two GPUs "compute at the same time" when both are busy for at least this share of the
# time either is (cross_device fraction_of_either): launch skew and the longer queue's
# tail cost a few per cent even when nothing stands between them.
OVERLAP_HOLDS = 0.90
# ... and "take turns" when they overlap at most this share: a synchronize between them
# leaves only the next launch's jitter.
OVERLAP_NONE = 0.05
# Copies hide under compute when at least half their time (the "all" row of copy_compute)
# runs under a kernel of the same device: clearly more than chance touching.
HIDDEN_HOLDS = 0.50
# DDP "overlaps communication with the backward pass" when most (over half) of the NCCL
# kernel time runs under compute: bucketing reduces every bucket but the last while the
# backward pass still computes the earlier layers' gradients, so with many buckets nearly
# all of it can hide. Only the last bucket cannot, which is why a model with only one or two
# buckets falls short: between COMM_HIDDEN_PARTLY and COMM_HIDDEN_HOLDS the claim "partly
# holds" (some all-reduce hid, but not most of it); below COMM_HIDDEN_PARTLY nothing to speak
# of overlapped (NCCL kernels touching compute by launch jitter).
COMM_HIDDEN_HOLDS = 0.50
COMM_HIDDEN_PARTLY = 0.10
# Kernels of one stream can touch by a timestamp's rounding; concurrency counts only when
# two or more kernels run at once for at least this share of the kernel time.
KERNEL_CONCURRENCY_MIN = 0.01
# N independent matmuls on one stream take "N times one" within this tolerance; below
# N * (1 - tolerance) something ran concurrently.
SERIAL_RATIO_TOLERANCE = 0.10
# A speedup counts only from this ratio of per-step times up, and only when the trace
# (GPU span, else span) and the unprofiled wall clock both show it: ±20% is within what
# the same work varies by between two recordings of short steps, and one profiled step of
# a millisecond can disagree with the wall clock by more than that.
SPEEDUP_CLEAR = 1.20
# The host "computes while the GPU computes" when at least half its compute time (CPU ops
# that drive no CUDA call, on the main thread) falls inside GPU busy time.
HOST_OVERLAP_HOLDS = 0.50
# Hand-made data parallelism: both GPUs compute at once for at least half the less busy
# GPU's time (fraction_of_min): GPU 0 alone gathers, sums and updates, by design.
MLP_OVERLAP_HOLDS = 0.50
# Two variants "issue the same ops" when their CPU op counts per step differ by at most
# this share; beyond it a speedup measures different work, not loop against run().
SAME_OPS_TOLERANCE = 0.05
# A wall time this many times the trace span (or the span this many times the wall time)
# is called out as time outside the traced region.
WALL_SPAN_MISMATCH = 1.5

THRESHOLDS: dict[str, float] = {
    "overlap_holds": OVERLAP_HOLDS,
    "overlap_none": OVERLAP_NONE,
    "hidden_holds": HIDDEN_HOLDS,
    "comm_hidden_holds": COMM_HIDDEN_HOLDS,
    "comm_hidden_partly": COMM_HIDDEN_PARTLY,
    "kernel_concurrency_min": KERNEL_CONCURRENCY_MIN,
    "serial_ratio_tolerance": SERIAL_RATIO_TOLERANCE,
    "speedup_clear": SPEEDUP_CLEAR,
    "host_overlap_holds": HOST_OVERLAP_HOLDS,
    "mlp_overlap_holds": MLP_OVERLAP_HOLDS,
    "same_ops_tolerance": SAME_OPS_TOLERANCE,
}

