#!/usr/bin/python3
"""The lab writes to no cgroup but its own.

Slurm 25.05 and later slurmd (cgroup v1) reset the memory and cpuset
limits of the cgroup they start in.  Here that cgroup is the machine's, not
the lab's, so lab.sh shows each node's slurmd those two controllers as
empty read-only directories.  Checked on every release: in each node's
mount namespace the controllers show no cgroup files; slurmd (DebugFlags=
CGROUP, SlurmdDebug=verbose) never logs that it reset a limit, and on
26.05 logs that it found no controller to reset; the machine's memory and cpuset values of this
process's cgroups are what they were before the lab started and after a
job ran."""
# lab-configs: plain cgroup
# lab-releases: every (behaviour that differs by release: runs on 24.11 too)
import os, re, subprocess, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "kit"))
from labkit import Lab, Test, slurm_at_least


def own_cgroup_values():
    """memory.limit_in_bytes and cpuset.cpus/mems of the cgroups this
    process is in (the machine's), as seen from the machine's namespace."""
    out = {}
    with open("/proc/self/cgroup") as f:
        for line in f:
            _, ctrls, path = line.rstrip("\n").split(":", 2)
            for c, files in (("memory", ["memory.limit_in_bytes"]), ("cpuset", ["cpuset.cpus", "cpuset.mems"])):
                if c in ctrls.split(","):
                    for name in files:
                        p = "/sys/fs/cgroup/%s%s/%s" % (c, path.rstrip("/"), name)
                        if os.path.exists(p):
                            out[p] = open(p).read().strip()
    return out


t = Test("lab-cgroups")
before = own_cgroup_values()
t.ok(bool(before), "this process's memory/cpuset cgroup values are readable: %s" % sorted(before))
with Lab(slurmd_debug="verbose") as lab:
    r = lab.srun("-N2 -n2", ["/bin/true"])
    t.eq(r.returncode, 0, "a job runs")
    for n in ("node1", "node2"):
        holder = open(os.path.join(lab.dir, n, "holder.pid")).read().strip()
        for c in ("memory", "cpuset"):
            # The holder sleeps in the node's mount namespace (and, in a
            # release's root, under its root directory: -r).
            q = subprocess.run(["nsenter", "-t", holder, "-m", "-r", "ls", "-A", "/sys/fs/cgroup/" + c],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            t.eq((q.returncode, q.stdout.strip()), (0, ""), "%s: /sys/fs/cgroup/%s is empty in the node" % (n, c))
        log = open(os.path.join(lab.dir, n, "slurmd.log")).read()
        resets = re.findall(r".*Reset slurmd (?:memory|cpuset) limits.*", log)
        t.eq(resets, [], "%s: slurmd reset no limit of the cgroup it started in" % n)
        if slurm_at_least("25.05"):
            t.ok("Not resetting memory, controller not found" in log,
                 "%s: slurmd looked for the memory controller and found none" % n)
    after_job = own_cgroup_values()
t.eq(after_job, before, "the machine's cgroup values are unchanged after a job")
t.eq(own_cgroup_values(), before, "and after the lab went down")
t.done()
