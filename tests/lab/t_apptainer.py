#!/usr/bin/env python3
"""Apptainer (Debian sid's 1.4.5) in the lab: `srun --dist-bind apptainer
exec IMG probe` gives the program inside the container what the task gets
outside it.

Each task of one step runs the probe outside the container and then inside
it, so both see the same step (same MASTER_PORT, same GPUs): plain `exec`,
`--cleanenv` and `--containall`, in rank and isolate mode.  The image sets
RANK, CUDA_VISIBLE_DEVICES and MASTER_PORT in its %environment, which
Apptainer lets win over the task's values; dist-bind's APPTAINERENV_ twins
(lib/plan/twins.cc) win over it.  Then Apptainer's own order without
dist-bind, a twin the user exported, and `--nv` on the fake driver tree
(lab.sh --gpu-uuids): every GPU a task is shown is one it can open inside
the container.

The image is a SIF built (as root, `apptainer build` from a directory) from
the root's own files: bash, the probe's tools and their libraries, cached in
build/apptainer/.  Jobs run as a user this test adds to the throw-away
overlay's /etc/passwd (Apptainer as root needs capabilities these machines
withhold; users run it unprivileged, in a user namespace), and the root is
entered with pivot_root (release.sh): Apptainer aborts in a chroot.
"""
# lab-configs: cgroup
# (Device cgroups only: the variables inside are the same without them, and
# with them the GPUs a task can open inside are the device cgroup's; a
# second configuration would add 2.5 minutes and check nothing more.)
# lab-releases: 26.05 (Apptainer is packaged in Debian sid only)
import hashlib
import os
import pwd
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "kit"))
import labkit  # noqa: E402
from labkit import FIELDS, Lab, Test, check_mapping, skip  # noqa: E402

JOB_USER, JOB_UID = "dist-bind-job", 4242
IMAGE_ENV = {"RANK": "99", "CUDA_VISIBLE_DEVICES": "7", "MASTER_PORT": "1", "WORLD_SIZE": "99"}
# What dist-bind sets (and the GPU lists it rewrites); Slurm's own.
DIST_BIND_VARS = ["RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "NODE_RANK", "GROUP_RANK",
                  "GROUP_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "CUDA_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL",
                  "ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ZE_AFFINITY_MASK", "CUDA_DEVICE_ORDER",
                  "DIST_BIND_DEVICE", "DIST_BIND_GPUS", "DIST_BIND_MODE"]
SLURM_VARS = ["SLURM_PROCID", "SLURM_LOCALID", "SLURMD_NODENAME", "SLURM_STEP_ID"]
# What the image holds: the probe and what it runs.
TOOLS = ["bash", "sh", "env", "hostname", "tr", "sort", "paste", "grep", "sed", "cat"]
SEED = "-N2 -n5 --gpus-per-task=1"

# Run by every task: the probe outside, then inside the image once per
# "TAG=apptainer options" argument; each line tagged "TAG:RANK", and the
# step's secret (libdistbind's TCP bootstrap needs it) as "TAG-SECRET:RANK".
WRAPPER = r"""#!/bin/bash
img=$1; shift
r=$SLURM_PROCID
tag() { sed "s/^PROBE/$1:$r/; s/^SECRET /$1-SECRET:$r\tSECRET=/"; }
{ "$PWD/probe.sh"; echo "SECRET ${DIST_BIND_SECRET:-unset}"; } | tag OUT
for spec in "$@"; do
    t=${spec%%=*} opts=${spec#*=}
    apptainer --quiet exec $opts "$img" bash -c "${CD_TO:-:} && probe && echo \"SECRET \${DIST_BIND_SECRET:-unset}\"" | tag "$t"
done
"""


def in_throwaway_root():
    """Adding a user is only safe in a release root's throw-away overlay."""
    if not os.environ.get("DIST_BIND_IN_RELEASE"):
        return False
    with open("/proc/self/mountinfo") as f:
        for line in f:
            parts = line.split()
            if parts[4] == "/":
                return parts[parts.index("-") + 1] == "overlay"
    return False


