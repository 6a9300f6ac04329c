"""Lab and package tests on another Slurm release.

A lab configuration that names a Slurm release (DIST_BIND_LAB_CONFIG="24.11"
or "24.11,cgroup") runs the whole test inside that release's Debian root
(tests/lab/kit/release.sh): its slurmctld, slurmd, srun and Python, with the
plugin, libdistbind and dist-bind-check built against its headers into
build/slurm-RELEASE/.  labkit calls enter() when it is imported, so a test
needs nothing of its own for it: the test script is started again inside
the root, where DIST_BIND_IN_RELEASE names the release.
"""
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
RELEASE_SH = os.path.join(HERE, "release.sh")
RELEASE_WORD = re.compile(r"^[0-9]{2}\.[0-9]{2}$")


def release_of(words):
    """The release a configuration names (None: this machine's own)."""
    rels = sorted(w for w in words if RELEASE_WORD.match(w))
    if len(rels) > 1:
        raise SystemExit("DIST_BIND_LAB_CONFIG names more than one Slurm release: %s" % rels)
    return rels[0] if rels else None


def native():
    """The Slurm release installed where this runs (e.g. "22.05")."""
    inside = os.environ.get("DIST_BIND_IN_RELEASE")
    if inside:
        return inside
    r = subprocess.run([RELEASE_SH, "native"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    return r.stdout.strip() or None


def build_dir(release):
    return os.path.join(ROOT, "build", "slurm-" + release)


def enter(words):
    """Start this test again inside the root of the release `words` names,
    after building into build/slurm-RELEASE/ there; return when it is this
    machine's own release or already inside.  With "cgroup2", inside the
    cgroup v2 guest of that release (or of this machine's) instead."""
    if "cgroup2" in words:
        return enter_guest(words)
    rel = release_of(words)
    if not rel or os.environ.get("DIST_BIND_IN_RELEASE") == rel or rel == native():
        return
    if os.geteuid() != 0:
        print("SKIP: the Slurm %s root needs root" % rel)
        sys.exit(77)
    print("(Slurm %s: building in its root)" % rel, flush=True)
    r = subprocess.run([RELEASE_SH, "build", rel], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        print(r.stdout[-4000:])
        raise SystemExit("building for Slurm %s failed (exit status %d)" % (rel, r.returncode))
    env = dict(os.environ, DIST_BIND_BUILD=build_dir(rel), PYTHONUNBUFFERED="1")
    sys.stdout.flush()
    os.execve(RELEASE_SH, [RELEASE_SH, "run", rel, "/usr/bin/python3", os.path.abspath(sys.argv[0])] + sys.argv[1:],
              env)


def enter_guest(words):
    """Run this test again inside the cgroup v2 guest of the release
    `words` names, or of this machine's (tests/lab/kit/guest.sh boots it for
    this one test; tests/run.sh runs all of a release's cgroup2 tests in one
    boot); return when already inside."""
    if os.environ.get("DIST_BIND_IN_GUEST"):
        return
    rel = release_of(words) or native()
    if rel != native():
        if os.geteuid() != 0:
            print("SKIP: the Slurm %s root needs root" % rel)
            sys.exit(77)
        r = subprocess.run([RELEASE_SH, "build", rel], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if r.returncode != 0:
            print(r.stdout[-4000:])
            raise SystemExit("building for Slurm %s failed (exit status %d)" % (rel, r.returncode))
    print("(Slurm %s: in the cgroup v2 guest)" % rel, flush=True)
    guest = os.path.join(HERE, "guest.sh")
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    sys.stdout.flush()
    os.execve(guest, [guest, "run", rel, "env", "DIST_BIND_LAB_CONFIG=" + os.environ.get("DIST_BIND_LAB_CONFIG", ""),
                      "/usr/bin/python3", os.path.abspath(sys.argv[0])] + sys.argv[1:], env)
