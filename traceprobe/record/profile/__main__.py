"""``python -m traceprobe.record.profile [OPTIONS] (SCRIPT.py | -m MODULE) [ARGS]``.

The argparse twin of ``traceprobe profile``: under the user's own launcher
(``torchrun --nproc-per-node 2 -m traceprobe.record.profile -- train.py``), for the ranks
``traceprobe profile --nproc-per-node`` launches, and where click is not installed.
A rank leaves with ``os._exit`` once its files are written: with gloo and the profiler,
interpreter teardown sometimes aborts on a C++ thread still joinable (see
:mod:`traceprobe.record.ddp_worker`).
"""

import os
import sys

from traceprobe.record.profile import main

status = main(sys.argv[1:])
if "RANK" in os.environ:
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)
sys.exit(status)
