# Shared by the recording scripts in scripts/gpu/ (sourced, not run): the set-up every one of
# them does first. After `source scripts/gpu/common.sh SCRIPT OUTDIR`: $OUT, $PY, $LOG and $GPUS
# are set, PYTHONPATH holds the repo root, and $LOG (OUTDIR/COMMANDS.txt) starts with the
# command, the machine, its GPUs and torch's version.
[ -n "${2:-}" ] || { echo "usage: PYTHONPATH=. $1 OUTDIR" >&2; exit 2; }
OUT=$2
PY=${PYTHON:-python3}
export PYTHONPATH=".${PYTHONPATH:+:$PYTHONPATH}"
mkdir -p "$OUT"
GPUS=$($PY -c "import torch; print(torch.cuda.device_count() if torch.cuda.is_available() else 0)")
LOG="$OUT/COMMANDS.txt"
{
  echo "# made by: PYTHONPATH=. $1 $OUT   ($(date -u +%FT%TZ))"
  echo "# host $(hostname); GPUs: $GPUS"
  command -v nvidia-smi >/dev/null && nvidia-smi -L || true
  $PY -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)"
} > "$LOG"
