#!/usr/bin/python3
"""torchrun per node under srun --dist-bind, with Debian's torch: nothing on
torchrun's command line but --nproc-per-node (and --rdzv-backend=c10d).

- `-N2 --ntasks-per-node=1 --gpus-per-node=3`: in every mode a node's only
  task owns all of that node's step GPUs (device 0 onwards, so no
  DIST_BIND_DEVICE for its workers to inherit), and gets
  torchrun's PET_* defaults (PET_NNODES = tasks, PET_NODE_RANK = RANK,
  PET_MASTER_ADDR/PORT, PET_RDZV_ENDPOINT, PET_RDZV_ID = JOB.STEP).
- `torchrun --nproc-per-node=3` there, static rendezvous (rank mode) and
  c10d (isolate): 6 workers, ranks 0-5, each reporting RANK, LOCAL_RANK,
  WORLD_SIZE, CUDA_VISIBLE_DEVICES, the fake GPUs it can open and the
  device libdistbind chooses for it (distbind_create through ctypes, no
  network), then a gloo all-reduce over torchrun's own store.  Each
  worker's device must be the LOCAL_RANK-th GPU of its node's allocation
  (slurmctld's, through the probe), distinct on the node.
- uneven: `-N2 -n3 --gpus-per-task=2` (two agents on node1, one on node2)
  with `--nproc-per-node=2`, in rank mode (the second agent's workers are
  on devices 2 and 3: libdistbind's DIST_BIND_DEVICE + LOCAL_RANK) and
  isolate (device LOCAL_RANK).
- dist-bind-check as the workers (static with a PMI server, and the
  uneven job with c10d): torchrun's place, its variables not flagged, the
  exchange over TCP on MASTER_PORT+1.
- flags the user types win (`--master-addr`, `--master-port`, `--rdzv-id`;
  dist-bind makes PET_RDZV_ENDPOINT, which the static rendezvous prefers
  over --master-addr/--master-port, from the typed ones); a worker beyond
  its agent's GPUs gets libdistbind's error naming --nproc-per-node.

What the harness adapts, test-only (dist-bind is not changed):
- torch 1.13 (Debian 12) on Python 3.11: torchrun's default `--redirects 0
  --tee 0` fail before any worker (`Std.from_str("0")` finds no member: an
  IntFlag's 0 is not iterated since Python 3.11, so `to_map` gets None:
  "'NoneType' object has no attribute 'get'").  PET_TEE=1 PET_REDIRECTS=1
  (stdout to a log file and to the console, prefixed "[defaultN]:") take
  that path out.  1.13 knows only the underscore spellings
  (--nproc_per_node); 2.x gets the dashed ones.
- torch 2.x built without libuv (Debian 13's 2.6, sid's 2.14): torchrun's
  agents (the c10d backend's TCPStore) and the workers' client of the
  agent's store (TORCHELASTIC_USE_AGENT_STORE) ask TCPStore for libuv,
  which USE_LIBUV=0 does not reach.  tests/lab/probes/torchrun_site/sitecustomize.py
  (on PYTHONPATH, with DIST_BIND_TEST_NO_LIBUV=1) makes TCPStore default to
  use_libuv=False in torchrun and its workers.
"""
# lab-configs: plain cgroup
# Releases: the default, 22.05 and 26.05 (torch 1.13 and 2.14; 24.11's torch 2.6 was run by hand: passed; not yet in make check there)
import os, shlex, shutil, subprocess, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "kit"))
from labkit import Lab, Test, BUILD, PROBES, skip, check_mapping
import devmodel

PY = "/usr/bin/python3"
if not shutil.which("torchrun") or subprocess.run(
        [PY, "-c", "import torch.distributed as d; assert d.is_available()"], capture_output=True).returncode:
    skip("torchrun (python3-torch with torch.distributed) is not installed (make deps)")
LIB = os.path.join(BUILD, "libdistbind.so.1")
if not os.path.exists(LIB):
    skip(LIB + " not built")
VERSION = subprocess.run([PY, "-c", "import torch; print(torch.__version__)"], capture_output=True,
                         text=True).stdout.strip()
