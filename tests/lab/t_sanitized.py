#!/usr/bin/python3
"""The plugin inside real slurmd/slurmstepd under AddressSanitizer, LeakSanitizer
and UBSan: good jobs and every kind of bad input, then no report may name
anything but Slurm's own (suppressed) leaks."""
# lab-configs: plain cgroup
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "kit"))
from labkit import Lab, Test, check_sanitizer_reports, sanitizer_logs

t = Test("sanitized")
logs = sanitizer_logs()
job = "-N2 -n5 --gpus-per-task=1"
with Lab(sanitize_dir=logs) as lab:
    map_gpu = "-N2 -n5 --gpus-per-node=4 --gpu-bind=map_gpu:1,0,3 --dist-bind"
    good = [job + " --dist-bind=verbose", job + " --dist-bind=isolate", job + " --dist-bind=closest,verbose",
            "-N2 -n3 --gpus-per-task=2 --dist-bind", "-n5 -m arbitrary -w node2,node1,node2,node1,node2 --dist-bind",
            "-N2 -n5 --dist-bind", "-N1 -n3 --gpus-per-node=2 --dist-bind=share",
            job + " --gpu-bind=none --dist-bind=env,verbose"]
    bad = [("-N1 -n3 --gpus-per-node=2 --dist-bind", None, "more tasks than GPUs"),
           (job + " --dist-bind", {"MASTER_PORT": "x" * 5000}, "huge garbage MASTER_PORT"),
           (job + " --dist-bind", {"MASTER_PORT": "99999999999999999999999"}, "overflowing MASTER_PORT")]
    # A task confined to its own GPU makes rank refuse the step (cgroup).
    if lab.cgroup:
        bad.append((map_gpu, None, "tasks confined to their own GPU"))
    else:
        good.append(map_gpu)
    for args in good:
        r = lab.srun(args, ["true"], timeout=60)
        t.eq(r.returncode, 0, "runs: " + args)
    # srun replaces whatever the user exported as its word to the nodes.
    r = lab.srun(job + " --dist-bind", ["true"], env={"DIST_BIND_SRUN_DEVICES": "y" * 5000})
    t.eq(r.returncode, 0, "a DIST_BIND_SRUN_DEVICES the user exported is replaced by srun's")
    # Bad input on the node side: each must fail the step cleanly.
    for args, env, what in bad:
        r = lab.srun(args, ["/bin/echo", "RAN"], env=env, timeout=60)
        t.ok(r.returncode != 0 and "RAN" not in r.stdout and "dist-bind:" in r.stderr, "fails cleanly: " + what)
    lab.plugstack("default=rank ports=1-0")  # a bad key reaches slurmstepd's parser too
    r = lab.srun("-N1 -n1 --dist-bind", ["true"])
    t.ok(r.returncode != 0, "bad plugstack key refused")
    lab.plugstack("default=isolate")
    r = lab.srun(job, ["true"])
    t.eq(r.returncode, 0, "admin default")
# The lab is down: slurmd and every slurmstepd have exited and written their reports.
check_sanitizer_reports(t, logs)
t.done()
# lab-releases: native (the sanitizer runtimes are this machine's)
