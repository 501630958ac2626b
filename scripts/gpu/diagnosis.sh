#!/usr/bin/env bash
# Record what issue 10's diagnosis needs on a GPU machine: the hand-instrumented DataLoader loop.
#
#   PYTHONPATH=. scripts/gpu/diagnosis.sh OUTDIR
#
# Needs python3 with torch (CUDA build); nothing else, no network. Falls back to the CPU when no
# GPU is visible (so it can be tried anywhere). Writes:
#   OUTDIR/dataloader-loop/<worker>.<id>.pt.trace.json.gz   the profiler's gzipped trace
#   OUTDIR/dataloader-loop/machine.txt                      torch, CUDA and device names
# Commit OUTDIR/dataloader-loop as sample_traces/h200/examples/dataloader-loop/ (tests pick it up).
set -euo pipefail
out=${1:?usage: scripts/gpu/diagnosis.sh OUTDIR}
here=$(cd "$(dirname "$0")/../.." && pwd)
py=${PYTHON:-python3}
dest="$out/dataloader-loop"
mkdir -p "$dest"
if [ -n "$(ls -A "$dest" 2>/dev/null)" ]; then
  echo "diagnosis.sh: $dest is not empty; give a new OUTDIR (inputs are never overwritten)" >&2
  exit 2
fi
"$py" "$here/examples/dataloader_loop.py" "$dest"
"$py" - "$dest/machine.txt" <<'PY'
import platform, sys
import torch
lines = [f"python {platform.python_version()}", f"torch {torch.__version__}",
         f"cuda {torch.version.cuda}", f"host {platform.node()}"]
if torch.cuda.is_available():
    lines += [f"device {i}: {torch.cuda.get_device_name(i)}" for i in range(torch.cuda.device_count())]
else:
    lines.append("device: none (recorded on the CPU)")
open(sys.argv[1], "w").write("\n".join(lines) + "\n")
PY
ls -l "$dest"
