#!/usr/bin/python3
"""dist-bind on a lab of 16 nodes (one slurmd each, in its own namespaces,
with its own address): every task's values checked against Slurm's own
layout of the same step without --dist-bind, on the shapes that only many
nodes show:
  - an uneven block layout (-N16 -n37: some nodes run 3 tasks, some 2);
  - -m cyclic over 16 nodes;
  - -m arbitrary with rank 0 on a middle node (node8);
  - a heterogeneous step (srun A : B, 3 + 2 nodes);
  - a topology/tree whose four leaf switches are listed so that Slurm 26.05
    ranks node9 first and places rank 0 there (earlier releases start on
    node1; the check is the same: rank 0's node is NODE_RANK 0 and
    MASTER_ADDR);
  - libdistbind brought up across all 16 nodes over TCP, PMI2 and (where
    Slurm has it) PMIx: dist-bind-check as every task, each rank's row
    against the same layout, one verdict;
  - srun asks slurmctld nothing more with --dist-bind at 16 nodes on the
    default path, one RPC where the topology ranks the nodes (26.05)."""
# lab-configs: plain
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "kit"))
from labkit import PROBE, Lab, Test, bound_own, check_mapping, node_order, parse_probe, slurm_at_least, unbound_own  # noqa: E402
from runtimekit import CHECK, check_rows, need  # noqa: E402

need(CHECK)
t = Test("many-nodes")
N = 16
UNEVEN = "-N16 -n37 --gpus-per-task=1"
# The four leaf switches, node9's first: 26.05 ranks node9..node12 first.
TREE = "node[9-12];node[1-4];node[5-8];node[13-16]"


def compare(lab, job, mode="rank", own=bound_own, master=None, what=None):
    what = what or job
    base = lab.table(job)
    fixed = lab.table(job + " --dist-bind=" + mode)
    if not t.ok(len(base) > 0 and len(fixed) == len(base), "%s: %d tasks without and %d with --dist-bind"
                % (what, len(base), len(fixed))):
        return base, fixed
    check_mapping(t, base, fixed, mode, own(base), master=master)
    return base, fixed


def bring_up(lab, job):
    """dist-bind-check as every task of `job` over each bootstrap: one row per
    rank, each where Slurm put the rank, and one verdict."""
    base = lab.table(job)
    hosts = node_order(base)
    for mpi, boot in lab.bootstraps():
        r = lab.srun("%s --dist-bind --mpi=%s" % (job, mpi), [CHECK], env={"DIST_BIND_TIMEOUT": "60"}, timeout=240)
        what = "%s --mpi=%s: " % (job, mpi)
        t.eq(r.returncode, 0, what + "every task exits 0 (stderr: %s)" % r.stderr.strip()[-300:])
        rows = check_rows(r.stdout)
        t.eq(sorted(rows), sorted(base), what + "one row per rank")
        wrong = [(k, rows[k].get("host"), rows[k].get("node"), rows[k].get("flags")) for k in rows
                 if k in base and (rows[k].get("host") != base[k]["SLURMD_NODENAME"]
                                   or rows[k].get("node") != str(hosts.index(base[k]["SLURMD_NODENAME"]))
                                   or rows[k].get("flags") != "ok")]
        t.eq(wrong, [], what + "every rank on Slurm's node, with its node rank, flagged ok")
        t.ok("%d ranks on %d nodes, place from dist-bind, exchange over %s" % (len(base), N, boot) in r.stdout,
             what + "the header names %d ranks on %d nodes and the exchange" % (len(base), N))
        t.ok("dist-bind-check: all checks passed" in r.stdout, what + "verdict")


with Lab(nodes=N) as lab:
    print("-- uneven block: -N16 -n37")
    base, _ = compare(lab, UNEVEN)
    counts = sorted({sum(1 for b in base.values() if b["SLURMD_NODENAME"] == h) for h in node_order(base)})
    t.ok(len(counts) > 1, "the layout is uneven: %s tasks per node" % counts)
    compare(lab, UNEVEN, "isolate")

    print("-- -m cyclic")
    base, _ = compare(lab, "-N16 -n37 -m cyclic --gpus-per-task=1")
    t.eq([base[r]["SLURMD_NODENAME"] for r in range(N)] if len(base) >= N else [], ["node%d" % i for i in
                                                                                     range(1, N + 1)],
         "cyclic baseline: ranks 0..15 on node1..node16")

    print("-- -m arbitrary, rank 0 on node8")
    hosts = ["node8", "node3", "node12", "node8", "node1", "node16", "node3", "node8", "node9", "node1"]
    job = "-n%d -m arbitrary -w %s --gpus-per-node=4" % (len(hosts), ",".join(hosts))
    base, fixed = compare(lab, job, own=unbound_own, master="node8", what="-m arbitrary, rank 0 on node8")
    t.eq(base[0]["SLURMD_NODENAME"] if base else None, "node8", "baseline: Slurm runs rank 0 on node8")
    t.eq(sorted({(f["SLURMD_NODENAME"], f["NODE_RANK"]) for f in fixed.values()}),
         sorted({("node8", "0"), ("node3", "1"), ("node12", "2"), ("node1", "3"), ("node16", "4"), ("node9", "5")}),
         "node ranks in the order of each node's lowest rank")

    print("-- a heterogeneous step: 3 + 2 nodes")
    r = lab.srun("-N3 -n7 --gpus-per-task=1 %s : -N2 -n3 --gpus-per-task=1" % PROBE, [PROBE], timeout=120)
    base = parse_probe(r.stdout)
    r = lab.srun("-N3 -n7 --gpus-per-task=1 --dist-bind %s : -N2 -n3 --gpus-per-task=1" % PROBE, [PROBE],
                 timeout=120)
    fixed = parse_probe(r.stdout)
    t.eq((len(base), len(fixed)), (10, 10), "srun A : B: 10 tasks without and with --dist-bind (%s)"
         % r.stderr.strip()[-200:])
    if len(base) == 10 and len(fixed) == 10:
        check_mapping(t, base, fixed, "rank", bound_own(base))

    print("-- libdistbind across the 16 nodes")
    bring_up(lab, "-N16 -n48 --gpus-per-task=1")

    print("-- slurmctld's RPCs at 16 nodes")
    without, _, failed = lab.srun_rpcs(UNEVEN)
    with_db, types, failed2 = lab.srun_rpcs(UNEVEN + " --dist-bind")
    t.ok(not failed and not failed2 and without, "the sruns ran as nobody")
    t.eq(with_db, without, "RPCs per srun: %s with --dist-bind, %s without" % (with_db, without))

with Lab(nodes=N, tree=TREE) as lab:
    ranks = slurm_at_least("26.05")
    print("-- topology/tree, node9's leaf switch first (%s)" % ("Slurm ranks node9 first" if ranks else
                                                                "no node ranking before 26.05"))
    base, fixed = compare(lab, UNEVEN, master="node9" if ranks else "node1")
    t.eq(base[0]["SLURMD_NODENAME"] if base else None, "node9" if ranks else "node1",
         "baseline: Slurm runs rank 0 on %s" % ("node9" if ranks else "node1"))
    without, _, _ = lab.srun_rpcs(UNEVEN)
    with_db, types, _ = lab.srun_rpcs(UNEVEN + " --dist-bind")
    t.eq(with_db - without if with_db is not None and without is not None else None, 1 if ranks else 0,
         "RPCs per srun added by --dist-bind (the step's layout where the topology ranks the nodes): %s"
         % {k: v for k, v in types.items() if k == "REQUEST_STEP_LAYOUT"})
t.done()
