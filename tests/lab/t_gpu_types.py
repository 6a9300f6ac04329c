#!/usr/bin/python3
"""More than one GPU type per task: from 25.05
`--gpus-per-task=a100:1,v100:1` asks for one of each, and Slurm binds the
sum (SLURMD_TRES_BIND per_task:2, SLURM_TRES_PER_TASK naming both types).
dist-bind must count k=2 GPUs per task: device LOCAL_RANK*2 in rank mode,
two GPUs in isolate, also under device cgroups where the packaged
cli_filter's --gpu-bind=none leaves k to what srun read from the option.
The lab's nodes have two a100 and two v100 (lab.sh --gpu-types)."""
# lab-configs: plain cgroup
# lab-releases: 26.05 (multi-type --gpus-per-task is 25.05+)
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "kit"))
from labkit import Lab, Test, check_mapping, bound_own

t = Test("gpu-types")
with Lab(gpu_types=True) as lab:
    # On node1 every time: a job started while the last one's node is still
    # completing goes to the other node, and the check compares each task
    # with the same task without --dist-bind, node included.
    job = "-N1 -w node1 -n2 --gpus-per-task=a100:1,v100:1"
    base = lab.table(job)
    t.eq([len((base[r]["CUDA_VISIBLE_DEVICES"] or "").split(",")) for r in sorted(base)], [2, 2],
         "baseline: Slurm binds two GPUs to each task")
    for mode in ("rank", "isolate"):
        fixed = lab.table(job + " --dist-bind=" + mode)
        t.eq(len(fixed), 2, mode + ": 2 tasks")
        check_mapping(t, base, fixed, mode, bound_own(base))
        t.eq([fixed[r]["DIST_BIND_DEVICE"] for r in sorted(fixed)], ["0", "2"] if mode == "rank" else ["0", "0"],
             mode + ": k=2, device LOCAL_RANK*2 (rank) or 0 (isolate)")
t.done()
