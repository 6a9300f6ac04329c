#!/usr/bin/python3
"""A real client: PyTorch (Debian's python3-torch, gloo, env://) all_reduce
under srun -N2 -n5 --gpus-per-task=1 --dist-bind, also with rank 0 on node2.
Without --dist-bind the same program cannot even start."""
# lab-configs: plain cgroup
# lab-releases: every (behaviour that differs by release: runs on 24.11 too)
import os, re, subprocess, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "kit"))
from labkit import Lab, Test, skip, PROBES

if subprocess.run(["/usr/bin/python3", "-c", "import torch.distributed as d; assert d.is_available()"],
                  capture_output=True).returncode != 0:
    skip("python3-torch with torch.distributed is not installed (make deps)")

PROG = ["/usr/bin/python3", os.path.join(PROBES, "torch_allreduce.py")]
# A PyTorch built without libuv (Debian 13's 2.6) refuses env:// unless
# USE_LIBUV=0 (README, troubleshooting; t_releases shows the failure).
NO_LIBUV = "without libuv" in subprocess.run(
    ["/usr/bin/python3", "-c", "import torch.distributed as d; d.TCPStore('127.0.0.1', 0, 1, True, use_libuv=True)"],
    capture_output=True, text=True).stderr
TORCH_ENV = {"USE_LIBUV": "0"} if NO_LIBUV else None
t = Test("pytorch")


def run(lab, args, want_rank0_host):
    r = lab.srun("-t 3 " + args, PROG, env=TORCH_ENV, timeout=240)
    rows = [dict(kv.split("=") for kv in l.split()[1:]) for l in r.stdout.splitlines() if l.startswith("TORCH ")]
    t.eq(r.returncode, 0, args + ": srun exit status")
    t.eq(sorted(int(x["rank"]) for x in rows), [0, 1, 2, 3, 4], args + ": all five ranks report")
    t.eq({x["world"] for x in rows}, {"5"}, args + ": world size 5 everywhere")
    t.eq({x["sum"] for x in rows}, {"15"}, args + ": the same correct sum 1+2+3+4+5")
    r0 = [x["host"] for x in rows if x["rank"] == "0"]
    t.eq(r0, [want_rank0_host], args + ": rank 0 ran on " + want_rank0_host)
    if r.returncode != 0 or len(rows) != 5:
        print(r.stdout[-2000:], r.stderr[-3000:])


with Lab() as lab:
    r = lab.srun("-t 2 -N2 -n5 --gpus-per-task=1", PROG, env=TORCH_ENV, timeout=240)
    t.ok(r.returncode != 0 and "TORCH" not in r.stdout, "without --dist-bind, env:// has nothing to start from")
    t.ok(re.search(r"RANK|MASTER_ADDR|environment variable", r.stderr) is not None,
         "and PyTorch says which variable is missing")
    run(lab, "-N2 -n5 --gpus-per-task=1 --dist-bind", "node1")
    run(lab, "-n5 --gpus-per-node=4 -m arbitrary -w node2,node1,node2,node1,node2 --dist-bind", "node2")
t.done()
