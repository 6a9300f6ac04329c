#!/usr/bin/python3
"""--dist-bind=closest on the real two-node lab.

1. As the lab is: slurmd cached this machine's topology without I/O devices
   (as slurmd 22.05 always does), so closest discovers live, which shows
   none of the lab's fake GPUs, so closest is rank, and verbose says why
   (naming the spool file it read, which proves the spool directory was
   found).
2. With a real machine's topology in the spool (the DGX-2 export, copied
   over slurmd's cache after it started) and a fake NVIDIA driver view
   (DIST_BIND_NVIDIA_PROC, read by test builds only), the tasks get the GPUs worked out by hand, the
   rank promise holds for them, and DIST_BIND_NUMA says where each sits; a
   DIST_BIND_NUMA the user exported wins.
"""
# lab-configs: plain cgroup
import os
import shutil
import sys

# The fake driver view needs the test build of the plugin (the shipped one
# never reads DIST_BIND_NVIDIA_PROC).
os.environ["DIST_BIND_PLUGIN_BUILD"] = "test"
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "kit"))
from labkit import Lab, Test, check_mapping, bound_own, parse_probe, ROOT

PROBE = r"""#!/bin/bash
line="PROBE"
for v in SLURM_PROCID SLURM_LOCALID SLURMD_NODENAME RANK LOCAL_RANK CUDA_VISIBLE_DEVICES ROCR_VISIBLE_DEVICES \
         HIP_VISIBLE_DEVICES GPU_DEVICE_ORDINAL DIST_BIND_DEVICE DIST_BIND_GPUS DIST_BIND_NUMA DIST_BIND_NICS \
         DIST_BIND_MODE; do
    if [ -n "${!v+x}" ]; then line+=$'\t'"$v=${!v}"; else line+=$'\t'"$v="$'\x01'; fi
done
printf '%s\n' "$line"
"""

DGX2 = os.path.join(ROOT, "tests", "topology", "xml", "nvidiaDGX2.xml")


