#!/usr/bin/python3
"""Steps inside allocations: a batch script (no variables in the script
itself, the right ones in its sruns), concurrent steps of one job get
different MASTER_PORTs (hashed, and Slurm's reserved ports), MASTER_PORT /
MASTER_ADDR the user exported win, port= is used."""
# lab-configs: plain cgroup
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "kit"))
from labkit import Lab, Test, PROBE, parse_probe, check_mapping, bound_own

t = Test("steps")

BATCH = """#!/bin/bash
echo "BATCH RANK=${RANK-unset} LOCAL_RANK=${LOCAL_RANK-unset} MASTER_ADDR=${MASTER_ADDR-unset} MODE=${DIST_BIND_MODE-unset} DEV=${DIST_BIND_DEVICE-unset}"
srun %(probe)s
"""

# Two steps at once; each task stays a second so the steps overlap.
CONCURRENT = """#!/bin/bash
srun --exact -n2 --gpus-per-task=1 bash -c '%(probe)s; sleep 1' &
srun --exact -n2 --gpus-per-task=1 bash -c '%(probe)s; sleep 1' &
wait
"""


def batch(lab, opts, script):
    path = os.path.join(lab.dir, "job.sh")
    out = os.path.join(lab.dir, "job.out")
    with open(path, "w") as f:
        f.write(script % {"probe": PROBE})
    r = lab.run(["sbatch", "--wait", "-o", out] + opts.split() + [path], timeout=180)
    text = open(out).read() if os.path.exists(out) else ""
    if r.returncode != 0:
        print("sbatch failed:", r.stdout, r.stderr, text)
    return r, text


def concurrent_ports(lab, what):
    r, text = batch(lab, "-N2 -n4 --gpus-per-task=1 --dist-bind", CONCURRENT)
    rows = [dict(kv.split("=", 1) for kv in l.split("\t")[1:]) for l in text.splitlines() if l.startswith("PROBE")]
    steps = {}
    for row in rows:
        steps.setdefault(row["SLURM_STEP_ID"], set()).add(row["MASTER_PORT"])
    t.eq(len(steps), 2, what + ": two steps ran")
    ports = [p for s in steps.values() for p in s]
    t.ok(all(len(s) == 1 for s in steps.values()), what + ": one MASTER_PORT per step %s" % steps)
    t.eq(len(set(ports)), 2, what + ": the two concurrent steps got different MASTER_PORTs %s" % steps)
    return ports


