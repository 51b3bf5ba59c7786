# A test instrument of submitgen (not from reference-kernels): runs eval.py with POPCORN_FD on a
# pipe of its own and copies every line it writes, unchanged, to the caller's POPCORN_FD and to
# $TEE_FILE, so a test (or an H200 run) can hold submitgen's table against eval.py's own lines.
import os
import subprocess
import sys

fd = int(os.environ["POPCORN_FD"])
r, w = os.pipe()
env = dict(os.environ, POPCORN_FD=str(w))
proc = subprocess.Popen([sys.executable, "eval.py", *sys.argv[1:]], pass_fds=(w,), env=env)
os.close(w)
out = os.fdopen(fd, "wb", buffering=0)
with open(os.environ["TEE_FILE"], "wb") as tee, os.fdopen(r, "rb") as lines:
    for line in lines:
        out.write(line)
        tee.write(line)
        tee.flush()
sys.exit(proc.wait())
