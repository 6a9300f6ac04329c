"""Run N real worker processes (build/rt-tests/xchg_worker) on this host as
the ranks of one step, over the TCP bootstrap on loopback.

    res = run_ranks(8, ["roundtrip"])            # {rank: Result}
    res = run_ranks(8, ["roundtrip"], skip={5})  # rank 5 never starts

Each Result has .rc, .out (its stdout line), .err (stderr) and .status
("OK", "DISTBIND_ERR_TIMEOUT", ...).  Processes are ours, started and, if
they outlive the test's bound, killed by pid.
"""
import os
import random
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
WORKER = os.path.join(ROOT, "build", "rt-tests", "xchg_worker")
sys.path.insert(0, os.path.join(ROOT, "tests", "lab", "kit"))
from labkit import Test, skip  # noqa: E402  (shared assertion helper)


def need_worker(path=WORKER):
    if not os.path.exists(path):
        skip(path + " not built (make check builds it)")


def free_port():
    """A port nothing listens on right now, below the kernel's ephemeral
    range: the ranks' own listeners take ephemeral ports, and one of those
    must not land on MASTER_PORT before rank 0 binds it (as a hashed or
    reserved MASTER_PORT never does on a cluster)."""
    lo = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
    while True:
        port = random.randrange(10000, max(10001, lo))
        s = socket.socket()
        try:
            s.bind(("127.0.0.1", port))
            return port
        except OSError:
            continue
        finally:
            s.close()


class Result:
    def __init__(self, rc, out, err):
        self.rc, self.out, self.err = rc, out.strip(), err
        first = self.out.split(" ", 2)
        self.status = first[0] if first[0] != "ERR" else (first[1] if len(first) > 1 else "ERR")
        self.msg = first[2] if first[0] == "ERR" and len(first) > 2 else self.out

    def field(self, name):
        for kv in self.out.split():
            k, _, v = kv.partition("=")
            if k == name:
                return v
        return None

    def __repr__(self):
        return "rc=%d %r" % (self.rc, self.out[:300])


# The step's secret, as srun --dist-bind would draw it (one per test run;
# the port and step key tell runs apart).
SECRET = os.urandom(32).hex()


def rank_env(rank, world, port, extra=None):
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"),
           "RANK": str(rank), "WORLD_SIZE": str(world), "LOCAL_RANK": str(rank),
           "LOCAL_WORLD_SIZE": str(world), "NODE_RANK": "0",
           "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port),
           "DIST_BIND_TIMEOUT": "20", "DIST_BIND_STEP_KEY": "test.%d" % port,
           "DIST_BIND_SECRET": SECRET}
    if extra:
        env.update(extra)
    return {k: v for k, v in env.items() if v is not None}  # None: unset


def run_ranks(world, args, skip=(), env=None, per_rank=None, worker=WORKER, port=None, bound=120, gate=False):
    """Start ranks 0..world-1 (but those in skip), wait for all, return
    {rank: Result}.  env: extra variables for every rank; per_rank(rank) ->
    extra variables for one rank (applied last); a value None unsets one.
    gate: every rank waits until all are started (XCHG_START_FD), so they
    begin their set-up together.  worker: the program, or worker(rank) ->
    the program of that rank (ranks of another release)."""
    port = port or free_port()
    procs = {}
    fds = ()
    if gate:
        rfd, wfd = os.pipe()
        fds = (rfd,)
        env = dict(env or {}, XCHG_START_FD=str(rfd))
    for r in range(world):
        if r in skip:
            continue
        e = rank_env(r, world, port, env)
        if per_rank:
            e.update(per_rank(r) or {})
            e = {k: v for k, v in e.items() if v is not None}
        procs[r] = subprocess.Popen([worker(r) if callable(worker) else worker] + list(args), env=e, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True, pass_fds=fds)
    if gate:
        os.close(rfd)
        os.close(wfd)  # every rank reads end-of-file at once
    return collect(procs, bound)


def collect(procs, bound):
    """Wait for every process, at most `bound` seconds from now, killing
    what is left; {rank: Result}."""
    res = {}
    end = time.monotonic() + bound
    for r, p in procs.items():
        try:
            out, err = p.communicate(timeout=max(1, end - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
            err += "\n(killed: still running after %ds)" % bound
        res[r] = Result(p.returncode, out, err)
    return res


def all_status(t, res, status, what):
    bad = {r: x for r, x in res.items() if x.status != status}
    t.ok(not bad, "%s: every rank ends with %s%s" % (what, status, "" if not bad else "; not: %r" % dict(list(bad.items())[:3])))


def all_say(t, res, text, what):
    bad = {r: x for r, x in res.items() if text not in x.msg}
    t.ok(not bad, "%s: every rank's message says %r%s" % (what, text, "" if not bad else "; not: %r" % dict(list(bad.items())[:3])))
