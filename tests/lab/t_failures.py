#!/usr/bin/python3
"""Failure modes, on every release: a bad --dist-bind is refused by srun,
sbatch and salloc before anything is allocated; a step dist-bind refuses
fails that step only, with the message in srun's output, and the next step
of the allocation runs; a plugstack.conf the admin broke after a job was
submitted fails no batch step.  After each, no node is drained or down
(sinfo): a required plugin whose slurmstepd init fails fails the batch
step, and slurmctld drains the node for that on every release."""
# lab-configs: plain cgroup
# lab-releases: every (behaviour that differs by release: runs on 24.11 too)
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "kit"))
from labkit import Lab, Test  # noqa: E402

t = Test("failures")
TOO_MANY = "runs 3 tasks of step"  # dist-bind's message: more tasks than GPUs


def nodes_fine(lab, after):
    """Both nodes idle again within 30 s; never drained, down or failing."""
    ok, states = lab.nodes_settled()
    t.ok(ok, "after %s: no node drained or down (sinfo: %s)" % (after, states))


def next_job_id(lab):
    r = lab.run(["sbatch", "--parsable", "--hold", "--wrap", "true"])
    jid = int(r.stdout.strip().split(";")[0])
    lab.run(["scancel", str(jid)])
    return jid


def batch(lab, opts, script, hold=None):
    """Run a batch script to its end; its output.  hold(jobid) runs while
    the job is held, before it is released."""
    path = os.path.join(lab.dir, "job.sh")
    out = os.path.join(lab.dir, "job.out")
    if os.path.exists(out):
        os.unlink(out)
    with open(path, "w") as f:
        f.write("#!/bin/bash\n" + script)
    if hold is None:
        r = lab.run(["sbatch", "--wait", "-o", out] + opts.split() + [path], timeout=180)
    else:
        r = lab.run(["sbatch", "--parsable", "--hold", "-o", out] + opts.split() + [path])
        jid = r.stdout.strip().split(";")[0]
        hold(jid)
        lab.run(["scontrol", "release", jid])
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            q = lab.run(["squeue", "-h", "-j", jid, "-o", "%T"])
            if not q.stdout.strip():
                break
            time.sleep(0.5)
    return r, open(out).read() if os.path.exists(out) else ""


with Lab() as lab:
    print("-- a bad value, refused before allocation")
    before = next_job_id(lab)
    for cmd in (["srun", "-N1", "-n1", "--dist-bind=bogus", "true"],
                ["sbatch", "--dist-bind=bogus", "--wrap", "true"],
                ["salloc", "-N1", "--dist-bind=bogus", "true"]):
        r = lab.run(cmd, timeout=30)
        t.ok(r.returncode != 0 and 'dist-bind: --dist-bind="bogus"' in r.stderr,
             "%s refuses --dist-bind=bogus (rc %d): %s" % (cmd[0], r.returncode, r.stderr.strip()[:120]))
    t.eq(next_job_id(lab), before + 1, "no job was created for any of them")
    nodes_fine(lab, "bad values")

    print("-- a step dist-bind refuses, alone and inside an allocation")
    r = lab.srun("-N1 -n3 --gpus-per-node=2 --dist-bind", ["/bin/echo", "RAN"])
    t.ok(r.returncode != 0, "srun of the refused step fails (rc %d)" % r.returncode)
    t.ok(TOO_MANY in r.stderr and "RAN" not in r.stdout, "srun's output has the message and no task ran: %s"
         % [l for l in r.stderr.splitlines() if "dist-bind" in l][:1])
    nodes_fine(lab, "a refused step")
    r, text = batch(lab, "-N1 -n3 --gpus-per-node=2",
                    "srun --dist-bind /bin/echo RAN1; echo \"STEP1 rc=$?\"\n"
                    "srun -n2 --dist-bind /bin/echo RAN2; echo \"STEP2 rc=$?\"\n")
    t.ok(TOO_MANY in text and "RAN1" not in text, "the refused step's message is in the job's output")
    t.ok("STEP1 rc=0" not in text and "STEP1 rc=" in text, "the refused step's srun fails")
    t.eq(text.count("RAN2"), 2, "the next step of the allocation runs")
    t.ok("STEP2 rc=0" in text, "and succeeds")
    t.eq(r.returncode, 0, "the batch job itself ends normally (sbatch --wait rc)")
    nodes_fine(lab, "a refused step in a batch job")

    print("-- plugstack.conf broken after submission")
    for kind in ("required", "optional"):
        lab.plugstack("")
        r, text = batch(lab, "-N1 -n2 --gpus-per-node=2 --dist-bind",
                        "echo BATCH ran\nsrun /bin/echo STEP ran; echo \"SRUN rc=$?\"\n",
                        hold=lambda jid: lab.plugstack("colour=blue", kind))
        t.ok("BATCH ran" in text, "%s plugin, bad key at start: the batch script runs (%r)" % (kind, text[-300:]))
        # The job asked for --dist-bind: its srun (which inherits the
        # option) refuses the step rather than run it without dist-bind.
        t.ok('unknown key "colour"' in text and "STEP ran" not in text and "SRUN rc=0" not in text,
             "%s: its srun refuses the step, naming the key" % kind)
        nodes_fine(lab, "a %s plugin's bad plugstack.conf at a batch step" % kind)
    lab.plugstack("")
t.done()
