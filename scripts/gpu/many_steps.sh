#!/usr/bin/env bash
# Record real many-step traces for `traceprobe analyze --step all` (issue 9).
#
#   PYTHONPATH=. scripts/gpu/many_steps.sh OUTDIR        (from the repo root)
#
# Needs python3 + torch (+ CUDA); nothing else. Profiles scripts/gpu/tiny_train.py, unmodified,
# through `python3 -m traceprobe.record.profile` (one ProfilerStep per optimizer step):
#   steps100/     100 recorded steps (small enough to commit)
#   steps2000/    2,000 recorded steps (for timing --step all on a real trace)
#   COMMANDS.txt  the commands, the machine, the date
set -euo pipefail
source scripts/gpu/common.sh scripts/gpu/many_steps.sh "${1:-}"
for n in 100 2000; do
  cmd=($PY -m traceprobe.record.profile -o "$OUT" --name "steps$n" --force --wait 0 --warmup 1
       --active "$n" -- scripts/gpu/tiny_train.py --steps $((n + 5)))
  echo "${cmd[*]}" >> "$LOG"
  "${cmd[@]}" 2>&1 | tail -5
done
ls -la "$OUT"/steps*/ >> "$LOG"
