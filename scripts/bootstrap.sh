#!/usr/bin/env bash
# Set up everything traceprobe needs, from nothing, into ./.venv (idempotent).
#   - Python packages: traceprobe (editable) with all extras, and torch (CPU build).
#   - Debian's chromium for the HTML-report browser test (only when run as root with apt);
#     --no-browser (what `make demo` passes) skips it: only `make test` needs a browser.
set -euo pipefail
browser=1
for arg in "$@"; do
    case "$arg" in
        --no-browser) browser=0 ;;
        *) echo "bootstrap: unknown option $arg (known: --no-browser)" >&2; exit 2 ;;
    esac
done
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
VENV=.venv
stamp=$VENV/.bootstrap-stamp
if [ ! -x "$VENV/bin/python" ]; then
    "$PY" -m venv "$VENV"
fi
if [ ! -f "$stamp" ] || [ setup.cfg -nt "$stamp" ] || [ scripts/bootstrap.sh -nt "$stamp" ] \
        || [ scripts/constraints.txt -nt "$stamp" ]; then
    echo "bootstrap: installing into ./.venv: traceprobe (editable) with every extra (record:" \
         "torch; plot, tensorboard, hta, fast, dask, s3, test, dev); this takes a few minutes the first time"
    "$VENV/bin/python" -m pip install -q --upgrade pip
    # torch 2.13.0 is the CPU build available offline on these machines; a GPU machine may
    # already have torch: pip keeps an installed torch that satisfies traceprobe[record].
    if ! "$VENV/bin/python" -c 'import torch' 2>/dev/null; then
        "$VENV/bin/python" -m pip install -q "torch==2.13.0" || "$VENV/bin/python" -m pip install -q torch
    fi
    # scripts/constraints.txt: pins that spare pip a long backtrack (boto3 against aiobotocore)
    "$VENV/bin/python" -m pip install -q -c scripts/constraints.txt \
        -e ".[record,plot,tensorboard,hta,fast,dask,s3,test,dev]"
    # bytecode for traceprobe's own modules (an editable install leaves them uncompiled)
    "$VENV/bin/python" -m compileall -q traceprobe >/dev/null || true
    touch "$stamp"
fi
if [ "$browser" = 1 ] && ! command -v chromium >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "bootstrap: installing Debian's chromium (apt-get, as root): the test suite opens the" \
             "HTML report in it (tests/render/test_browser.py); nothing else uses it"
        (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
            || echo "bootstrap: could not install chromium; the browser test will skip" >&2
    else
        echo "bootstrap: chromium not found; install Debian's 'chromium' for the browser test" >&2
    fi
fi
