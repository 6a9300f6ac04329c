#!/usr/bin/python3
"""Every mode on the seed layout, and k=2 GPUs per task, each compared with
the same job without --dist-bind."""
# lab-configs: plain cgroup cgroup2
# lab-releases: every (behaviour that differs by release: runs on 24.11 too)
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "kit"))
from labkit import Lab, Test, check_mapping, bound_own
from devmodel import own_from_slurm

t = Test("modes")
with Lab() as lab:
    job = "-N2 -n5 --gpus-per-task=1"
    base = lab.table(job)
    t.eq(len(base), 5, "baseline ran")
    for mode in ("rank", "isolate", "closest", "env"):
        print("-- mode " + mode)
        fixed = lab.table(job + " --dist-bind=" + mode)
        t.eq(len(fixed), 5, mode + ": 5 tasks")
        check_mapping(t, base, fixed, mode, bound_own(base))

    print("-- mode off")
    off = lab.table(job + " --dist-bind=off")
    for r, f in sorted(off.items()):
        t.eq(f["RANK"], None, "off: rank %d has no RANK" % r)
        t.eq(f["DIST_BIND_MODE"], None, "off: rank %d has no DIST_BIND_MODE" % r)
        t.eq(f["CUDA_VISIBLE_DEVICES"], base[r]["CUDA_VISIBLE_DEVICES"], "off: rank %d GPUs untouched" % r)

    # closest on fake GPUs: no topology matches, so it says why in verbose.
    r = lab.srun(job + " --dist-bind=closest,verbose", ["true"])
    t.ok("closest: no topology" in r.stderr, "closest,verbose says why it chose as rank")

    # k=2: -N2 -n3 --gpus-per-task=2 is 2+1; node2's single task keeps both
    # of its GPUs (Slurm skips per-task binding there).
    print("-- k=2")
    job2 = "-N2 -n3 --gpus-per-task=2"
    base2 = lab.table(job2)
    t.eq([own_from_slurm(base2[r]) for r in range(3)], [[0, 1], [2, 3], [0, 1]], "k=2 baseline as Slurm binds it")
    for mode in ("rank", "isolate"):
        fixed2 = lab.table(job2 + " --dist-bind=" + mode)
        check_mapping(t, base2, fixed2, mode, bound_own(base2))
t.done()
