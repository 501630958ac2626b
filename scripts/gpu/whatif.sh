#!/usr/bin/env bash
# Record the measured variants that `traceprobe whatif` predicts (issue 12), into OUTDIR.
#
#   PYTHONPATH=. scripts/gpu/whatif.sh OUTDIR
#
# Needs python3 with torch (CUDA for the real thing); nothing else, no network. Records,
# with the default profiler schedule (one warm-up step, one active step):
#   small-ops/loop, small-ops/cuda-graph       (no-launch-overhead -> CUDA graph)
#   independent-ops/one-stream, independent-ops/many-streams   (spread:gemm=4)
# each pair in one session so that the two sides share a machine state. On a machine
# without CUDA it still runs (small sizes, CPU); the cuda-graph variant then says it
# cannot run (its metadata note) and verify answers "cannot tell".
# Afterwards: commit OUTDIR's folders under sample_traces/h200/ and rerun
#   PYTHONPATH=. python3 scripts/whatif_table.py --write docs/WHATIF.md
set -euo pipefail
out=${1:?usage: scripts/gpu/whatif.sh OUTDIR}
py=${PYTHON:-python3}
if [ -e "$out" ] && [ -n "$(ls -A "$out" 2>/dev/null)" ]; then
    echo "whatif.sh: $out is not empty; give a new folder" >&2
    exit 4
fi
mkdir -p "$out"
"$py" -m traceprobe.cli record \
    small-ops/loop small-ops/cuda-graph \
    independent-ops/one-stream independent-ops/many-streams \
    --out "$out" --force 2>&1 | tee "$out/whatif-record.log"
"$py" -c 'import sys, torch; print("torch", torch.__version__, "cuda", torch.cuda.is_available(),
      torch.cuda.get_device_name(0) if torch.cuda.is_available() else "-")' \
    >> "$out/whatif-record.log"
echo "whatif.sh: wrote $out"
