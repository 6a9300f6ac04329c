#!/usr/bin/python3
"""dist-bind-check on the lab: the seed layout (srun -N2 -n5
--gpus-per-task=1 --dist-bind) under --mpi=pmix (where Slurm has it), pmi2 and none prints the
right table and passes; the same job without --dist-bind, and a layout
where ranks share a GPU, are flagged and fail; an exchange run without
authentication (DIST_BIND_TCP_INSECURE=1) is flagged."""
# lab-configs: plain cgroup cgroup2
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "kit"))
from labkit import Lab, Test  # noqa: E402
from runtimekit import CHECK, check_rows, need  # noqa: E402

need(CHECK)
t = Test("check-seed")
SEED = "-N2 -n5 --gpus-per-task=1"
# rank: (host, node, local, device, gpu as Slurm names it)
WANT = {0: ("node1", "0", "0/3", "0", "0"), 1: ("node1", "0", "1/3", "1", "1"), 2: ("node1", "0", "2/3", "2", "2"),
        3: ("node2", "1", "0/2", "0", "0"), 4: ("node2", "1", "1/2", "1", "1")}

with Lab() as lab:
    for mpi, boot in lab.bootstraps():
        r = lab.srun("%s --dist-bind --mpi=%s" % (SEED, mpi), [CHECK], env={"DIST_BIND_TIMEOUT": "30"})
        what = "--mpi=%s: " % mpi
        t.eq(r.returncode, 0, what + "every task exits 0 (stderr: %s)" % r.stderr.strip()[-300:])
        rows = check_rows(r.stdout)
        t.eq(sorted(rows), [0, 1, 2, 3, 4], what + "one table row per rank")
        for rank, (host, node, local, dev, gpu) in WANT.items():
            row = rows.get(rank, {})
            t.eq((row.get("host"), row.get("node"), row.get("local"), row.get("device"), row.get("gpu"), row.get("flags")),
                 (host, node, local, dev, gpu, "ok"), what + "rank %d's row" % rank)
        t.ok("5 ranks on 2 nodes, place from dist-bind, exchange over %s" % boot in r.stdout,
             what + "the header names the place's source and the exchange")
        t.ok("exchange: ok (allgather, broadcast from rank 4, barrier over %s)" % boot in r.stdout, what + "exchange checked")
        t.ok("GPU checks skipped: no rank has a usable GPU" in r.stdout, what + "says plainly that GPU checks were skipped")
        t.ok("dist-bind-check: all checks passed" in r.stdout, what + "verdict")
        t.eq(r.stdout.count("dist-bind-check: all checks passed"), 1, what + "only rank 0 prints")

    # Without --dist-bind each task sees only its own GPU as device 0, so
    # device SLURM_LOCALID does not exist for ranks 1, 2 and 4.  Without the
    # plugin there is no step secret: the exchange runs with the opt-out,
    # which the tool flags.
    r = lab.srun(SEED + " --mpi=none", [CHECK], env={"MASTER_PORT": "29777", "MASTER_ADDR": "node1",
                                                      "DIST_BIND_TIMEOUT": "30", "DIST_BIND_TCP_INSECURE": "1"})
    t.ok("WARNING: DIST_BIND_TCP_INSECURE=1: the exchange ran without authentication" in r.stdout,
         "the unauthenticated exchange is flagged")
    rows = check_rows(r.stdout)
    t.eq({k: v["flags"] for k, v in rows.items()},
         {0: "ok", 1: "NO-SUCH-DEVICE", 2: "NO-SUCH-DEVICE", 3: "ok", 4: "NO-SUCH-DEVICE"},
         "without --dist-bind: ranks 1, 2, 4 flagged")
    t.ok("place from slurm" in r.stdout, "without the plugin the place comes from Slurm's variables")
    # Slurm numbers rank 1's GPU 1 inside its device cgroup, where it is 0.
    own = "0" if lab.cgroup else "1"
    t.ok("PROBLEM: rank 1 (node1): device 1 does not exist: CUDA_VISIBLE_DEVICES=%s has 1 GPU" % own in r.stdout,
         "the problem names rank, host, device and the visible list")
    t.ok(r.returncode != 0 and "3 problems found" in r.stdout, "and the step fails (rc %d)" % r.returncode)

    # Every task told to use device 0 of the node's 4 GPUs: they share.
    r = lab.srun("-N2 -n5 --gpus-per-node=4 --mpi=" + lab.pmi(), [CHECK], env={"DIST_BIND_DEVICE": "0"})
    rows = check_rows(r.stdout)
    t.eq({k: v["flags"] for k, v in rows.items()},
         {0: "DUPLICATE", 1: "DUPLICATE", 2: "DUPLICATE", 3: "DUPLICATE", 4: "DUPLICATE"},
         "DIST_BIND_DEVICE=0 everywhere: every rank flagged")
    t.ok("PROBLEM: ranks 0 and 1 would both use GPU 0 on node1" in r.stdout, "names both ranks and the host")
    t.ok("PROBLEM: ranks 3 and 4 would both use GPU 0 on node2" in r.stdout, "on each node")
    t.ok(r.returncode != 0, "and the step fails")

    # A bad option is refused before anything starts.
    r = lab.srun("-N1 -n1 --mpi=none", [CHECK, "--iters", "0"])
    t.ok(r.returncode != 0 and "--iters \"0\": expected a count" in r.stderr, "bad --iters refused: %s" % r.stderr.strip())
t.done()