def add_job_user(home):
    try:
        pwd.getpwnam(JOB_USER)
    except KeyError:
        with open("/etc/passwd", "a") as f:
            f.write("%s:x:%d:%d:dist-bind lab jobs:%s:/bin/sh\n" % (JOB_USER, JOB_UID, JOB_UID, home))
        with open("/etc/group", "a") as f:
            f.write("%s:x:%d:\n" % (JOB_USER, JOB_UID))
    os.makedirs(home, exist_ok=True)
    os.chown(home, JOB_UID, JOB_UID)


def image():
    """The probe's SIF, built once per probe, recipe and Apptainer version."""
    version = subprocess.run(["apptainer", "--version"], stdout=subprocess.PIPE, text=True).stdout.strip()
    key = hashlib.sha256("\n".join([version, open(labkit.PROBE).read(), open(__file__).read()]).encode()).hexdigest()
    cache = os.path.join(labkit.ROOT, "build", "apptainer")
    sif = os.path.join(cache, "probe-%s.sif" % key[:16])
    if os.path.exists(sif):
        return sif
    shutil.rmtree(cache, ignore_errors=True)  # an older image, a half-made tree
    os.makedirs(cache)
    tree = os.path.join(cache, "tree")
    for d in ("usr/bin", "usr/local/bin", "etc", ".singularity.d/env"):
        os.makedirs(os.path.join(tree, d), exist_ok=True)
    for d in ("bin", "lib", "lib64", "sbin"):  # merged /usr, as the root is
        os.symlink("usr/" + d, os.path.join(tree, d))
        os.makedirs(os.path.join(tree, "usr", d), exist_ok=True)
    libs = set()
    for tool in TOOLS:
        path = shutil.which(tool)
        shutil.copy(path, os.path.join(tree, "usr/bin", tool))
        out = subprocess.run(["ldd", path], stdout=subprocess.PIPE, text=True).stdout
        libs.update(w for w in out.split() if w.startswith("/"))
    for lib in libs:
        dest = os.path.join(tree, os.path.realpath(os.path.dirname(lib)).lstrip("/"))
        os.makedirs(dest, exist_ok=True)
        shutil.copy(lib, dest)
    shutil.copy(labkit.PROBE, os.path.join(tree, "usr/local/bin/probe"))
    for f in ("passwd", "group"):  # Apptainer adds the user to these
        open(os.path.join(tree, "etc", f), "w").close()
    # What `apptainer build` writes for a definition file's %environment.
    with open(os.path.join(tree, ".singularity.d/env/90-environment.sh"), "w") as f:
        f.write("".join("export %s=%s\n" % kv for kv in sorted(IMAGE_ENV.items())))
    r = subprocess.run(["apptainer", "--quiet", "build", sif + ".new", tree], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    shutil.rmtree(tree)
    if r.returncode != 0:
        raise SystemExit("apptainer build failed:\n" + r.stdout)
    os.rename(sif + ".new", sif)
    return sif


def rows_of(text):
    """{tag: {rank: {field: value}}} from the wrapper's tagged probe lines."""
    out = {}
    for line in text.splitlines():
        head, _, rest = line.partition("\t")
        tag, _, rank = head.partition(":")
        if not rest or not rank.isdigit():
            continue
        fields = {}
        for kv in rest.split("\t"):
            k, _, v = kv.partition("=")
            fields[k] = None if v == "\x01" else v
        out.setdefault(tag, {})[int(rank)] = fields
    return out


class Jobs:
    """srun as the job user, in the lab's directory, with the image there."""

    def __init__(self, lab, sif, home):
        self.lab, self.home = lab, home
        self.sif = os.path.join(lab.dir, "probe.sif")
        shutil.copy(sif, self.sif)
        for name, text in (("probe.sh", open(labkit.PROBE).read()), ("wrapper.sh", WRAPPER)):
            with open(os.path.join(lab.dir, name), "w") as f:
                f.write(text)
            os.chmod(os.path.join(lab.dir, name), 0o755)

    def srun(self, args, specs, env=None, timeout=180):
        e = {"HOME": self.home, "USER": JOB_USER, "LOGNAME": JOB_USER}
        e.update(env or {})
        argv = ["setpriv", "--reuid=%d" % JOB_UID, "--regid=%d" % JOB_UID, "--clear-groups", "srun"]
        argv += args.split() + [os.path.join(self.lab.dir, "wrapper.sh"), self.sif] + specs
        r = self.lab.run(argv, env=e, timeout=timeout)
        rows = rows_of(r.stdout)
        if r.returncode != 0 or not rows:
            print("srun %s failed (rc %d):\n%s%s" % (args, r.returncode, r.stdout, r.stderr[-3000:]))
        return rows, r


def same(t, got, want, names, what):
    for r in sorted(want):
        g = got.get(r)
        if not t.ok(g is not None, "rank %d: %s: the program ran" % (r, what)):
            continue
        diff = {n: (g.get(n), want[r].get(n)) for n in names if g.get(n) != want[r].get(n)}
        t.ok(not diff, "rank %d: %s: same as outside the container (%d variables) %s" % (r, what, len(names), diff))


def modes(t, jobs):
    """rank and isolate, seed layout: plain exec, --cleanenv, --containall.
    Which GPUs a task can open is not compared here: Apptainer binds the
    lab directory (under /tmp), which holds this lab's fake GPUs, nodev;
    gpus() does that on a lab whose GPUs are in the node's /dev."""
    specs = ["PLAIN=", "CLEAN=--cleanenv", "ALL=--containall"]
    for mode in ("rank", "isolate"):
        rows, r = jobs.srun(SEED + " --dist-bind=" + mode, specs)
        out = rows.get("OUT", {})
        t.eq(sorted(out), list(range(5)), "%s: every task ran the probe outside" % mode)
        same(t, rows.get("PLAIN", {}), out, [f for f in FIELDS if f not in ("OPEN_", "ALLOC_")], mode + " exec")
        # --cleanenv / --containall: dist-bind's variables arrive through
        # their APPTAINERENV_ twins; Slurm's own do not arrive at all.
        for tag, what in (("CLEAN", "--cleanenv"), ("ALL", "--containall")):
            got = rows.get(tag, {})
            same(t, got, out, DIST_BIND_VARS, "%s %s: dist-bind's variables" % (mode, what))
            for rank, row in sorted(got.items()):
                t.eq({v: row.get(v) for v in SLURM_VARS if row.get(v) is not None}, {},
                     "rank %d: %s %s: Slurm's own variables are dropped (measured)" % (rank, mode, what))
                secret = rows.get(tag + "-SECRET", {}).get(rank, {}).get("SECRET")
                want = rows.get("OUT-SECRET", {}).get(rank, {}).get("SECRET")
                t.ok(secret == want and want not in (None, "unset"),
                     "rank %d: %s %s: DIST_BIND_SECRET arrives (%s)" % (rank, mode, what, "same" if secret == want
                                                                       else "%r, outside %r" % (secret, want)))
        t.ok(out and all(row["CUDA_VISIBLE_DEVICES"] != IMAGE_ENV["CUDA_VISIBLE_DEVICES"] for row in out.values()),
             "%s: the image's CUDA_VISIBLE_DEVICES is not what the task has outside (the test can tell)" % mode)


def precedence(t, jobs):
    """Apptainer's own order, without dist-bind: the image's %environment
    beats a forwarded variable; APPTAINERENV_X beats the image; and with
    dist-bind, a twin the user exported wins over dist-bind's."""
    env = {"RANK": "5", "MASTER_PORT": "4242", "APPTAINERENV_MASTER_PORT": "4343"}
    rows, _ = jobs.srun("-N1 -n1", ["PLAIN=", "CLEAN=--cleanenv"], env=env)
    for tag, what in (("PLAIN", "exec"), ("CLEAN", "--cleanenv")):
        row = rows.get(tag, {}).get(0, {})
        t.eq(row.get("RANK"), IMAGE_ENV["RANK"], "no dist-bind, %s: the image's RANK wins over the task's 5" % what)
        t.eq(row.get("MASTER_PORT"), "4343", "no dist-bind, %s: APPTAINERENV_MASTER_PORT wins over the image's" % what)
        t.eq(row.get("CUDA_VISIBLE_DEVICES"), IMAGE_ENV["CUDA_VISIBLE_DEVICES"],
             "no dist-bind, %s: the image's CUDA_VISIBLE_DEVICES" % what)
    t.eq(rows.get("PLAIN", {}).get(0, {}).get("SLURM_PROCID"), "0",
         "no dist-bind, exec: a variable the image does not set passes from the task")
    rows, _ = jobs.srun("-N1 -n2 --gpus-per-task=1 --dist-bind", ["PLAIN=", "CLEAN=--cleanenv"],
                        env={"APPTAINERENV_MASTER_PORT": "4343"})
    for tag in ("PLAIN", "CLEAN"):
        for rank, row in sorted(rows.get(tag, {}).items()):
            outside = rows["OUT"][rank]
            t.eq(row.get("MASTER_PORT"), "4343", "rank %d, %s: a twin the user exported wins inside" % (rank, tag))
            t.eq(row.get("RANK"), outside.get("RANK"), "rank %d, %s: the other twins are dist-bind's" % (rank, tag))
    t.ok(all(r.get("MASTER_PORT") not in (None, "4343") for r in rows.get("OUT", {}).values()),
         "outside the container, MASTER_PORT is dist-bind's")


def gpus(t, jobs):
    """On a lab whose fake GPUs are the node's /dev/nvidiaN (lab.sh
    --gpu-uuids), each task's probe inside runs in / and so tries those:
    plain exec shows the node's /dev, `--contain` a /dev without GPUs, and
    `--contain --nv` binds every /dev/nvidia* of the node into it.  The
    device cgroup still decides which the task can open; every GPU a task is
    shown must be one it can open inside."""
    for mode in ("rank", "isolate"):
        base, _ = jobs.srun(SEED, [])
        specs = ["PLAIN=", "NV=--contain --nv"] + (["BARE=--contain"] if mode == "rank" else [])
        rows, r = jobs.srun(SEED + " --dist-bind=" + mode, specs, env={"CD_TO": "cd /"})
        out = rows.get("OUT", {})
        t.eq(sorted(out), list(range(5)), "%s: every task ran the probe outside" % mode)
        for rank, row in sorted(rows.get("BARE", {}).items()):
            t.eq(row.get("OPEN_"), "", "rank %d: --contain without --nv: no GPU in the container's /dev" % rank)
        for tag, what in (("PLAIN", "exec"), ("NV", "--contain --nv")):
            got = rows.get(tag, {})
            same(t, got, out, [f for f in FIELDS if f != "ALLOC_"], "%s %s, GPUs it can open included" % (mode, what))
            inside = {k: dict(v, ALLOC_=out[k]["ALLOC_"]) for k, v in got.items() if k in out}
            check_mapping(t, base.get("OUT", {}), inside, mode)
        if "Could not find any nv files" in r.stderr:
            print("  (apptainer --nv: no driver libraries or tools on the node: only its /dev/nvidia* bound)")


def without_proc_overmount(lab):
    """fake_nvidia.sh's /proc/driver is a tmpfs over procfs, which a user
    namespace may not mount a new proc beside (the kernel's
    mount_too_revealing); Apptainer does, to unpack a SIF without
    squashfuse.  Slurm read it when slurmd started: a real node has no
    such mount, so it goes."""
    for n in ("node1", "node2"):
        holder = open(os.path.join(lab.dir, n, "holder.pid")).read().strip()
        subprocess.run(["nsenter", "-m", "-t", holder, "umount", "/proc/driver"], check=True)


def main():
    t = Test("t_apptainer")
    labkit.require_lab()
    if not shutil.which("apptainer"):
        skip("apptainer is not installed (Debian sid's root has it)")
    if not in_throwaway_root():
        skip("this test adds a job user to /etc/passwd: it runs only in a release root's throw-away overlay")
    sif = image()
    home = "/tmp/dist-bind-job-home"
    add_job_user(home)
    try:
        with Lab() as lab:
            jobs = Jobs(lab, sif, home)
            modes(t, jobs)
            precedence(t, jobs)
        with Lab(gpu_uuids=True) as lab:
            without_proc_overmount(lab)
            gpus(t, Jobs(lab, sif, home))
    finally:
        shutil.rmtree(home, ignore_errors=True)
    t.done()


if __name__ == "__main__":
    main()
