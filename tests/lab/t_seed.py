#!/usr/bin/python3
"""The seed job: srun -N2 -n5 --gpus-per-task=1 --dist-bind, against the same
job without it.  In the cgroup configuration the site has installed the
packaged cli_filter, so --dist-bind gets every step GPU openable."""
# lab-configs: plain cgroup cgroup2
# lab-releases: every (behaviour that differs by release: runs on 24.11 too)
import os
import subprocess
import sys
sys.path.insert(0, __import__("os").path.join(__import__("os").path.dirname(__import__("os").path.abspath(__file__)), "kit"))
from labkit import Lab, Test, check_mapping, bound_own, device_of, lab_sh_args, ROOT, PLUGIN, HERE

t = Test("seed")
with Lab() as lab:
    job = "-N2 -n5 --gpus-per-task=1"
    base = lab.table(job)
    t.eq(len(base), 5, "5 tasks without --dist-bind")
    # The bug being fixed: without dist-bind, set_device(SLURM_LOCALID)
    # points at no GPU for every local rank above 0.
    broken = sorted(r for r, b in base.items() if device_of(b, int(b["SLURM_LOCALID"])) is None)
    t.eq(broken, [1, 2, 4], "without dist-bind, device SLURM_LOCALID does not exist for ranks 1, 2, 4")
    t.eq({r: b["RANK"] for r, b in base.items()}, {r: None for r in range(5)}, "no RANK without dist-bind")

    fixed = lab.table(job + " --dist-bind")
    t.eq(len(fixed), 5, "5 tasks with --dist-bind")
    check_mapping(t, base, fixed, "rank", bound_own(base))
    t.eq([f["LOCAL_WORLD_SIZE"] for _, f in sorted(fixed.items())], ["3", "3", "3", "2", "2"],
         "LOCAL_WORLD_SIZE 3 and 2")
    t.eq(sorted(r for r, f in fixed.items() if device_of(f, int(f["LOCAL_RANK"])) is None), [],
         "with dist-bind, device LOCAL_RANK exists for every rank")

    # verbose: one line per task on stderr naming rank, host, GPUs.
    r = lab.srun(job + " --dist-bind=verbose", ["true"])
    lines = [l for l in r.stderr.splitlines() if l.startswith("dist-bind: rank=")]
    t.eq(r.returncode, 0, "verbose run succeeds")
    t.eq(len(lines), 5, "one verbose line per task")
    t.ok(any("rank=3/5 host=node2 local_rank=0/2 gpus=0 visible=0,1 device=0 mode=rank" in l for l in lines),
         "verbose line of rank 3 names host, local rank, GPUs, visible list: %s" % lines[:1])
    if lab.cgroup:
        t.ok(all("device cgroup" in l for l in lines), "verbose says Slurm numbers the lists inside the cgroup")


LAB_SH = os.path.join(HERE, "lab.sh")

# Each slurmd names the plugin's version once, when it loads it at start (a
# lab whose plugstack.conf names the plugin before the slurmds start).
with open(os.path.join(ROOT, "VERSION")) as f:
    version = f.read().split()[0]
up = subprocess.run([LAB_SH, "up", "--plugin", PLUGIN] + lab_sh_args(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
labdir = up.stdout.strip().splitlines()[-1] if up.returncode == 0 else None
try:
    t.eq(up.returncode, 0, "a lab with the plugin in plugstack.conf at start (%s)" % up.stderr.strip()[-300:])
    for node in ("node1", "node2"):
        log = ""
        if labdir:
            with open(os.path.join(labdir, node, "slurmd.log"), errors="replace") as f:
                log = f.read()
        t.eq(log.count("dist-bind %s loaded" % version), 1, "%s's slurmd log names dist-bind %s once" % (node, version))
finally:
    if labdir:
        subprocess.run([LAB_SH, "down", labdir], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
t.done()
