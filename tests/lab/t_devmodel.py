#!/usr/bin/python3
"""The lab's device model (tests/lab/kit/devmodel.py), on cases worked out by
hand: CUDA's and ROCm's enumeration, and that the invariant catches each
kind of mistake.  No lab: a check of the model the lab tests judge by."""
# lab-releases: native
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "kit"))
from devmodel import expand, lab_uuid, resolve, cuda_view, hip_view, opencl_view, violations

fails = 0


def eq(got, want, what):
    global fails
    ok = got == want
    fails += not ok
    print(("  ok   " if ok else "  FAIL ") + "%s: got %r, want %r" % (what, got, want))


eq(expand("0-2,4"), [0, 1, 2, 4], "expand ranges")
eq(expand(""), [], "expand nothing")
eq(expand(None), [], "expand None")
# CUDA: ordinals among the openable devices; the list ends at the first bad entry.
eq(resolve(None, [1, 3]), [1, 3], "unset: every openable device")
eq(resolve("1,0", [1, 3]), [3, 1], "ordinals among the openable devices")
eq(resolve("1,0,2", [1]), [], "the list ends at the first entry naming nothing (rank 1's 1,0,2 under per-task device cgroups)")
eq(resolve("0,5,1", [0, 1, 2]), [0], "ends at 5")
eq(resolve("0,0,1", [0, 1]), [0], "a repeated device ends the list")
eq(resolve("GPU-x,0", [0]), [], "a name CUDA cannot match ends it")
# UUIDs (Slurm 26.05 Flags=env_uuid; the lab's fake_nvidia.sh names minor N of node K
# GPU-0000000K-0000-4000-8000-00000000000N): CUDA matches them among the openable GPUs.
U = "GPU-00000001-0000-4000-8000-%012d"
eq(lab_uuid("node1", 2), U % 2, "the lab's UUID of node1's GPU 2")
eq(resolve(",".join(U % g for g in (2, 0, 1)), [0, 1, 2]), [2, 0, 1], "a UUID list selects by UUID, in its order")
eq(resolve(",".join(U % g for g in (1, 2)), [1]), [1], "a UUID the task cannot open ends the list")
eq(resolve(U % 3 + ",0", [0, 3]), [3, 0], "UUIDs and ordinals mixed")
eq(resolve(",".join(U % g for g in (1, 1)), [1]), [1], "a repeated UUID ends the list")
# Under per-task device cgroups Slurm's 0 is GPU 1 inside the task's cgroup.
eq(cuda_view({"CUDA_VISIBLE_DEVICES": "0"}, [1]), [1], "cgroup-local 0 is the only openable GPU")
# ROCm: ROCR first, then HIP_VISIBLE_DEVICES (else CUDA_VISIBLE_DEVICES) among what is left.
row = {"ROCR_VISIBLE_DEVICES": "2,0,1", "CUDA_VISIBLE_DEVICES": "2,0,1"}
eq(hip_view(row, [0, 1, 2]), [1, 2, 0], "ROCR and CUDA lists permute twice")
row["HIP_VISIBLE_DEVICES"] = "0,1,2"
eq(hip_view(row, [0, 1, 2]), [2, 0, 1], "HIP_VISIBLE_DEVICES wins over CUDA_VISIBLE_DEVICES")
eq(opencl_view({"ROCR_VISIBLE_DEVICES": "2,0", "GPU_DEVICE_ORDINAL": "1"}, [0, 1, 2]), [0], "OpenCL after ROCR")


def task(rank, host, local, **kv):
    r = {"SLURMD_NODENAME": host, "SLURM_LOCALID": str(local), "LOCAL_RANK": str(local), "OPEN_": "0,1,2"}
    r.update(kv)
    return rank, r


good = dict([task(0, "n1", 0, CUDA_VISIBLE_DEVICES="0,1,2", DIST_BIND_DEVICE="0"),
             task(1, "n1", 1, CUDA_VISIBLE_DEVICES="0,1,2", DIST_BIND_DEVICE="1"),
             task(2, "n1", 2, CUDA_VISIBLE_DEVICES="1,0,2", DIST_BIND_DEVICE="2")])
own = {0: [0], 1: [1], 2: [2]}
alloc = lambda host: [0, 1, 2]
eq(violations(good, own.get, alloc, "rank"), [], "a right rank mapping passes")

def caught(rows, what, want, mode="rank", owns=own, share=False):
    got = violations(rows, owns.get, alloc, mode, share)
    eq(any(want in g for g in got), True, what + " (%s)" % got[:1])

bad = dict(good)
bad[1] = dict(good[1], OPEN_="1")
caught(bad, "a list naming GPUs the task cannot open", "cannot open")
bad = dict(good)
bad[2] = dict(good[2], DIST_BIND_DEVICE="0")
caught(bad, "DIST_BIND_DEVICE not the own GPU", "is 1, not its own GPU 2")
bad = dict(good)
bad[2] = dict(good[2], CUDA_VISIBLE_DEVICES="2,1,0", DIST_BIND_DEVICE="0")
caught(bad, "device LOCAL_RANK not the own GPU in rank mode", "LOCAL_RANK*k")
eq(violations(bad, own.get, alloc, "isolate"), [], "... which isolate does not promise")
shared = dict([task(0, "n1", 0, CUDA_VISIBLE_DEVICES="0,1", DIST_BIND_DEVICE="0", OPEN_="0,1"),
               task(1, "n1", 1, CUDA_VISIBLE_DEVICES="0,1", DIST_BIND_DEVICE="1", OPEN_="0,1"),
               task(2, "n1", 2, CUDA_VISIBLE_DEVICES="0,1", DIST_BIND_DEVICE="0", OPEN_="0,1")])
shared_own = {0: [0], 1: [1], 2: [0]}
eq(violations(shared, shared_own.get, lambda h: [0, 1], "rank", share=True), [], "share: round-robin GPUs pass")
eq(any("as rank 0 does" in v for v in violations(shared, shared_own.get, lambda h: [0, 1], "rank")), True,
   "without share, two tasks owning one GPU are caught")
bad = dict(good)
bad[0] = dict(good[0], CUDA_VISIBLE_DEVICES="0,1,2,3", OPEN_="0,1,2,3")
caught(bad, "a GPU outside the step's allocation", "outside the step")
twice = dict([task(0, "n1", 0, CUDA_VISIBLE_DEVICES="0,1,2", ROCR_VISIBLE_DEVICES="0,1,2", DIST_BIND_DEVICE="0"),
              task(1, "n1", 1, CUDA_VISIBLE_DEVICES="0,2,1", ROCR_VISIBLE_DEVICES="0,2,1", DIST_BIND_DEVICE="1")])
twice_own = {0: [0], 1: [2]}
eq(any("HIP device DIST_BIND_DEVICE=1 is 1" in v for v in violations(twice, twice_own.get, alloc, "rank")), True,
   "ROCR and CUDA lists permuting twice are caught")
twice[1]["HIP_VISIBLE_DEVICES"] = "0,1,2"
eq(violations(twice, twice_own.get, alloc, "rank"), [], "... and HIP_VISIBLE_DEVICES=0..m-1 mends it")
print("devmodel: %d failed" % fails)
sys.exit(1 if fails else 0)