OLD = int(VERSION.split(".")[0]) < 2
NO_LIBUV = "without libuv" in subprocess.run(
    [PY, "-c", "import torch.distributed as d; d.TCPStore('127.0.0.1', 0, 1, True, use_libuv=True)"],
    capture_output=True, text=True).stderr
HARNESS = {}
if OLD:
    HARNESS.update(PET_TEE="1", PET_REDIRECTS="1")
if NO_LIBUV:
    HARNESS.update(PYTHONPATH=os.path.join(PROBES, "torchrun_site"), DIST_BIND_TEST_NO_LIBUV="1")
print("(torch %s; harness: %s)" % (VERSION, " ".join("%s=%s" % kv for kv in sorted(HARNESS.items())) or "none"))


def flag(name, value):
    return "--%s=%s" % (name.replace("-", "_") if OLD else name, value)


WORKER = [os.path.join(PROBES, "torchrun_worker.py"), LIB]
t = Test("torchrun")


def torchrun(lab, job, flags, env=None, shell=False):
    """srun JOB torchrun FLAGS worker (shell: started by bash -c, where
    srun's command line names no torchrun): the workers' rows, by RANK."""
    e = dict(HARNESS)
    e.update(env or {})
    cmd = ["torchrun"] + flags + WORKER
    if shell:
        cmd = ["bash", "-c", " ".join(shlex.quote(w) for w in cmd)]
    r = lab.srun("-t 5 " + job, cmd, env=e, timeout=400)
    rows = {}
    for line in r.stdout.splitlines():
        if "WORKER " in line:
            row = dict(kv.split("=", 1) for kv in line.split("WORKER ", 1)[1].split())
            rows[int(row["RANK"])] = row
    what = job + " torchrun " + " ".join(flags)
    t.eq(r.returncode, 0, what + ": srun exit status")
    if r.returncode != 0 or not rows:
        print(r.stdout[-3000:], r.stderr[-5000:])
    return rows, what