def scenario(t, lab):
    """The checks in the module docstring, on a running lab (plain or sanitized)."""
    # slurmd caches its topology in its spool directory, one per node here.
    lab.plugstack("topology_cache=%s/%%n/spool/hwloc_topo_whole.xml" % lab.dir)
    probe = os.path.join(lab.dir, "closest-probe.sh")
    with open(probe, "w") as f:
        f.write(PROBE)
    os.chmod(probe, 0o755)

    def table(args, env=None):
        r = lab.srun(args, [probe], env=env)
        rows = parse_probe(r.stdout)
        if r.returncode != 0 or not rows:
            print("srun %s failed (rc %d):\n%s%s" % (args, r.returncode, r.stdout, r.stderr))
        return rows, r

    # --- 1. the lab's own topology: no GPUs in it, closest acts as rank ------------------
    job = "-N2 -n5 --gpus-per-task=1"
    base = lab.table(job)
    fixed = lab.table(job + " --dist-bind=closest")
    t.eq(len(fixed), 5, "5 tasks with --dist-bind=closest")
    check_mapping(t, base, fixed, "closest", bound_own(base))
    rows, r = table(job + " --dist-bind=closest,verbose")
    t.eq(sorted(k for k, v in rows.items() if v["DIST_BIND_NUMA"] is None), [0, 1, 2, 3, 4],
         "fallback: no DIST_BIND_NUMA (closest is rank)")
    lines = [l for l in r.stderr.splitlines() if l.startswith("dist-bind: rank=")]
    t.eq(len(lines), 5, "one verbose line per task")
    for node in ("node1", "node2"):
        spool = os.path.join(lab.dir, node, "spool", "hwloc_topo_whole.xml")
        # Slurm 26.05's slurmd no longer writes that cache: live discovery.
        cached = ("cached topology %s has no I/O devices" % spool) if os.path.exists(spool) else "no " + spool
        why = ("closest: no topology information for these GPUs (the topology shows no GPUs; topology by live "
               "discovery (%s))" % cached)
        mine = [l for l in lines if "host=%s " % node in l]
        t.ok(mine and all(why in l and "choosing as rank" in l for l in mine),
             "%s: verbose says why closest is rank and which cached topology it read: %s" % (node, mine[:1]))

    # --- 2. a real machine's topology in node1's spool ----------------------------------
    # DGX-2 export: cores 0,1 on socket/NUMA 0, core 2 on socket/NUMA 1.  The
    # fake driver says minor 0 = bus b7 (socket 1), 1 = 34 (socket 0), 2 = bc
    # (socket 1).  Slurm gives the 3 tasks cores 0-2 and GPUs 0,1,2; its
    # default cyclic layout puts task 0 on core 0 (socket 0), task 1 on core
    # 2 (socket 1), task 2 on core 1 (socket 0).  Socket 0 has one GPU (1):
    # task 0 takes it; task 1 takes socket 1's first in bus order (0, b7);
    # task 2 gets the last (2, bc).
    spool = os.path.join(lab.dir, "node1", "spool", "hwloc_topo_whole.xml")
    shutil.copy(DGX2, spool)
    nv = os.path.join(lab.dir, "nvidia-gpus")
    for bus, minor in (("0000:b7:00.0", 0), ("0000:34:00.0", 1), ("0000:bc:00.0", 2)):
        os.makedirs(os.path.join(nv, bus))
        with open(os.path.join(nv, bus, "information"), "w") as f:
            f.write("Model: \t\t Tesla V100-SXM3-32GB\nBus Location: \t %s\nDevice Minor: \t %d\n" % (bus, minor))
    env = {"DIST_BIND_NVIDIA_PROC": nv}
    job = "-N1 -w node1 -n3 --gpus-per-task=1"
    base = lab.table(job)
    rows, r = table(job + " --dist-bind=closest,verbose", env=env)
    t.eq(len(rows), 3, "3 tasks on node1")
    lines = [l for l in r.stderr.splitlines() if l.startswith("dist-bind: rank=")]
    src = ("closest: topology from %s, GPUs matched by PCI bus id (NVIDIA device minors), "
           "task CPUs cyclic over cores 0-2" % spool)
    t.ok(len(lines) == 3 and all(src in l for l in lines), "verbose names the source: %s" % lines[:1])
    want = {0: ("1", "0", "1,0,2"), 1: ("0", "1", "1,0,2"), 2: ("2", "0", "0,1,2")}
    for rank, (gpu, numa, visible) in want.items():
        row = rows.get(rank, {})
        pre = "rank %d: " % rank
        t.eq(row.get("DIST_BIND_GPUS"), gpu, pre + "closest GPU (worked out by hand)")
        t.eq(row.get("DIST_BIND_NUMA"), numa, pre + "DIST_BIND_NUMA")
        t.eq(row.get("CUDA_VISIBLE_DEVICES"), visible, pre + "visible list: own GPU at device LOCAL_RANK")
        t.eq(row.get("DIST_BIND_DEVICE"), row.get("LOCAL_RANK"), pre + "DIST_BIND_DEVICE = LOCAL_RANK")
        t.eq(row.get("ROCR_VISIBLE_DEVICES"), visible, pre + "ROCR_VISIBLE_DEVICES rewritten to match")
        # ROCm applies these after ROCR_VISIBLE_DEVICES, which already orders the GPUs.
        t.eq(row.get("GPU_DEVICE_ORDINAL"), "0,1,2", pre + "GPU_DEVICE_ORDINAL: 0..m-1 after ROCR_VISIBLE_DEVICES")
        t.eq(row.get("HIP_VISIBLE_DEVICES"), "0,1,2", pre + "HIP_VISIBLE_DEVICES: 0..m-1 after ROCR_VISIBLE_DEVICES")
        t.eq(row.get("DIST_BIND_NICS"), None, pre + "no NICs in this export: DIST_BIND_NICS unset")
        t.eq(row.get("DIST_BIND_MODE"), "closest", pre + "DIST_BIND_MODE")
    t.eq(sorted(v.get("DIST_BIND_GPUS") for v in rows.values()), ["0", "1", "2"], "no two tasks on one GPU")

    # A value the user exported wins.
    rows, _ = table(job + " --dist-bind=closest", env=dict(env, DIST_BIND_NUMA="7"))
    t.eq([rows[k].get("DIST_BIND_NUMA") for k in sorted(rows)], ["7", "7", "7"], "user's DIST_BIND_NUMA wins")
    t.eq([rows[k].get("DIST_BIND_GPUS") for k in sorted(rows)], ["1", "0", "2"], "... and the choice stands")

    # Without the driver's view GPUs are matched by bus order: 0,1,2 = bus 34,
    # 36, 39, all on socket 0, so the choice is rank's and only NUMA differs.
    rows, r = table(job + " --dist-bind=closest,verbose", env={"DIST_BIND_NVIDIA_PROC": "/nonexistent"})
    t.eq([rows[k].get("DIST_BIND_GPUS") for k in sorted(rows)], ["0", "1", "2"], "by bus order: GPUs")
    t.eq([rows[k].get("DIST_BIND_NUMA") for k in sorted(rows)], ["0", "1", "0"], "by bus order: NUMA nodes")
    t.ok("GPUs matched by PCI bus order" in r.stderr, "verbose says the GPUs were matched by bus order")

    # A broken cache: closest does not fail the job, it discovers live (no
    # GPUs here) and says so.  (Under task/cgroup, slurmstepd loads the same
    # cache before the plugin runs and writes a new one where it cannot
    # read it, so there the plugin never sees a broken one.)
    with open(spool, "w") as f:
        f.write("<topology><object")
    rows, r = table(job + " --dist-bind=closest,verbose", env=env)
    t.eq(len(rows), 3, "broken cached XML: the job still runs")
    if not lab.cgroup:
        t.ok("cached topology unusable: %s: not an hwloc XML topology" % spool in r.stderr,
             "verbose names the broken cache: %s" % [l for l in r.stderr.splitlines() if "closest" in l][:1])
    check_mapping(t, base, lab.table(job + " --dist-bind=closest"), "closest", bound_own(base))

    # A cache someone other than root could have put or changed there is
    # not read (the DGX-2 export would otherwise decide): a symbolic link,
    # then a group-writable file.  Live discovery, and verbose says why.
    os.unlink(spool)
    os.symlink(DGX2, spool)
    rows, r = table(job + " --dist-bind=closest,verbose", env=env)
    t.eq(len(rows), 3, "symbolic link as cache: the job runs")
    t.ok("cached topology %s is a symbolic link: not used" % spool in r.stderr, "verbose: the link is not followed")
    t.eq([rows[k].get("DIST_BIND_NUMA") for k in sorted(rows)], [None, None, None], "... and the DGX-2 did not decide")
    os.unlink(spool)
    shutil.copy(DGX2, spool)
    os.chmod(spool, 0o664)
    rows, r = table(job + " --dist-bind=closest,verbose", env=env)
    t.ok("cached topology %s is writable by group or others: not used" % spool in r.stderr,
         "verbose: a group-writable cache is not read")
    t.eq([rows[k].get("DIST_BIND_NUMA") for k in sorted(rows)], [None, None, None], "... and did not decide")


if __name__ == "__main__":
    t = Test("closest")
    with Lab() as lab:
        scenario(t, lab)
    t.done()
