#!/usr/bin/python3
"""make demo: the seed job on the lab, without and with --dist-bind."""
import os, sys
sys.path.insert(0, os.path.dirname(__file__))
from labkit import Lab, device_of
from devmodel import own_from_slurm

JOB = "-N2 -n5 --gpus-per-task=1"


def show(title, rows, own):
    print("\n" + title)
    print("  %-5s %-6s %-26s %-21s %s" % ("rank", "node", "LOCAL_RANK", "CUDA_VISIBLE_DEVICES", "cuda:LOCAL_RANK is"))
    for r in sorted(rows):
        x = rows[r]
        local = x["LOCAL_RANK"]
        shown_local = local if local is not None else "unset (SLURM_LOCALID=%s)" % x["SLURM_LOCALID"]
        ordinal = int(local if local is not None else x["SLURM_LOCALID"])
        gpu = device_of(x, ordinal)
        n = len((x["CUDA_VISIBLE_DEVICES"] or "").split(","))
        verdict = ("GPU %s" % gpu) if gpu is not None else "invalid device ordinal (%d visible)" % n
        ok = gpu is not None and [gpu] == own[r]
        print("  %-5s %-6s %-26s %-21s %s%s" % (r, x["SLURMD_NODENAME"], shown_local, x["CUDA_VISIBLE_DEVICES"],
                                              verdict, "" if ok else "   <-- wrong"))


with Lab() as lab:
    print("dist-bind demo: srun %s on a two-node lab (node1, node2: 3 CPUs, 4 GPUs each)" % JOB)
    base = lab.table(JOB)
    own = {r: own_from_slurm(b) for r, b in base.items()}  # the GPU Slurm bound each task to
    show("Without --dist-bind (frameworks fall back to SLURM_LOCALID):", base, own)
    fixed = lab.table(JOB + " --dist-bind")
    show("With --dist-bind:", fixed, own)
    f0 = fixed[0]
    print("\n  every task also has RANK, WORLD_SIZE=%s, LOCAL_WORLD_SIZE (3 on node1, 2 on node2),"
          " NODE_RANK, MASTER_ADDR=%s, MASTER_PORT=%s" % (f0["WORLD_SIZE"], f0["MASTER_ADDR"], f0["MASTER_PORT"]))
    bad = [r for r in fixed if [device_of(fixed[r], int(fixed[r]["LOCAL_RANK"]))] != own[r]]
    if bad or len(fixed) != 5:
        print("\nDEMO FAILED: ranks %s do not get Slurm's GPU" % bad)
        sys.exit(1)
    print("\nwith --dist-bind, device LOCAL_RANK is the GPU Slurm bound each task to, on every rank.")