def check_workers(rows, what, nworkers, agent_own, lab_alloc, mode):
    """Every worker: its place, its GPU (the LOCAL_RANK-th of its agent's),
    distinct on its node, the all-reduce's sum."""
    t.eq(sorted(rows), list(range(nworkers)), what + ": ranks 0..%d report" % (nworkers - 1))
    t.eq({r["WORLD_SIZE"] for r in rows.values()}, {str(nworkers)}, what + ": WORLD_SIZE everywhere")
    t.eq({r["sum"] for r in rows.values()}, {"%d" % (nworkers * (nworkers + 1) // 2)},
         what + ": the gloo all-reduce's sum")
    taken = {}
    for rank, w in sorted(rows.items()):
        pre = "%s: worker %d (%s, agent %s, local %s): " % (what, rank, w["host"], w["SLURM_PROCID"], w["LOCAL_RANK"])
        local = int(w["LOCAL_RANK"])
        mine = agent_own[int(w["SLURM_PROCID"])]
        want = mine[local]
        t.eq(w["db_source"], "env", pre + "libdistbind reads the worker's place (torchrun's), not the agent's")
        seen = devmodel.cuda_view({"CUDA_VISIBLE_DEVICES": None if w["CUDA_VISIBLE_DEVICES"] == "-"
                                   else w["CUDA_VISIBLE_DEVICES"]}, devmodel.expand(w["open"]))
        dev = int(w["db_device"]) if w["db_device"].isdigit() else None
        t.ok(dev is not None and dev < len(seen) and seen[dev] == want,
             pre + "libdistbind's device %s is GPU %s, its own %d (CUDA sees %s)"
             % (w["db_device"], seen[dev] if dev is not None and dev < len(seen) else None, want, seen))
        t.ok(want in lab_alloc[w["host"]], pre + "GPU %d is in the step's allocation on %s %s"
             % (want, w["host"], lab_alloc[w["host"]]))
        if mode == "isolate" or len(mine) == len(lab_alloc[w["host"]]):
            t.eq(seen[local] if local < len(seen) else None, want, pre + "cuda:LOCAL_RANK is its own GPU too")
        if len(mine) == len(lab_alloc[w["host"]]):
            # Its agent is its node's only task: nothing it inherits names
            # the agent's device as the worker's.
            t.eq(w["DIST_BIND_DEVICE"], "-", pre + "no DIST_BIND_DEVICE inherited from its agent")
        t.ok((w["host"], want) not in taken, pre + "no other worker on %s has GPU %d (%s)"
             % (w["host"], want, taken.get((w["host"], want))))
        taken[(w["host"], want)] = rank


with Lab() as lab:
    # A node's only task owns all of the node's step GPUs, in every mode.
    job = "-N2 --ntasks-per-node=1 --gpus-per-node=3"
    base = lab.table(job)
    alloc = devmodel.node_alloc(base)
    t.eq(sorted(len(g) for g in alloc.values()), [3, 3], "baseline: 3 GPUs of the step on each node")
    for mode in ("rank", "isolate", "closest", "env"):
        fixed = lab.table(job + " --dist-bind=" + mode)
        check_mapping(t, base, fixed, mode, lambda r: alloc[base[r]["SLURMD_NODENAME"]])
        for r, f in sorted(fixed.items()):
            # Device 0, CUDA's default: no DIST_BIND_DEVICE, which torchrun
            # would copy into every worker as if it were the worker's.
            t.eq(f["DIST_BIND_DEVICE"], None, "%s: task %d, its node's only, gets no DIST_BIND_DEVICE" % (mode, r))

    # torchrun's defaults, as the agents see them.
    r = lab.srun(job + " --dist-bind", ["bash", "-c", 'echo "PET $RANK $PET_NNODES $PET_NODE_RANK $PET_MASTER_ADDR '
                                         '$PET_MASTER_PORT $PET_RDZV_ENDPOINT $PET_RDZV_ID ${DIST_BIND_SET%%;*} '
                                         '$MASTER_ADDR:$MASTER_PORT ${SLURM_JOB_ID}.${SLURM_STEP_ID}"'])
    pet = sorted(l.split()[1:] for l in r.stdout.splitlines() if l.startswith("PET "))
    t.eq(len(pet), 2, "two agents report torchrun's defaults")
    for p in pet:
        rank, master = p[0], p[8]
        t.eq(p[1:3], ["2", rank], "agent %s: PET_NNODES = tasks, PET_NODE_RANK = RANK" % rank)
        t.eq("%s:%s" % (p[3], p[4]), master, "agent %s: PET_MASTER_ADDR:PET_MASTER_PORT = MASTER_ADDR:MASTER_PORT"
             % rank)
        t.eq(p[5], master, "agent %s: PET_RDZV_ENDPOINT = MASTER_ADDR:MASTER_PORT" % rank)
        t.eq(p[6], p[9], "agent %s: PET_RDZV_ID = JOB.STEP" % rank)
        t.eq(p[7], "%s,0,2" % rank, "agent %s: DIST_BIND_SET opens with RANK,LOCAL_RANK,WORLD_SIZE" % rank)
    t.eq(pet[0][3] if pet else None, "node1", "PET_MASTER_ADDR is rank 0's host")

    one_per_node = {int(r): alloc[base[r]["SLURMD_NODENAME"]] for r in base}
    nproc = flag("nproc-per-node", 3)
    rows, what = torchrun(lab, job + " --dist-bind", [nproc])
    check_workers(rows, what, 6, one_per_node, alloc, "rank")
    t.eq(sorted((w["host"], w["GROUP_RANK"]) for w in rows.values()), [("node1", "0")] * 3 + [("node2", "1")] * 3,
         what + ": static rendezvous: the group rank is dist-bind's node rank")
    t.eq({w["MASTER_ADDR"] for w in rows.values()}, {"node1"}, what + ": the workers' MASTER_ADDR is rank 0's host")
    t.eq({w["TORCHELASTIC_RUN_ID"] == w["DIST_BIND_STEP"] for w in rows.values()}, {True},
         what + ": torchrun's run id is the step (PET_RDZV_ID)")

    rows, what = torchrun(lab, job + " --dist-bind=isolate", [flag("rdzv-backend", "c10d"), nproc])
    check_workers(rows, what, 6, one_per_node, alloc, "isolate")
    rows, what = torchrun(lab, job + " --dist-bind", [nproc], shell=True)
    check_workers(rows, "bash -c " + what, 6, one_per_node, alloc, "rank")

    # Uneven: -n3 agents over two nodes, two GPUs each (2 + 1 agents).
    job2 = "-N2 -n3 --gpus-per-task=2"
    base2 = lab.table(job2)
    alloc2 = devmodel.node_alloc(base2)
    own2 = {r: devmodel.own_from_slurm(base2[r]) for r in base2}
    t.eq([own2[r] for r in range(3)], [[0, 1], [2, 3], [0, 1]], "uneven baseline as Slurm binds it")
    for mode, rdzv in (("rank", []), ("isolate", [flag("rdzv-backend", "c10d")])):
        rows, what = torchrun(lab, job2 + " --dist-bind=" + mode, rdzv + [flag("nproc-per-node", 2)])
        check_workers(rows, what, 6, own2, alloc2, mode)
        if mode == "rank":
            second = [w for w in rows.values() if w["SLURM_PROCID"] == "1"]
            t.eq(sorted(w["db_device"] for w in second), ["2", "3"],
                 what + ": the second agent's workers: devices DIST_BIND_DEVICE(2) + LOCAL_RANK")

    # dist-bind-check as torchrun's workers: their place is torchrun's (two
    # agents on node1 in the uneven job are a node each), nothing dist-bind
    # set counts as overwritten, and the exchange runs over TCP beside
    # torchrun's store (MASTER_PORT+1), also with a PMI server there (whose
    # ranks are the agents').
    CHECK = os.path.join(BUILD, "dist-bind-check")
    nopy = "--no_python" if OLD else "--no-python"
    for j, flags in ((job + " --mpi=" + lab.pmi(), [nproc]),
                     (job2, [flag("rdzv-backend", "c10d"), flag("nproc-per-node", 2)])):
        e = dict(HARNESS, DIST_BIND_TIMEOUT="60")
        r = lab.srun("-t 5 %s --dist-bind" % j, ["torchrun"] + flags + [nopy, CHECK], env=e, timeout=400)
        what = "%s torchrun %s dist-bind-check" % (j, " ".join(flags))
        out = r.stdout + r.stderr
        t.eq(r.returncode, 0, what + ": passes (%s)" % out.strip()[-1500:])
        t.ok("dist-bind-check: 6 ranks on 2 nodes, place from env, exchange over tcp" in r.stdout,
             what + ": six workers, torchrun's place, over TCP")
        t.ok("all checks passed" in r.stdout, what + ": every check passed")
        t.ok("not what dist-bind set" not in out, what + ": torchrun's own variables are not flagged")

    # Flags the user types win.  The static rendezvous takes an endpoint over
    # --master-addr/--master-port, so dist-bind makes PET_RDZV_ENDPOINT from
    # the typed ones.  Two workers per agent, one GPU each: the second has none.
    rows, what = torchrun(lab, "-N2 --ntasks-per-node=1 --gpus-per-node=1 --dist-bind",
                          [flag("nproc-per-node", 2), flag("master-addr", "node2"), flag("master-port", 31555),
                           flag("rdzv-id", "mine")])
    t.eq(sorted(rows), [0, 1, 2, 3], what + ": 4 workers")
    t.eq({w["MASTER_PORT"] for w in rows.values()}, {"31555"}, what + ": the typed --master-port wins")
    t.eq({w["MASTER_ADDR"] for w in rows.values()}, {"node2"}, what + ": the typed --master-addr wins")
    t.eq({w["TORCHELASTIC_RUN_ID"] for w in rows.values()}, {"mine"}, what + ": the typed --rdzv-id wins")
    t.eq(sorted(w["db_device"] for w in rows.values() if w["LOCAL_RANK"] == "0"), ["0", "0"],
         what + ": local rank 0: device 0")
    for w in rows.values():
        if w["LOCAL_RANK"] == "1":
            t.ok(w["db_device"] == "error" and "--nproc-per-node=1" in w["db_source"] and
                 "LOCAL_RANK=1" in w["db_source"],
                 what + ": worker %s beyond its agent's one GPU: libdistbind says so (%s)"
                 % (w["RANK"], w["db_source"].replace("_", " ")[:200]))
t.done()
