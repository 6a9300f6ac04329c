#!/usr/bin/python3
"""slurmctld's RPCs per srun, with and without --dist-bind.

slurmctld is the one daemon of a cluster that does not scale out, and
sites with many short steps watch its RPC load (sdiag).  dist-bind asks it
nothing on the default path: any block, cyclic or plane layout without a
topology's node ranking, master_addr=name or suffix:.  Only where a fact is
the controller's alone does srun ask, once: the step's layout with -m
arbitrary, under a topology that may rank the nodes (Slurm 26.05), and for
master_addr=addr (rank 0's node; its NodeAddr comes from srun's own
configuration); never the whole configuration (REQUEST_BUILD_INFO), also in
a configless cluster, where srun and slurmd fetch their configuration.

Counted with sdiag, by user: srun runs as nobody, so that what slurmd and
slurmstepd send (as root) is not counted, and what nobody sent over a few
sruns is srun's own.  The count is deterministic; no timing."""
# lab-configs: plain
# (The configless lab runs with device cgroups, where the nodes read cgroup.conf.)
# lab-releases: every (behaviour that differs by release: runs on 24.11 too)
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "kit"))
from labkit import Lab, Test, check_mapping, bound_own, unbound_own, slurm_at_least

RUNS = 3
SEED = "-N2 -n5 --gpus-per-task=1"
# Slurm 22.05 refuses --gpus-per-task with -m arbitrary (insufficient GRES).
ARBITRARY = "-m arbitrary -w node2,node1,node2,node1,node2 -n5 --gpus-per-node=4"
# The RPCs dist-bind's srun side may send, by type (sdiag's names).
OURS = ("REQUEST_BUILD_INFO", "REQUEST_STEP_LAYOUT", "REQUEST_NODE_INFO_SINGLE", "REQUEST_NODE_INFO")


def rpcs(t, lab, args, what):
    """(RPCs per srun that srun's user sent, {type: count over the runs});
    None if an srun failed."""
    count, types, failed = lab.srun_rpcs(args, RUNS)
    if failed:
        t.ok(False, "%s: srun %s ran as nobody (rc %d) %s" % (what, args, failed.returncode,
                                                             failed.stderr.strip()[-300:]))
        return None, {}
    if count != int(count):
        t.ok(False, "%s: %s RPCs per srun is not the same number in every srun" % (what, count))
    return count, types


def expect(t, lab, args, extra, what, mode="rank"):
    """srun `args` with --dist-bind=MODE sends exactly `extra` RPCs more
    than without."""
    base, _ = rpcs(t, lab, args, what + " without")
    ours, types = rpcs(t, lab, args + " --dist-bind=" + mode, what)
    if base is None or ours is None:
        return
    t.ok(base > 0, "%s: sdiag counted srun's RPCs (%s without --dist-bind)" % (what, base))
    t.eq(ours - base, extra, "%s: RPCs per srun added by --dist-bind (%s with, %s without; by type: %s)"
         % (what, ours, base, {k: v for k, v in types.items() if k in OURS}))
    t.eq(types.get("REQUEST_BUILD_INFO", 0), 0, what + ": slurmctld's whole configuration never asked for")
    t.eq(types.get("REQUEST_NODE_INFO_SINGLE", 0) + types.get("REQUEST_NODE_INFO", 0), 0,
         what + ": no node asked for (NodeAddr from srun's own configuration)")


def default_path(t, lab, tag):
    # The plane layout with --ntasks-per-node: Slurm 24.11 refuses
    # "-m plane=2" on these 3-CPU nodes without it ("Requested node
    # configuration is not available").
    for args, mode in ((SEED, "rank"), (SEED, "isolate"), (SEED, "closest"), (SEED, "env"),
                       ("-N2 -n5 -m cyclic --gpus-per-task=1", "rank"),
                       ("-N2 -n4 --ntasks-per-node=2 -m plane=2 --gpus-per-task=1", "rank"),
                       ("-N2 -n4 --ntasks-per-node=2 --gpus-per-node=2 --gpu-bind=none", "rank"),
                       ("-N2 -n2", "rank")):
        expect(t, lab, args, 0, "%s, %s, %s" % (tag, args, mode), mode)


t = Test("rpcs")
with Lab() as lab:
    print("-- the default path: block, cyclic, plane, master_addr=name")
    default_path(t, lab, "master_addr=name")
    lab.plugstack("master_addr=suffix:-ib")
    expect(t, lab, SEED, 0, "master_addr=suffix:")
    print("-- what only slurmctld knows: one RPC")
    lab.plugstack("")
    expect(t, lab, ARBITRARY, 1, "-m arbitrary")
    lab.plugstack("master_addr=addr")
    expect(t, lab, SEED, 1, "master_addr=addr")
    expect(t, lab, ARBITRARY, 1, "-m arbitrary, master_addr=addr")
    # The values behind those counts: rank 0's NodeAddr from srun's own
    # configuration (node2 is 127.0.0.3 in the lab).
    base = lab.table(ARBITRARY)
    fixed = lab.table(ARBITRARY + " --dist-bind")
    check_mapping(t, base, fixed, "rank", unbound_own(base), master="127.0.0.3")

with Lab(tree_first="node2") as lab:
    # 26.05 ranks the nodes by topology: srun reads the layout (the nodes
    # cannot tell where rank 0 is).  Older releases have no node ranking.
    ranks = slurm_at_least("26.05")
    print("-- topology/tree: %s" % ("a node ranking, one RPC" if ranks else "no node ranking before 26.05"))
    expect(t, lab, SEED, 1 if ranks else 0, "topology/tree")

with Lab(configless=True, cgroup=True) as lab:
    print("-- configless: slurmd and srun fetch their configuration from slurmctld")
    default_path(t, lab, "configless")
    expect(t, lab, ARBITRARY, 1, "configless, -m arbitrary")
    # What the nodes read of their own configuration in configless mode:
    # the device cgroups of the cgroup configuration.
    for args, own in ((SEED, bound_own), (SEED + " --dist-bind=isolate", bound_own),
                      ("-N2 -n4 --ntasks-per-node=2 --gpus-per-node=2 --gpu-bind=none", unbound_own)):
        base = lab.table(args.replace(" --dist-bind=isolate", ""))
        fixed = lab.table(args if "--dist-bind" in args else args + " --dist-bind")
        check_mapping(t, base, fixed, "isolate" if "isolate" in args else "rank", own(base))
t.done()
