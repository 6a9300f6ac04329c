#!/usr/bin/python3
"""The layouts of the lab-notes table, each against the same job without
--dist-bind: cyclic, arbitrary (rank 0 on node2: node rank 0 and
MASTER_ADDR there), map_gpu, --gpus-per-node without binding, more tasks
than GPUs, no GPUs, --gpu-bind=none, a node's only task bound by
--gpu-bind (25.11+ binds it); and an srun without dist-bind under the
nodes' default mode (Slurm's node order where rank 0 runs on the first
node, the step refused where it does not).  In the
cgroup configuration an explicit per-task --gpu-bind confines each task to
its own GPU, so rank refuses it there (t_cgroup has the details)."""
# lab-configs: plain cgroup cgroup2
# lab-releases: every (behaviour that differs by release: runs on 24.11 too)
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "kit"))
from labkit import Lab, Test, check_mapping, bound_own, unbound_own, nobind_lists, parse_probe, PROBE, slurm_at_least
from devmodel import own_from_slurm

t = Test("layouts")
with Lab() as lab:
    print("-- cyclic")
    job = "-N2 -n5 --distribution=cyclic --gpus-per-task=1"
    base = lab.table(job)
    t.eq([base[r]["SLURMD_NODENAME"] for r in range(5)], ["node1", "node2", "node1", "node2", "node1"],
         "cyclic baseline alternates nodes")
    check_mapping(t, base, lab.table(job + " --dist-bind"), "rank", bound_own(base))

    print("-- arbitrary, rank 0 on node2")
    job = "-n5 -m arbitrary -w node2,node1,node2,node1,node2 --gpus-per-node=4"
    base = lab.table(job)
    t.eq(base[0]["SLURMD_NODENAME"] if base else None, "node2", "baseline: rank 0 on node2")
    fixed = lab.table(job + " --dist-bind")
    check_mapping(t, base, fixed, "rank", unbound_own(base), master="node2")
    t.eq(fixed[1]["MASTER_ADDR"] if fixed else None, "node2", "rank 1 on node1 gets MASTER_ADDR=node2")
    t.eq(sorted({(f["SLURMD_NODENAME"], f["NODE_RANK"], f["GROUP_RANK"], f["MASTER_ADDR"]) for f in fixed.values()}),
         [("node1", "1", "1", "node2"), ("node2", "0", "0", "node2")],
         "node2 (rank 0's) is node rank 0, node1 node rank 1, MASTER_ADDR=node2 in every task")

    print("-- srun without dist-bind, the nodes' default rank: Slurm's node order where it is right")
    # srun reads a slurm.conf whose plugstack is empty; the nodes keep theirs.
    client = lab.client_conf("empty", "")
    lab.plugstack("default=rank")
    plain = lab.run(["srun", "-N2", "-n5", PROBE], env={"SLURM_CONF": client})
    rows = parse_probe(plain.stdout)
    t.eq(sorted((r["SLURMD_NODENAME"], r["NODE_RANK"]) for r in rows.values()),
         [("node1", "0")] * 3 + [("node2", "1")] * 2, "block: node ranks by Slurm's node order")
    r = lab.run(["srun", "-n5", "-m", "arbitrary", "-w", "node2,node1,node2,node1,node2", PROBE],
                env={"SLURM_CONF": client})
    t.eq(parse_probe(r.stdout), {}, "arbitrary: no task runs with node ranks that do not start at rank 0's node")
    msgs = [l for l in r.stderr.splitlines() if "dist-bind:" in l]
    t.ok(any("node node2 runs rank 0" in l and "DIST_BIND_NODE_RANKS" in l for l in msgs)
         and any("node node1 is the first node" in l for l in msgs),
         "one message from each node that can tell: %s" % msgs)
    lab.plugstack("")

    print("-- map_gpu:1,0,3")
    job = "-N2 -n5 --gpus-per-node=4 --gpu-bind=map_gpu:1,0,3"
    base = lab.table(job)
    t.eq([own_from_slurm(base[r]) for r in range(3)], [[1], [0], [3]], "baseline binds 1,0,3 on node1")
    if lab.cgroup:
        r = lab.srun(job + " --dist-bind", ["/bin/echo", "RAN"])
        t.ok(r.stdout.count("RAN") == 0 and "--gpu-bind=none" in r.stderr,
             "cgroup: rank refuses tasks confined to their own GPU, naming --gpu-bind=none")
    else:
        fixed = lab.table(job + " --dist-bind")
        check_mapping(t, base, fixed, "rank", bound_own(base))
        t.eq([fixed[r]["CUDA_VISIBLE_DEVICES"] for r in range(3)], ["1,0,2,3", "1,0,2,3", "0,1,3,2"],
             "map_gpu: own GPU at LOCAL_RANK, the others in Slurm's order")
    iso = lab.table(job + " --dist-bind=isolate")
    check_mapping(t, base, iso, "isolate", bound_own(base))

    print("-- a node's only task, --gpu-bind=map_gpu:1 (bound from 25.11 on)")
    job = "-N1 -n1 -w node1 --gpus-per-node=2 --gpu-bind=map_gpu:1"
    base = lab.table(job)
    bound = slurm_at_least("25.11")
    t.eq(base[0]["CUDA_VISIBLE_DEVICES"] if base else None, ("0" if lab.cgroup else "1") if bound else "0,1",
         "baseline: Slurm binds the lone task to GPU 1" if bound else "baseline: Slurm leaves the lone task unbound")
    if bound and lab.cgroup:
        r = lab.srun(job + " --dist-bind", ["/bin/echo", "RAN"])
        t.ok(r.stdout.count("RAN") == 0 and "--gpu-bind=none" in r.stderr,
             "cgroup: rank refuses the lone task confined to its own GPU, naming --gpu-bind=none")
    else:
        # Bound: its own GPU is 1, not the first of the step's GPUs.
        # Unbound: a node's only task owns all of its step GPUs.
        check_mapping(t, base, lab.table(job + " --dist-bind"), "rank", bound_own(base))
    check_mapping(t, base, lab.table(job + " --dist-bind=isolate"), "isolate", bound_own(base))

    print("-- --gpus-per-node=4 without binding")
    job = "-N2 -n5 --gpus-per-node=4"
    base = lab.table(job)
    t.eq({b["CUDA_VISIBLE_DEVICES"] for b in base.values()}, {"0,1,2,3"}, "baseline: every task sees all 4")
    for mode in ("rank", "isolate"):
        check_mapping(t, base, lab.table(job + " --dist-bind=" + mode), mode, unbound_own(base))

    print("-- more tasks than GPUs")
    job = "-N1 -n3 -w node1 --gpus-per-node=2"
    r = lab.srun(job + " --dist-bind", ["/bin/echo", "RAN"])
    t.ok(r.returncode != 0, "rank mode fails with 3 tasks on 2 GPUs (rc %d)" % r.returncode)
    t.eq(r.stdout.count("RAN"), 0, "no task ran on a GPU nobody chose")
    msg = [l for l in r.stderr.splitlines() if "dist-bind:" in l]
    t.ok(any("node1" in l and "3 tasks" in l and "2 GPUs" in l and "share" in l for l in msg),
         "one clear message naming node, task count, GPU count: %s" % msg[:1])
    base = lab.table(job)
    shared = lab.table(job + " --dist-bind=share")
    t.eq(len(shared), 3, "with share all 3 tasks run")
    t.eq([shared[r]["DIST_BIND_DEVICE"] for r in range(3)], ["0", "1", "0"], "share: round-robin devices")
    t.eq({s["CUDA_VISIBLE_DEVICES"] for s in shared.values()}, {"0,1"}, "share: everyone sees the step's GPUs")
    t.eq([shared[r]["DIST_BIND_GPUS"] for r in range(3)], ["0", "1", "0"], "share: DIST_BIND_GPUS round-robin")
    check_mapping(t, base, shared, "rank", lambda r: [r % 2], share=True)

    print("-- no GPUs at all")
    job = "-N2 -n5"
    base = lab.table(job)
    fixed = lab.table(job + " --dist-bind", env={"CUDA_VISIBLE_DEVICES": "3"})
    check_mapping(t, base, fixed, "rank", lambda r: None)

    print("-- --gpu-bind=none")
    job = "-N2 -n5 --gpus-per-task=1 --gpu-bind=none"
    base = lab.table(job)
    t.eq([b["CUDA_VISIBLE_DEVICES"] for _, b in sorted(base.items())], nobind_lists(base, lab.cgroup),
         "baseline: Slurm's own lists (none before 23.11, the step's GPUs after)")
    for mode in ("rank", "isolate"):
        check_mapping(t, base, lab.table(job + " --dist-bind=" + mode), mode, unbound_own(base))
    fixed = lab.table(job + " --dist-bind=env")
    check_mapping(t, base, fixed, "env", unbound_own(base))
    t.eq([f["DIST_BIND_DEVICE"] for _, f in sorted(fixed.items())], ["0", "1", "2", "0", "1"],
         "env: DIST_BIND_DEVICE is the own GPU among all the task sees")
t.done()
