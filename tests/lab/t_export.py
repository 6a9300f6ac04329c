#!/usr/bin/python3
"""srun --export and dist-bind.  With --export=NONE, with a list without
ALL, with SLURM_EXPORT_ENV=NONE, and inside `sbatch --export=NONE` (whose
sruns inherit SLURM_EXPORT_ENV=NONE), srun hands the step only the
variables of its environment whose names start with SLURM.  dist-bind's
words from srun to the nodes travel under such names then (db_core.h,
DB_WORD_PREFIX), and:

- what srun passes, seen by a task on nodes without the plugin: the plain
  words under --export=ALL (and ALL,X=1), the carried ones under NONE and a
  list: Slurm's filter, measured on each release;
- -m arbitrary with rank 0 on node2 (a layout only srun knows) under each
  form, against the same job without --dist-bind: ranks, node ranks and
  MASTER_ADDR, and no word of srun's left in any task;
- the step's secret: every task holds srun's draw and its Apptainer twin;
- libdistbind's TCP bootstrap under --export=<list>: every rank's exchange."""
# lab-configs: plain cgroup
# lab-releases: every (behaviour that differs by release: runs on 24.11 too)
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "kit"))
from labkit import CARRIED_WORDS, PROBE, SRUN_WORDS, Lab, Test, check_mapping, parse_probe, unbound_own  # noqa: E402
from runtimekit import WORKER, need, worker_results  # noqa: E402

need(WORKER)
t = Test("export")
ARB = "-n5 -m arbitrary -w node2,node1,node2,node1,node2 --gpus-per-node=4"
SHOW = "/usr/bin/env"


def words(stdout):
    """The names of srun's words a task's environment holds."""
    names = {l.partition("=")[0] for l in stdout.splitlines()}
    return sorted(n for n in names if n in SRUN_WORDS + CARRIED_WORDS or n == "DIST_BIND_SECRET")


with Lab() as lab:
    print("-- what srun passes the step (the nodes without the plugin)")
    # srun reads a slurm.conf whose plugstack has the plugin; the nodes
    # read the lab's, emptied here.
    client = lab.client_conf("srun-only", "required %s\n" % lab.plugin)
    lab.plugstack(raw="")
    plain = ["DIST_BIND_SECRET", "DIST_BIND_SRUN_DEVICES", "DIST_BIND_SRUN_VERSION"]
    carried = ["SLURM_DIST_BIND_SECRET", "SLURM_DIST_BIND_SRUN_DEVICES", "SLURM_DIST_BIND_SRUN_VERSION"]
    for how, env, want in (("--export=ALL", {}, plain), ("--export=ALL,X=1", {}, plain),
                           ("--export=NONE", {}, carried), ("--export=X=1", {}, carried),
                           ("", {"SLURM_EXPORT_ENV": "NONE"}, carried),
                           ("--export=ALL", {"SLURM_EXPORT_ENV": "NONE"}, plain)):
        r = lab.srun("-N1 -n1 --gpus-per-task=1 --dist-bind " + how, [SHOW], env=dict(env, SLURM_CONF=client))
        t.eq(words(r.stdout), want, "%s%s: srun passes %s (rc %d %s)" % (
            how or "no --export", " with SLURM_EXPORT_ENV=NONE" if env else "", " ".join(want), r.returncode,
            r.stderr.strip()[-200:]))
    lab.plugstack("")

    print("-- -m arbitrary, rank 0 on node2, under each --export")
    base = lab.table(ARB)
    t.eq(base[0]["SLURMD_NODENAME"] if base else None, "node2", "baseline: rank 0 on node2")
    for how, env in (("--export=NONE", {}), ("--export=X=1", {}), ("", {"SLURM_EXPORT_ENV": "NONE"}),
                     ("--export=ALL", {})):
        print("   %s %s" % (how, env or ""))
        fixed = lab.table(ARB + " --dist-bind " + how, env=env)
        check_mapping(t, base, fixed, "rank", unbound_own(base), master="node2")

    print("-- inside sbatch --export=NONE")
    out = os.path.join(lab.dir, "sbatch-export.out")
    r = lab.run(["sbatch", "--wait", "--export=NONE", "-n5", "-w", "node1,node2", "--gpus-per-node=4", "-o", out,
                 "--wrap", "srun %s --dist-bind %s" % (ARB, PROBE)], timeout=120)
    fixed = parse_probe(open(out).read()) if os.path.exists(out) else {}
    t.eq(r.returncode, 0, "the batch job exits 0 (%s)" % r.stderr.strip()[-200:])
    check_mapping(t, base, fixed, "rank", unbound_own(base), master="node2")

    print("-- the step's secret under --export=NONE")
    r = lab.srun("-N2 -n5 --gpus-per-task=1 --dist-bind --export=NONE",
                 ["/bin/sh", "-c", 'echo "SECRET $SLURM_PROCID ${DIST_BIND_SECRET-unset} '
                  '${APPTAINERENV_DIST_BIND_SECRET-unset} ${SLURM_DIST_BIND_SECRET-unset}"'])
    rows = [l.split()[1:] for l in r.stdout.splitlines() if l.startswith("SECRET ")]
    t.eq(sorted(int(x[0]) for x in rows), [0, 1, 2, 3, 4], "every task reports (%s)" % r.stderr.strip()[-200:])
    t.eq(len({x[1] for x in rows}), 1, "one secret in every task of the step")
    t.ok(all(re.fullmatch(r"[0-9a-f]{64}", x[1]) and x[2] == x[1] and x[3] == "unset" for x in rows),
         "each task: 64 hex digits in DIST_BIND_SECRET, the same in its twin, no carried copy left: %s" % rows)

    print("-- libdistbind over TCP under --export=<list>")
    r = lab.srun("-N2 -n5 --gpus-per-task=1 --dist-bind --mpi=none --export=DIST_BIND_TIMEOUT=30",
                 [WORKER, "roundtrip"])
    res = worker_results(r.stdout)
    t.eq(sorted(res), [0, 1, 2, 3, 4], "every rank's broadcasts and allgathers were right (%s)"
         % (r.stdout + r.stderr).strip()[-300:])
    t.eq({x.get("bootstrap") for x in res.values()}, {"tcp"}, "over TCP")
t.done()
