#!/usr/bin/env bash
# Profile the unmodified examples with `traceprobe profile` on the GPUs present.
#
#   PYTHONPATH=. scripts/gpu/profile.sh OUTDIR        (from the repo root)
#
# Needs python3 + torch (+ CUDA); nothing else (it uses `python3 -m traceprobe.record.profile`,
# the click-free form of `traceprobe profile`). Writes into OUTDIR:
#   convnet_gpu/      examples/convnet_gpu.py on one GPU (the CPU when there is none)
#   ddp_train/        examples/ddp_train.py: NCCL, one rank per GPU (2+ GPUs); on ONE GPU a
#                     single NCCL rank (DDP with one rank: no gradient exchange to overlap;
#                     the 2-GPU run needs a 2-GPU machine); on the CPU 2 gloo ranks
#   *.txt             what each command printed (its summary, the analyze headlines)
#   overhead.txt/.json  the conv-net timed with and without the profiler (3 runs each)
#   report.txt        `traceprobe analyze` on both runs, where the analysis deps are installed
#   COMMANDS.txt      the commands, the machine, the date
set -euo pipefail
source scripts/gpu/common.sh scripts/gpu/profile.sh "${1:-}"

run() {  # run NAME CMD...: log the command, keep its output
  local name=$1; shift
  echo "$*" >> "$LOG"
  "$@" 2>&1 | tee "$OUT/$name.txt"
  return "${PIPESTATUS[0]}"
}

run convnet_gpu $PY -m traceprobe.record.profile -o "$OUT" --force -- \
  examples/convnet_gpu.py --steps 30

if [ "$GPUS" -ge 2 ]; then
  NPROC=$GPUS
  NOTE="DDP with NCCL on $GPUS GPUs, one rank each."
elif [ "$GPUS" -eq 1 ]; then
  NPROC=1
  NOTE="ONE GPU: DDP ran as a single NCCL rank (no peer to exchange gradients with); a 2-GPU machine is needed for the 2-rank NCCL run."
else
  NPROC=2
  NOTE="No GPU: DDP ran as 2 gloo ranks on the CPU."
fi
echo "# $NOTE" | tee -a "$LOG"
run ddp_train $PY -m traceprobe.record.profile -o "$OUT" --force --nproc-per-node "$NPROC" -- \
  examples/ddp_train.py --steps 30

run overhead $PY scripts/profile_overhead.py --runs 3 --json "$OUT/overhead.json" -- \
  examples/convnet_gpu.py --steps 60

if $PY -c "import msgspec, pandas" 2>/dev/null; then
  { for d in convnet_gpu ddp_train; do
      echo "\$ traceprobe analyze $OUT/$d"; $PY -m traceprobe.cli analyze "$OUT/$d"; echo; done
  } > "$OUT/report.txt" 2>&1
  echo "analyze report: $OUT/report.txt"
else
  echo "No analysis deps here (msgspec, pandas): run 'traceprobe analyze $OUT/convnet_gpu' and" \
       "'traceprobe analyze $OUT/ddp_train' where traceprobe is installed." | tee "$OUT/report.txt"
fi
du -sh "$OUT"/*/ | tee -a "$LOG"
