"""Run a command; print the peak resident memory of its whole process tree (sampled every 5 ms).

    python scripts/tree_rss.py COMMAND [ARGS...]
"""

import subprocess
import sys
import time

import psutil

proc = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL)
root = psutil.Process(proc.pid)
peak = peak_max = 0
while proc.poll() is None:
    try:
        rss = [q.memory_info().rss for q in [root, *root.children(recursive=True)]]
        peak, peak_max = max(peak, sum(rss)), max(peak_max, max(rss))
    except psutil.Error:
        pass
    time.sleep(0.005)
print(f"sum-of-tree peak {peak / 2**20:.0f} MB, largest single process {peak_max / 2**20:.0f} MB")
sys.exit(proc.returncode)
