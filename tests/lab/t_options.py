#!/usr/bin/python3
"""The option and the admin's keys on the real srun/sbatch/salloc: --help,
bad values refused before any allocation (required and optional plugin),
default= and --dist-bind=off, bad plugstack.conf arguments, master_addr=."""
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "kit"))
from labkit import Lab, Test

t = Test("options")


def next_job_id(lab):
    """Submit a held job and cancel it: its id tells how many jobs exist."""
    r = lab.run(["sbatch", "--parsable", "--hold", "--wrap", "true"])
    jid = int(r.stdout.strip().split(";")[0])
    lab.run(["scancel", str(jid)])
    return jid


with Lab() as lab:
    r = lab.run(["srun", "--help"])
    t.ok("--dist-bind" in r.stdout and "[dist-bind]" in r.stdout, "srun --help lists --dist-bind with [dist-bind]")
    for tool in ("sbatch", "salloc"):
        r = lab.run([tool, "--help"])
        t.ok("[dist-bind]" in r.stdout, tool + " --help lists it too")

    for kind in ("required", "optional"):
        lab.plugstack("", kind)
        for bad in ("bogus", "rank,isolate", "port=70000", "rank,,verbose"):
            before = next_job_id(lab)
            for cmd in (["srun", "-N1", "-n1", "--dist-bind=" + bad, "true"],
                        ["sbatch", "--dist-bind=" + bad, "--wrap", "true"],
                        ["salloc", "-N1", "--dist-bind=" + bad, "true"]):
                r = lab.run(cmd, timeout=30)
                what = "%s plugin, %s --dist-bind=%s" % (kind, cmd[0], bad)
                t.ok(r.returncode != 0, what + ": refused (rc %d)" % r.returncode)
                t.ok("dist-bind: --dist-bind=\"%s\"" % bad in r.stderr, what + ": message names the value")
                t.ok("Granted job allocation" not in r.stderr and "Submitted" not in r.stdout,
                     what + ": nothing allocated")
            t.eq(next_job_id(lab), before + 1, "%s plugin, --dist-bind=%s: no job was created" % (kind, bad))
        r = lab.run(["srun", "-N1", "-n1", "--dist-bind=bogus", "true"])
        t.ok("rank, isolate, closest, env, off" in r.stderr, kind + ": message lists the valid modes")

    print("-- default= and --dist-bind=off")
    lab.plugstack("default=isolate")
    job = "-N2 -n5 --gpus-per-task=1"
    d = lab.table(job)
    t.eq({x["DIST_BIND_MODE"] for x in d.values()}, {"isolate"}, "default=isolate applies without the option")
    t.eq([d[r]["CUDA_VISIBLE_DEVICES"] for r in range(5)], ["0", "1", "2", "0", "1"], "isolate lists per task")
    off = lab.table(job + " --dist-bind=off")
    t.eq({x["DIST_BIND_MODE"] for x in off.values()}, {None}, "--dist-bind=off overrides the admin default")
    t.eq({x["RANK"] for x in off.values()}, {None}, "no RANK with off")
    rank = lab.table(job + " --dist-bind")
    t.eq({x["DIST_BIND_MODE"] for x in rank.values()}, {"rank"}, "--dist-bind (no value) means rank")

    print("-- bad plugstack.conf arguments")
    lab.plugstack("default=rank colour=blue", "required")
    r = lab.srun("-N1 -n1", ["/bin/echo", "RAN"])
    t.ok(r.returncode != 0, "required plugin with an unknown key: srun fails (rc %d)" % r.returncode)
    t.ok('unknown key "colour"' in r.stderr, "message names the key: %r" % r.stderr.strip()[:200])
    lab.plugstack("ports=9-1", "optional")
    r = lab.srun("-N1 -n1 --dist-bind", ["/bin/echo", "RAN"])
    t.ok(r.returncode != 0 and "RAN" not in r.stdout, "optional plugin, bad ports=: --dist-bind is refused")
    t.ok('ports="9-1"' in r.stderr, "message names the key and value")
    r = lab.srun("-N1 -n1", ["/bin/echo", "RAN"])
    t.ok(r.returncode == 0 and "RAN" in r.stdout, "optional plugin, bad config: jobs without --dist-bind still run")

    print("-- master_addr=")
    lab.plugstack("master_addr=suffix:-ib")
    s = lab.table(job + " --dist-bind")
    t.eq({x["MASTER_ADDR"] for x in s.values()}, {"node1-ib"}, "master_addr=suffix:-ib")
    lab.plugstack("master_addr=addr")
    a = lab.table(job + " --dist-bind")
    t.eq({x["MASTER_ADDR"] for x in a.values()}, {"127.0.0.2"}, "master_addr=addr gives node1's NodeAddr")
    a = lab.table("-n5 -m arbitrary -w node2,node1,node2,node1,node2 --dist-bind")
    t.eq({x["MASTER_ADDR"] for x in a.values()}, {"127.0.0.3"}, "master_addr=addr, rank 0 on node2")
    lab.plugstack("master_addr=name")
    a = lab.table("-N1 -n2 -w node2 --dist-bind")
    t.eq({x["MASTER_ADDR"] for x in a.values()}, {"node2"}, "a step on node2 only: MASTER_ADDR=node2")
t.done()
