"""`python -m traceprobe.cli ...` (handy where the console script is not installed)."""

import sys

from traceprobe.cli import main

if __name__ == "__main__":  # worker processes started by spawn import this module too
    sys.exit(main())
