"""Run a command (e.g. `python -m submitgen test FILE`) and print what it took, as JSON: wall time,
CPU time of all its processes (as reaped), the peak summed RSS of its process tree and of its
largest process (sampled every 0.5 s), and the load averages (start, end, the 1-minute mean).

    python benchmarks/bench_test_load.py OUT python -m submitgen test moe.py

writes OUT.out, OUT.err (the command's output) and OUT.json. Results:
benchmarks/results/cpu-2026-12-07-test-idle/."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time


def tree(root: int) -> list[int]:
    kids: dict[int, list[int]] = {}
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                with open(f"/proc/{p}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                kids.setdefault(ppid, []).append(int(p))
            except OSError:
                pass
    out, todo = [], [root]
    while todo:
        p = todo.pop()
        out.append(p)
        todo += kids.get(p, [])
    return out


def rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def main(out: str, command: list[str]) -> dict:
    load0 = os.getloadavg()
    t0 = time.monotonic()
    peak_sum = peak_one = 0
    loads = []
    with open(out + ".out", "w") as stdout, open(out + ".err", "w") as stderr:
        proc = subprocess.Popen(command, stdout=stdout, stderr=stderr)
        while proc.poll() is None:
            sizes = [rss(p) for p in tree(proc.pid)]
            peak_sum = max(peak_sum, sum(sizes))
            peak_one = max(peak_one, max(sizes or [0]))
            if int(time.monotonic() - t0) % 30 == 0:
                loads.append(os.getloadavg()[0])
            time.sleep(0.5)
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    res = {"cmd": command, "rc": proc.returncode, "wall_s": round(time.monotonic() - t0, 1),
           "cpu_s": round(ru.ru_utime + ru.ru_stime, 1), "peak_tree_rss_gb": round(peak_sum / 1e9, 2),
           "peak_one_rss_gb": round(peak_one / 1e9, 2), "maxrss_children_gb": round(ru.ru_maxrss / 1e6, 2),
           "load_start": load0, "load_end": os.getloadavg(),
           "load1_mean": round(sum(loads) / len(loads), 2) if loads else None}
    with open(out + ".json", "w") as f:
        json.dump(res, f)
    return res


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], sys.argv[2:])))
