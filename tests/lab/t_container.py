#!/usr/bin/python3
"""Slurm's own `srun --container BUNDLE` (OCI, oci.conf with crun, lab.sh
--oci) with --dist-bind: what reaches the program inside the container.
The bundle is made here from the host's (or release root's) own files: a
shell, env, dist-bind-check and their libraries, no registry.

- Slurm 23.02 and later write the container's environment after SPANK
  task_init: every variable dist-bind sets reaches the program, the same
  as in the same step without --container.
- Slurm 22.05 writes it before task_init (setup_container, as slurmstepd
  starts): none of them does (nor Slurm's per-task SLURM_PROCID); dist-bind
  says so in verbose, and dist-bind-check inside the container reports it
  and fails.  22.05 also takes one task per node only with --container."""
# lab-configs: plain
# lab-releases: every (when Slurm writes the container's environment differs by release)
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "kit"))
from labkit import Lab, Test, skip  # noqa: E402
import releasekit  # noqa: E402
from runtimekit import CHECK, need  # noqa: E402

need(CHECK)
if not shutil.which("crun"):
    skip("no crun on this Slurm release's machine (packaging/deps.sh and release.sh install it)")
RELEASE = releasekit.native()
EARLY = RELEASE == "22.05"  # before 23.02
t = Test("container (Slurm %s, srun --container with crun)" % RELEASE)
STEP = "-N2 -n2 --gpus-per-node=2"  # 22.05 refuses more than one task per node with --container
MINE = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "NODE_RANK", "GROUP_RANK", "GROUP_WORLD_SIZE",
        "MASTER_ADDR", "MASTER_PORT", "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "DIST_BIND_DEVICE",
        "DIST_BIND_GPUS", "DIST_BIND_MODE", "DIST_BIND_SET")


def copy_with_libs(root, path):
    """`path` and the libraries ldd names for it, at the same paths under root."""
    files = [path] + [w for w in subprocess.run(["ldd", path], capture_output=True, text=True).stdout.split()
                      if w.startswith("/")]
    for f in files:
        dst = root + os.path.abspath(f)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copy(os.path.realpath(f), dst)


def make_bundle(d):
    bundle = os.path.join(d, "bundle")
    root = os.path.join(bundle, "rootfs")
    for p in ("/bin/sh", "/usr/bin/env", CHECK):
        copy_with_libs(root, p)
    os.makedirs(os.path.join(root, "tmp"), exist_ok=True)
    spec = subprocess.run(["crun", "spec"], cwd=bundle, capture_output=True, text=True)
    t.eq(spec.returncode, 0, "crun spec writes a config.json (%s)" % spec.stderr.strip())
    with open(os.path.join(bundle, "config.json")) as f:
        c = json.load(f)
    # No terminal, no cgroups (crun joins none: --cgroup-manager=disabled in
    # the lab's oci.conf), no UTS namespace (so no hostname): the lab's node
    # names come from the node's own UTS namespace.
    c["process"]["terminal"] = False
    c["process"]["env"] = ["PATH=/bin:/usr/bin", "FROM_IMAGE=1"]
    c["linux"]["namespaces"] = [{"type": "pid"}, {"type": "mount"}]
    for k in ("resources", "cgroupsPath"):
        c["linux"].pop(k, None)
    c.pop("hostname", None)
    # Every mount point made now: both nodes' tasks start crun on this one
    # rootfs at once, and crun making a missing one races ("cannot mkdir
    # `sys`: File exists", seen here on 22.05).
    for m in c.get("mounts", []):
        os.makedirs(root + m["destination"], exist_ok=True)
    with open(os.path.join(bundle, "config.json"), "w") as f:
        json.dump(c, f, indent=1)
    return bundle


def envs(r):
    """{task: {var: value}} from `srun -l env` (each line "TASK: NAME=VALUE")."""
    out = {}
    for line in r.stdout.splitlines():
        task, sep, kv = line.partition(": ")
        k, eq, v = kv.partition("=")
        if sep and eq and task.strip().isdigit():
            out.setdefault(int(task), {})[k] = v
    return out


ENV = ["/usr/bin/env"]

with Lab(cpus=3, gpus=2, oci=True) as lab:
    bundle = make_bundle(lab.dir)
    plain = lab.srun(STEP + " -l --dist-bind", ENV)
    base = envs(plain)
    t.eq(sorted(base), [0, 1], "without --container: two tasks (%s)" % plain.stderr.strip()[-200:])

    r = lab.srun(STEP + " -l --container=%s --dist-bind=rank,verbose" % bundle, ENV)
    inside = envs(r)
    t.eq(len(inside), 2, "with --container: two tasks ran in the container (rc %d, %s)"
         % (r.returncode, r.stderr.strip()[-300:]))
    t.ok(all(e.get("FROM_IMAGE") == "1" for e in inside.values()), "the program ran inside the bundle (its config's env)")
    if not EARLY:
        got = {k: {v: e.get(v) for v in MINE if v != "DIST_BIND_SET"} for k, e in inside.items()}
        want = {k: {v: e.get(v) for v in MINE if v != "DIST_BIND_SET"} for k, e in base.items()}
        # MASTER_PORT is hashed from the step id: compare it within the step.
        for k in want:
            want[k].pop("MASTER_PORT", None)
            got.get(k, {}).pop("MASTER_PORT", None)
        t.eq(got, want, "every variable dist-bind sets reaches the program inside the container, as without it")
        t.ok(all(e.get("DIST_BIND_SET") for e in inside.values()), "and its record of them (DIST_BIND_SET)")
        t.eq(len({e.get("MASTER_PORT") for e in inside.values()}), 1, "one MASTER_PORT in the step")
        t.ok("this Slurm (before 23.02) writes the container's environment" not in r.stderr,
             "verbose does not say the variables are missing")
    else:
        t.eq([sorted(v for v in MINE + ("SLURM_PROCID", "SLURM_LOCALID") if v in e) for e in inside.values()], [[], []],
             "Slurm 22.05: none of dist-bind's variables (nor SLURM_PROCID, SLURM_LOCALID) reach the program")
        lines = [l for l in r.stderr.splitlines() if "dist-bind: rank=" in l]
        t.eq(len(lines), 2, "one verbose line per task (%s)" % r.stderr.strip()[-300:])
        t.ok(all("srun --container=%s: this Slurm (before 23.02) writes the container's environment before SPANK "
                 "task_init, so none of dist-bind's variables" % bundle in l for l in lines),
             "verbose says the variables do not reach the program")
        c = lab.srun(STEP + " --container=%s --dist-bind" % bundle, [CHECK])
        t.ok(c.returncode != 0, "dist-bind-check inside the container fails (rc %d)" % c.returncode)
        t.eq(c.stderr.count("dist-bind-check: PROBLEM: "), 2, "each task reports it (%s)" % c.stderr.strip()[-400:])
        t.ok("dist-bind's variables are missing here although srun ran with --dist-bind" in c.stderr
             and "with srun --container, Slurm before 23.02 writes the container's environment" in c.stderr,
             "and says why")
t.done()
