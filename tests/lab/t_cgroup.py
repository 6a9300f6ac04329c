#!/usr/bin/python3
"""Device cgroups (task/cgroup, ConstrainDevices=yes) as sites run them.

Without the cli_filter, a task Slurm binds per task can open only its own
GPU: rank and closest cannot show it the others, so the step stops before
the program starts, with one message per node naming the options that fix
it, and no node is drained; isolate and env work as Slurm bound the tasks;
--gpu-bind=none makes rank work.  With the packaged cli_filter, --dist-bind
from srun, sbatch and salloc gets --gpu-bind=none added, and a --gpu-bind
the user gave is left alone (and still fails clearly)."""
# lab-configs: cgroup cgroup2
# lab-releases: every (behaviour that differs by release: runs on 24.11 too)
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "kit"))
from labkit import Lab, Test, PROBE, check_mapping, bound_own, unbound_own, parse_probe, nobind_lists

JOB = "-N2 -n5 --gpus-per-task=1"
t = Test("cgroup")


def refused(lab, args, what, nodes=("node1", "node2")):
    r = lab.srun(args, ["/bin/echo", "RAN"])
    msgs = [l for l in r.stderr.splitlines() if "dist-bind:" in l]
    t.ok(r.returncode != 0 or "Exited with exit code 1" in r.stderr, what + ": the step fails")
    t.eq(r.stdout.count("RAN"), 0, what + ": no task ran")
    t.eq(sorted(n for m in msgs for n in nodes if "node " + n + ":" in m), sorted(nodes),
         what + ": one message per node %s" % msgs)
    t.ok(all("--gpu-bind=none" in m and "isolate" in m and "ConstrainDevices" in m for m in msgs),
         what + ": the message names the options that fix it")
    ok, states = lab.nodes_settled()
    t.ok(ok, what + ": no node drained (sinfo: %s)" % states)


# With the filter first: the cgroup v2 guest keeps a lab for the next
# test (t_cgroup_opens), which starts without it.
with Lab() as lab:
    print("-- with the packaged cli_filter")
    base = lab.table(JOB)
    t.eq({b["CUDA_VISIBLE_DEVICES"] for b in base.values()}, {"0"}, "without --dist-bind the filter changes nothing")
    fixed = lab.table(JOB + " --dist-bind")
    check_mapping(t, base, fixed, "rank", bound_own(base))
    t.eq([f["OPEN_"] for _, f in sorted(fixed.items())], ["0,1,2"] * 3 + ["0,1"] * 2,
         "--dist-bind: every step GPU of the node openable (the filter added --gpu-bind=none)")
    iso = lab.table(JOB + " --dist-bind=isolate")
    t.eq([f["OPEN_"] for _, f in sorted(iso.items())], ["0", "1", "2", "0", "1"],
         "isolate keeps Slurm's per-task confinement")
    refused(lab, "-N1 -w node1 -n3 --gpus-per-node=3 --gpu-bind=single:1 --dist-bind", "a --gpu-bind the user gave",
            ("node1",))
    for tool in ("sbatch", "salloc"):
        script = os.path.join(lab.dir, "job.sh")
        with open(script, "w") as f:
            f.write("#!/bin/bash\nsrun %s\n" % PROBE)
        os.chmod(script, 0o755)
        out = os.path.join(lab.dir, "job.out")
        if tool == "sbatch":
            r = lab.run(["sbatch", "--wait", "-o", out] + JOB.split() + ["--dist-bind", script], timeout=120)
            text = open(out).read() if os.path.exists(out) else ""
        else:
            r = lab.run(["salloc"] + JOB.split() + ["--dist-bind", script], timeout=120)
            text = r.stdout
        rows = parse_probe(text)
        t.eq(r.returncode, 0, tool + " --dist-bind: the job ran")
        check_mapping(t, base, rows, "rank", bound_own(base))
with Lab(cli_filter=False) as lab:
    print("-- no cli_filter")
    base = lab.table(JOB)
    t.eq([b["OPEN_"] for _, b in sorted(base.items())], ["0", "1", "2", "0", "1"],
         "Slurm confines each task to its own GPU")
    t.eq({b["CUDA_VISIBLE_DEVICES"] for b in base.values()}, {"0"}, "and numbers it 0 inside the cgroup")
    refused(lab, JOB + " --dist-bind", "rank, bound per task")
    refused(lab, JOB + " --dist-bind=closest", "closest, bound per task")
    refused(lab, "-N1 -w node1 -n3 --gpus-per-node=3 --gpu-bind=single:1 --dist-bind", "rank, --gpu-bind=single:1", ("node1",))
    for mode in ("isolate", "env"):
        check_mapping(t, base, lab.table(JOB + " --dist-bind=" + mode), mode, bound_own(base))
    nobind = JOB + " --gpu-bind=none"
    base = lab.table(nobind)
    t.eq([b["CUDA_VISIBLE_DEVICES"] for _, b in sorted(base.items())], nobind_lists(base, lab.cgroup),
         "--gpu-bind=none: Slurm's own lists (none before 23.11, the step's GPUs after)")
    t.eq([b["OPEN_"] for _, b in sorted(base.items())], ["0,1,2"] * 3 + ["0,1"] * 2,
         "--gpu-bind=none: every step GPU of the node openable")
    for mode in ("rank", "isolate", "closest"):
        check_mapping(t, base, lab.table(nobind + " --dist-bind=" + mode), mode, unbound_own(base))

t.done()
