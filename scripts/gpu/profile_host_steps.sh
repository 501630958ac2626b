#!/usr/bin/env bash
# `traceprobe profile --host-steps` on a GPU: examples/lm_train.py in fp32, TF32 and bf16,
# each profiled unmodified with 10 host steps (the host's unprofiled issue time, stored in
# the trace) and record_shapes; the metadata's unprofiled step time (the steps after the
# profiler's cycle) is the measured side a what-if from the fp32 trace is set against.
#
#   PYTHONPATH=. scripts/gpu/profile_host_steps.sh OUTDIR
set -euo pipefail
source scripts/gpu/common.sh scripts/gpu/profile_host_steps.sh "${1:-}"
for p in fp32 tf32 bf16; do
  cmd=($PY -m traceprobe.cli profile -o "$OUT" --name "lm-$p" --record-shapes --host-steps 10
       -- examples/lm_train.py --precision "$p" --steps 100)
  echo "${cmd[*]}" >> "$LOG"
  "${cmd[@]}" 2>&1 | tail -4 | tee -a "$LOG"
done
