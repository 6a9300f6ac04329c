#!/usr/bin/python3
"""Rank 0 placed by network topology.

With topology/tree and node2's leaf switch listed first, Slurm 26.05 puts
task 0 on node2 although node1 is the step's first node; older releases
start on node1.  On every release MASTER_ADDR must be the host of rank 0
(rank 0 listens there, every other rank dials it) and NODE_RANK/GROUP_RANK
must count the step's nodes in the order of the lowest rank each runs, so
that the node of rank 0 is node rank 0 (torchrun's static rendezvous hosts
its store on node rank 0 at MASTER_ADDR)."""
# lab-configs: plain cgroup
# lab-releases: every (behaviour that differs by release: runs on 24.11 too)
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "kit"))
from labkit import Lab, Test, check_mapping, bound_own, slurm_at_least


def node_ranks(rows):
    """NODE_RANK per host as the spec orders nodes: by the lowest rank each runs."""
    order = []
    for r in sorted(rows):
        h = rows[r]["SLURMD_NODENAME"]
        if h not in order:
            order.append(h)
    return {h: str(i) for i, h in enumerate(order)}


def check_order(t, base, fixed, what):
    if not base or not fixed:
        t.ok(False, what + ": both jobs ran (%d and %d rows)" % (len(base), len(fixed)))
        return
    rank0 = base[0]["SLURMD_NODENAME"]
    want = node_ranks(base)
    for r in sorted(fixed):
        f = fixed[r]
        pre = "%s: rank %d on %s: " % (what, r, f["SLURMD_NODENAME"])
        t.eq(f["MASTER_ADDR"], rank0, pre + "MASTER_ADDR is rank 0's host")
        t.eq(f["NODE_RANK"], want[f["SLURMD_NODENAME"]], pre + "NODE_RANK (node of rank 0 first)")
        t.eq(f["GROUP_RANK"], f["NODE_RANK"], pre + "GROUP_RANK = NODE_RANK")


t = Test("topology")
with Lab(tree_first="node2") as lab:
    print("-- -N2 -n4 --gpus-per-task=1, node2's switch first")
    job = "-N2 -n4 --gpus-per-task=1"
    base = lab.table(job)
    rank0 = base[0]["SLURMD_NODENAME"] if base else None
    if slurm_at_least("26.05"):
        # What makes this test bite: without it the layout is the usual one.
        t.eq(rank0, "node2", "26.05 baseline: Slurm puts rank 0 on node2 by topology")
    print("   (rank 0 on %s without --dist-bind)" % rank0)
    fixed = lab.table(job + " --dist-bind")
    check_order(t, base, fixed, "gpus-per-task")
    check_mapping(t, base, fixed, "rank", bound_own(base), master=rank0)

    print("-- -N2 -n2 without GPUs")
    job = "-N2 -n2"
    base = lab.table(job)
    fixed = lab.table(job + " --dist-bind")
    check_order(t, base, fixed, "no GPUs")
    check_mapping(t, base, fixed, "rank", lambda r: None, master=base[0]["SLURMD_NODENAME"] if base else None)
t.done()
