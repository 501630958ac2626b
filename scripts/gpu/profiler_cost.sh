#!/usr/bin/env bash
# Record the profiler-cost calibration (scripts/gpu/profiler_cost.py) into OUTDIR.
#
#   PYTHONPATH=. scripts/gpu/profiler_cost.sh OUTDIR [--quick]     (from the repo root)
#
# Writes OUTDIR/profiler-cost/{calibration.json,LOOP/*.pt.trace.json.gz} and OUTDIR/COMMANDS.txt.
# Afterwards: commit OUTDIR/profiler-cost under sample_traces/h200/.
set -euo pipefail
source scripts/gpu/common.sh scripts/gpu/profiler_cost.sh "${1:-}"
shift
grep -m1 "model name" /proc/cpuinfo >> "$LOG" || true
cmd=($PY scripts/gpu/profiler_cost.py "$OUT" "$@")
echo "${cmd[*]}" >> "$LOG"
"${cmd[@]}" 2>&1 | grep -v -e USDT -e '^STAGE:' | tee -a "$LOG"
