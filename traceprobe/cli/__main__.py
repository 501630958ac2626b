"""`python -m traceprobe.cli ...` (handy where the console script is not installed)."""

import sys

from traceprobe.cli import main

sys.exit(main())
