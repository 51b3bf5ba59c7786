"""Run a command; sample the summed RSS of its process tree every 0.5 s; print wall, CPU (all
descendants, as reaped), peak tree RSS, peak single-process RSS, load averages at start/end."""
import os, resource, subprocess, sys, time, json

def tree(root):
    kids = {}
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
        p = todo.pop(); out.append(p); todo += kids.get(p, [])
    return out

def rss(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0

load0 = os.getloadavg()
t0 = time.monotonic()
proc = subprocess.Popen(sys.argv[2:], stdout=open(sys.argv[1] + ".out", "w"), stderr=open(sys.argv[1] + ".err", "w"))
peak_sum = peak_one = 0
loads = []
while proc.poll() is None:
    pids = tree(proc.pid)
    sizes = [rss(p) for p in pids]
    peak_sum = max(peak_sum, sum(sizes)); peak_one = max(peak_one, max(sizes or [0]))
    if int(time.monotonic() - t0) % 30 == 0:
        loads.append(os.getloadavg()[0])
    time.sleep(0.5)
wall = time.monotonic() - t0
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
res = {"cmd": sys.argv[2:], "rc": proc.returncode, "wall_s": round(wall, 1), "cpu_s": round(ru.ru_utime + ru.ru_stime, 1),
       "peak_tree_rss_gb": round(peak_sum / 1e9, 2), "peak_one_rss_gb": round(peak_one / 1e9, 2),
       "maxrss_children_gb": round(ru.ru_maxrss / 1e6, 2), "load_start": load0, "load_end": os.getloadavg(),
       "load1_mean": round(sum(loads) / len(loads), 2) if loads else None}
print(json.dumps(res))
with open(sys.argv[1] + ".json", "w") as f:
    json.dump(res, f)
