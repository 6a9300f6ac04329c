#!/usr/bin/python3
"""`srun --async` (new in Slurm 26.05): the step is created and
launched by the job's step manager, and srun never runs its
slurm_spank_local_user_init, where dist-bind draws the step's secret and
hands the nodes what only srun knows (rank 0's node and the nodes' order,
device cgroups, GPUs per task).  The option itself still reaches the nodes
(measured: DIST_BIND_MODE=rank in an async task), so such a step would run
without those; srun refuses --dist-bind together with --async, before
anything is submitted, with one message saying why and what to do.  An
async step without dist-bind runs as before, and so does one with
--dist-bind=off under an admin's default=rank."""
# lab-releases: 26.05 (srun --async is new in 26.05)
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "kit"))
from labkit import Lab, Test

t = Test("async")
with Lab(stepmgr=True) as lab:
    out = os.path.join(lab.dir, "async-%s.out")

    def in_alloc(srun_args, name):
        """salloc -N2 -n2, then srun --async ARGS inside; what srun said,
        and what its tasks printed (they run after srun returns)."""
        f = out % name
        script = ("srun --async -o %s %s bash -c 'echo TASK $SLURM_PROCID mode=${DIST_BIND_MODE-unset}'; "
                  "echo SRUN-RC=$?; for i in $(seq 50); do [ -s %s ] && break; sleep 0.2; done; sleep 1" % (f, srun_args, f))
        r = lab.run(["salloc", "-N2", "-n2", "bash", "-c", script], timeout=120)
        tasks = open(f).read() if os.path.exists(f) else ""
        return r, tasks

    r, tasks = in_alloc("", "plain")
    t.ok("SRUN-RC=0" in r.stdout and "Submitted step" in (r.stdout + r.stderr), "an async step without dist-bind is submitted")
    t.ok("TASK " in tasks, "and its tasks run (%s)" % tasks.strip()[:100])

    r, tasks = in_alloc("--dist-bind", "refused")
    said = [l for l in r.stderr.splitlines() if "dist-bind" in l]
    t.ok("SRUN-RC=0" not in r.stdout, "--dist-bind with --async: srun fails")
    t.ok("Submitted step" not in (r.stdout + r.stderr), "nothing is submitted")
    t.ok(len(said) == 1 and "--async" in said[0], "one message naming --async: %s" % said)
    t.eq(tasks, "", "no task ran")

    lab.plugstack("default=rank")
    r, tasks = in_alloc("", "default")
    t.ok("SRUN-RC=0" not in r.stdout and any("--async" in l and "--dist-bind=off" in l for l in r.stderr.splitlines()),
         "the admin's default=rank refuses --async too, naming --dist-bind=off: %s" % r.stderr.strip()[-300:])
    r, tasks = in_alloc("--dist-bind=off", "off")
    t.ok("SRUN-RC=0" in r.stdout and "mode=unset" in tasks, "--dist-bind=off with --async runs without dist-bind (%s)" % tasks.strip()[:100])
t.done()
