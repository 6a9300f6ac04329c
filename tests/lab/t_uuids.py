#!/usr/bin/python3
"""GPU lists by UUID: Slurm 26.05's gres.conf
Flags=env_uuid puts the GPUs' UUIDs in CUDA_VISIBLE_DEVICES (per task and
for the step) while SLURM_STEP_GPUS keeps node indices.  The lab's GPUs are
found by Slurm's own gpu/nvidia AutoDetect, which from 25.11 reads the
driver's /proc and /sys files: tests/lab/kit/fake_nvidia.sh gives each node
four such GPUs in its mount namespace (UUID GPU-0000000K-...-00000000000N
for minor N of node K).  Every mode keeps the promise with UUID lists:
device LOCAL_RANK (rank) or 0 (isolate) is the task's own GPU, as CUDA
matches UUIDs among the GPUs the task can open (devmodel)."""
# lab-configs: plain cgroup
# lab-releases: 26.05 (gpu/nvidia AutoDetect without NVML and env_uuid are 25.11+)
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "kit"))
from labkit import Lab, Test, check_mapping, bound_own, unbound_own

t = Test("uuids")
with Lab(gpu_uuids=True) as lab:
    print("-- the seed layout")
    job = "-N2 -n5 --gpus-per-task=1"
    base = lab.table(job)
    t.ok(base and all((b["CUDA_VISIBLE_DEVICES"] or "").startswith("GPU-") for b in base.values()),
         "baseline: Slurm lists each task's GPU by UUID: %s" % [b["CUDA_VISIBLE_DEVICES"] for b in base.values()][:2])
    for mode in ("rank", "isolate"):
        fixed = lab.table(job + " --dist-bind=" + mode)
        t.eq(len(fixed), 5, mode + ": 5 tasks")
        check_mapping(t, base, fixed, mode, bound_own(base))
        t.ok(all((f["CUDA_VISIBLE_DEVICES"] or "").startswith("GPU-") for f in fixed.values()),
             mode + ": the lists stay UUIDs")

    print("-- two GPUs per task")
    job = "-N2 -n4 --gpus-per-task=2"
    base = lab.table(job)
    fixed = lab.table(job + " --dist-bind")
    check_mapping(t, base, fixed, "rank", bound_own(base))
    t.eq([fixed[r]["DIST_BIND_DEVICE"] for r in sorted(fixed)], ["0", "2", "0", "2"], "k=2: device LOCAL_RANK*2")

    print("-- --gpus-per-node=4 without binding")
    job = "-N2 -n5 --gpus-per-node=4"
    base = lab.table(job)
    for mode in ("rank", "isolate"):
        check_mapping(t, base, lab.table(job + " --dist-bind=" + mode), mode, unbound_own(base))
t.done()
