#!/usr/bin/env bash
# Record the real training-loop pairs (issues 20 and 21) into OUTDIR, one process a variant.
#
#   PYTHONPATH=. scripts/gpu/real_loops.sh OUTDIR [--quick]     (from the repo root)
#
# Needs python3 with torch and torchvision (+ CUDA for the real thing); nothing else, no
# network. Writes OUTDIR/VARIANT/{*.pt.trace.json.gz,timing.json,flops.json} for every variant
# of scripts/gpu/real_loops.py, and OUTDIR/COMMANDS.txt (the commands, machine, torch).
# Afterwards: commit OUTDIR's folders under sample_traces/h200/real-loops/.
set -euo pipefail
source scripts/gpu/common.sh scripts/gpu/real_loops.sh "${1:-}"
shift
variants=$($PY -c "import sys; sys.path.insert(0, 'scripts/gpu'); import real_loops as r; print(' '.join(r.VARIANTS))")
for v in $variants; do
  cmd=($PY scripts/gpu/real_loops.py "$v" "$OUT" "$@")
  echo "${cmd[*]}" >> "$LOG"
  "${cmd[@]}" 2>&1 | tail -3 | tee -a "$LOG"
done
ls -la "$OUT"/*/ >> "$LOG"
