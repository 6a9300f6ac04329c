#!/usr/bin/python3
"""accelerate and transformers (Debian sid's python3-accelerate and
python3-transformers) under srun -N2 -n5 --dist-bind, on CPUs with gloo:
PartialState(cpu=True, backend="gloo") has 5 processes, process_index =
RANK, local_process_index = LOCAL_RANK, and a gloo all-reduce works;
transformers' TrainingArguments says the same, on that state
(accelerator_config use_configured_state) and on its own with
ddp_backend="gloo".

The trap, measured here and kept as a check: without backend="gloo"
accelerate (and TrainingArguments, which builds its own PartialState) picks
torch's MPI backend wherever torch has one (Debian's has), and under srun
without a PMIx server for Open MPI every task is a world of one.  Without
--dist-bind (no LOCAL_RANK, WORLD_SIZE) PartialState(cpu=True,
backend="gloo") fails on every task ("Default process group has not been
initialized")."""
# lab-releases: 26.05 (Debian sid packages accelerate and transformers)
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "kit"))
from labkit import PROBES, Lab, Test, skip  # noqa: E402

PY = "/usr/bin/python3"
r = subprocess.run([PY, "-c", "import accelerate, transformers; print(accelerate.__version__, transformers.__version__)"],
                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
if r.returncode != 0:
    skip("accelerate and transformers are not installed (Debian sid's; this test runs on 26.05): "
         + r.stderr.strip()[-200:])
VERSIONS = "accelerate %s, transformers %s" % tuple(r.stdout.split())
# Debian's torch 2.14 is built without libuv: env:// needs USE_LIBUV=0
# (as in t_pytorch).
NO_LIBUV = "without libuv" in subprocess.run(
    [PY, "-c", "import torch.distributed as d; d.TCPStore('127.0.0.1', 0, 1, True, use_libuv=True)"],
    capture_output=True, text=True).stderr
ENV = {"USE_LIBUV": "0"} if NO_LIBUV else {}
PROG = [PY, os.path.join(PROBES, "accelerate_probe.py")]
SEED = "-t 3 -N2 -n5 --gpus-per-task=1"
t = Test("accelerate")
print("(%s%s)" % (VERSIONS, ", USE_LIBUV=0" if NO_LIBUV else ""))


def rows(stdout):
    out = []
    for line in stdout.splitlines():
        if line.startswith("ACCEL "):
            out.append(dict(kv.split("=", 1) for kv in line.split()[1:]))
    return sorted(out, key=lambda f: (f["env_rank"], f["host"], f["index"]))


def run(lab, args, mode, quiet=False):
    r = lab.srun(args, PROG + [mode], env=ENV, timeout=300)
    got = rows(r.stdout)
    if len(got) != 5 and not quiet:
        print(r.stdout[-2000:], r.stderr[-3000:])
    return got, r


HOSTS = {0: ("node1", 0), 1: ("node1", 1), 2: ("node1", 2), 3: ("node2", 0), 4: ("node2", 1)}

with Lab() as lab:
    for mode in ("gloo", "ta-gloo"):
        what = "--dist-bind, %s: " % mode
        got, _ = run(lab, SEED + " --dist-bind", mode)
        t.eq(len(got), 5, what + "five tasks report")
        t.eq({(g["n"], g["dist"], g["backend"]) for g in got}, {("5", "5", "gloo")},
             what + "num_processes 5, a gloo world of 5")
        t.eq({int(g["env_rank"]): (g["host"], int(g["env_local"])) for g in got}, HOSTS,
             what + "RANK and LOCAL_RANK from dist-bind")
        t.eq([(g["index"], g["local"]) for g in got], [(g["env_rank"], g["env_local"]) for g in got],
             what + "process_index == RANK, local_process_index == LOCAL_RANK")
        t.eq({g["sum"] for g in got}, {"15"}, what + "the all-reduce's sum 1+2+3+4+5")
        t.eq([(g["ta_index"], g["ta_local"], g["ta_world"]) for g in got],
             [(g["env_rank"], g["env_local"], "5") for g in got],
             what + "TrainingArguments: process_index, local_process_index, world_size")
        # Its `local_rank` field is only what a launcher passed as an
        # argument (torch.distributed.launch); transformers says to use
        # local_process_index.
        t.eq({g["ta_local_rank_field"] for g in got}, {"-1"}, what + "TrainingArguments.local_rank (the field) stays -1")

    # The trap: accelerate's own choice of backend.
    for mode in ("default", "ta-default"):
        got, _ = run(lab, SEED + " --dist-bind", mode)
        t.eq(sorted({(g["backend"], g["n"]) for g in got}), [("mpi", "1")],
             "trap, --dist-bind, %s: accelerate picks torch's MPI backend and every task is a world of one" % mode)
    # Without dist-bind nothing tells accelerate there is a world (no
    # LOCAL_RANK, WORLD_SIZE), and with backend="gloo" asked for, 1.14 then
    # calls get_world_size() on a process group it never made.
    got, r = run(lab, SEED, "gloo", quiet=True)
    t.ok(not got and r.stderr.count("Default process group has not been initialized") == 5,
         "without --dist-bind: PartialState(cpu=True, backend=\"gloo\") fails on every task (%s)"
         % r.stderr.strip()[-160:])
t.done()
