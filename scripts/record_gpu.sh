#!/usr/bin/env bash
# Record every traceprobe experiment on a GPU machine (meant for 2 GPUs), then summarise.
#
#   scripts/record_gpu.sh OUTDIR [more `traceprobe record` options, e.g. --force]
#
# Works from a plain copy of the repo: traceprobe need not be installed (PYTHONPATH=src),
# and the record path needs only torch, click and tqdm. NVLink multicast stays off
# (NCCL_NVLS_ENABLE=0, TORCH_SYMM_MEM_DISABLE_MULTICAST=1, NVSHMEM_DISABLE_NVLS=1), for
# this process and the torchrun ranks it starts. Expect a few minutes on 2 H200s; the
# whole run is stopped (cleanly: no half-written folder) after TRACEPROBE_TIMEOUT
# seconds (default 600). Exit status: that of `traceprobe record`.
set -euo pipefail

if [[ $# -lt 1 || $1 == -* ]]; then
    echo "usage: $0 OUTDIR [traceprobe record options...]" >&2
    exit 2
fi
out=$1
shift
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
py=${PYTHON:-python3}
export PYTHONPATH="$repo/src${PYTHONPATH:+:$PYTHONPATH}"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1

"$py" - <<'PY'
import sys
import torch
n = torch.cuda.device_count() if torch.cuda.is_available() else 0
names = ", ".join(torch.cuda.get_device_name(i) for i in range(n))
print(f"torch {torch.__version__}, CUDA {torch.version.cuda}, {n} GPU(s): {names or '-'}")
if n == 0:
    sys.exit("record_gpu.sh: no CUDA GPU is visible; run this on the GPU machine")
if n < 2:
    print("record_gpu.sh: one GPU: the two-GPU workloads run on it and say so", file=sys.stderr)
PY

start=$(date +%s)
set +e
timeout --signal=INT --kill-after=60 "${TRACEPROBE_TIMEOUT:-600}" \
    "$py" -c 'import sys; from traceprobe.cli import main; sys.exit(main(sys.argv[1:]))' \
    record --out "$out" --device cuda --scale full --record-shapes --profile-memory "$@"
rc=$?
set -e
echo
echo "== traceprobe record exited $rc after $(( $(date +%s) - start )) s; summary of $out:"
"$py" -m traceprobe.record.meta "$out" || true
exit "$rc"
