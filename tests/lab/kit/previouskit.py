"""The previous release (0.1.0), built from this repository's own history:
the last commit whose VERSION says it, extracted with git archive into
build/prev-0.1.0/ once and built there (make TARGET), kept between runs.
Shared by the tests that mix releases in one step: libdistbind's TCP
bootstrap (tests/exchange/t_tcp_versions.py) and the plugin on srun's and
on the nodes' side (tests/lab/t_mixed_releases.py)."""
import os
import subprocess

from labkit import ROOT, skip

PREV = "0.1.0"


def git(*args):
    return subprocess.run(["git", "-C", ROOT] + list(args), capture_output=True, text=True)


def last_commit_of(version):
    """The last commit whose VERSION says `version`: the parent of the first
    commit after it that changed VERSION to something else."""
    log = git("log", "--format=%H", "--", "VERSION")
    if log.returncode != 0:
        skip("no git history here (%s)" % log.stderr.strip())
    for c in log.stdout.split():
        now, before = git("show", c + ":VERSION"), git("show", c + "^:VERSION")
        if now.stdout.strip() != version and before.returncode == 0 and before.stdout.strip() == version:
            return git("rev-parse", c + "^").stdout.strip()
    skip("no commit in this history has VERSION %s" % version)


def build_previous(*targets):
    """The previous release's tree with `targets` (paths relative to its
    top, e.g. "build/spank_dist_bind.so") built: its top directory."""
    commit = last_commit_of(PREV)
    top = os.path.join(ROOT, "build", "prev-" + PREV)
    stamp = os.path.join(top, ".commit")
    if not (os.path.exists(stamp) and open(stamp).read().strip() == commit):
        subprocess.run(["rm", "-rf", top], check=True)
        os.makedirs(top)
        archive = subprocess.Popen(["git", "-C", ROOT, "archive", commit], stdout=subprocess.PIPE)
        subprocess.run(["tar", "-x", "-C", top], stdin=archive.stdout, check=True)
        if archive.wait() != 0:
            skip("git archive %s failed" % commit)
        with open(stamp, "w") as f:
            f.write(commit + "\n")
    if all(os.path.exists(os.path.join(top, t)) for t in targets):
        return top
    # Not the jobserver of the make that runs the tests.
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    made = subprocess.run(["make", "-C", top, "-j2"] + list(targets), env=env, capture_output=True, text=True)
    if made.returncode != 0:
        print(made.stdout[-3000:] + made.stderr[-3000:])
        raise SystemExit("FAIL building %s of dist-bind %s from %s" % (" ".join(targets), PREV, commit))
    return top