with Lab() as lab:
    print("-- batch script")
    r, text = batch(lab, "-N2 -n5 --gpus-per-task=1 --dist-bind", BATCH)
    t.eq(r.returncode, 0, "sbatch --wait succeeded")
    line = [l for l in text.splitlines() if l.startswith("BATCH ")]
    t.eq(line, ["BATCH RANK=unset LOCAL_RANK=unset MASTER_ADDR=unset MODE=unset DEV=unset"],
         "no dist-bind variables in the batch script itself")
    fixed = parse_probe(text)
    base = lab.table("-N2 -n5 --gpus-per-task=1")
    t.eq(len(fixed), 5, "the srun in the batch script ran 5 tasks")
    check_mapping(t, base, fixed, "rank", bound_own(base))

    print("-- concurrent steps, hashed ports")
    ports = concurrent_ports(lab, "hashed")
    t.ok(all(20000 <= int(p) <= 29999 for p in ports), "hashed ports in the default range 20000-29999: %s" % ports)

    print("-- ports= from plugstack.conf")
    lab.plugstack("ports=23000-23009")
    ports = concurrent_ports(lab, "ports=23000-23009")
    t.ok(all(23000 <= int(p) <= 23009 for p in ports), "hashed ports in the admin's range: %s" % ports)
    lab.plugstack("")

    print("-- user's values win; port=")
    job = "-N2 -n5 --gpus-per-task=1"
    user = lab.table(job + " --dist-bind=port=29400", env={"MASTER_PORT": "31337", "MASTER_ADDR": "10.9.8.7"})
    t.eq({u["MASTER_PORT"] for u in user.values()}, {"31337"}, "exported MASTER_PORT wins")
    t.eq({u["MASTER_ADDR"] for u in user.values()}, {"10.9.8.7"}, "exported MASTER_ADDR wins")
    opt = lab.table(job + " --dist-bind=port=29400")
    t.eq({o["MASTER_PORT"] for o in opt.values()}, {"29400"}, "port=29400 is MASTER_PORT")

    print("-- a bad exported MASTER_PORT fails the step")
    r = lab.srun(job + " --dist-bind", ["/bin/echo", "RAN"], env={"MASTER_PORT": "http"})
    t.ok(r.returncode != 0, "step fails (rc %d)" % r.returncode)
    t.eq(r.stdout.count("RAN"), 0, "no task ran")
    t.ok('MASTER_PORT="http"' in r.stderr and "1..65535" in r.stderr,
         "message names the variable, value and what was expected")

    print("-- srun inside a task (srun --pty bash, then srun): inherited values are not the user's")
    inner = ("srun --overlap -N2 -n2 --dist-bind %(p)s | sed s/^/INNER1/; "
             "srun --overlap -N2 -n2 %(p)s | sed s/^/INNER2/; "
             "srun --overlap -N2 -n2 --dist-bind bash -c 'echo \"$SLURM_PROCID ${DIST_BIND_SET%%;*}\"' "
             "| sed s/^/INNER3/") % {"p": PROBE}
    r = lab.run(["salloc", "-N2", "-n5", "srun", "-N1", "-n1", "-w", "node2", "--dist-bind=port=24001",
                 "bash", "-c", inner], timeout=120)
    rows = {}
    for line in r.stdout.splitlines():
        tag = line[:6]
        if line[6:].startswith("PROBE"):
            rows.setdefault(tag, []).extend(parse_probe(line[6:]).values())
    t.eq(sorted(len(v) for v in rows.values()), [2, 2], "both inner steps ran 2 tasks (rc %d)" % r.returncode)
    for row in rows.get("INNER1", []):
        t.eq((row["MASTER_ADDR"], row["RANK"], row["WORLD_SIZE"]), ("node1", row["SLURM_PROCID"], "2"),
             "inner step with --dist-bind: its own MASTER_ADDR and ranks, not the outer step's")
        t.ok(row["MASTER_PORT"] != "24001", "inner step: its own MASTER_PORT, not the outer %s" % row["MASTER_PORT"])
    # The record (DIST_BIND_SET) is the inner step's, from its place on:
    # never the outer step's, never dropped as the outer step's.
    records = sorted(line[6:].split(" ", 1) for line in r.stdout.splitlines() if line.startswith("INNER3"))
    t.eq(records, [["0", "0,0,2"], ["1", "1,0,2"]],
         "inner step with --dist-bind: its own record, opening with RANK,LOCAL_RANK,WORLD_SIZE")
    for row in rows.get("INNER2", []):
        t.eq((row["RANK"], row["MASTER_ADDR"], row["MASTER_PORT"], row["DIST_BIND_MODE"]), (None, None, None, None),
             "inner step without --dist-bind: nothing left over from the outer step")

with Lab(resv_ports=True) as lab:
    print("-- concurrent steps, Slurm's reserved ports")
    ports = concurrent_ports(lab, "reserved")
    resv = lab.srun("-N1 -n1", ["printenv", "SLURM_STEP_RESV_PORTS"]).stdout.strip()
    t.ok(resv != "", "the lab reserves ports per step (%s)" % resv)
    r = lab.srun("-N2 -n5 --dist-bind", ["bash", "-c", 'echo "$SLURM_STEP_RESV_PORTS $MASTER_PORT"'])
    pairs = {tuple(l.split()) for l in r.stdout.splitlines()}
    t.eq(len(pairs), 1, "one reserved range and MASTER_PORT in the step: %s" % pairs)
    for resv, port in pairs:
        t.eq(port, resv.replace(",", "-").split("-")[0], "MASTER_PORT is the step's first reserved port")
t.done()
