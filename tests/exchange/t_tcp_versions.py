#!/usr/bin/python3
"""Ranks of the previous release and of this one in one step over TCP, as
during a rolling package upgrade.

The previous release is the last commit of this repository's history whose
VERSION says 0.1.0; its exchange worker (and the libdistbind it links) is
built from that commit into build/prev-0.1.0/ once and kept there.  0.1.0
speaks the TCP bootstrap's protocol 4, as this release does (the same
framing, Hello, proofs and messages: lib/runtime/bootstrap/tcp/wire.hh), so
a step whose ranks run either library sets up and runs its collectives,
with rank 0 of either release, with or without the step's secret; a
failure on a rank of one release (a size mismatch) reaches the ranks of
the other as the same error.  DIST_BIND_TIMEOUT is short here only as a
fence: a rank that hung would end with DISTBIND_ERR_TIMEOUT, which fails
the checks on the status.

A later release that speaks another protocol is played by this tree's
test build of the worker (build/rt-tests/xchg_worker_san reads
DIST_BIND_TEST_TCP_RELEASE="5 0.3.0"): mixed with this release's ranks
either way, with or without the secret, every rank fails with one message
naming both releases and saying that every node of a step needs the same
libdistbind, not with a timeout (DIST_BIND_TIMEOUT=20 is the fence)."""
import ctypes
import os
import socket
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from xkit import ROOT, WORKER, Result, Test, all_say, all_status, free_port, need_worker, rank_env, run_ranks, skip  # noqa: E402

SAN_WORKER = WORKER + "_san"

from previouskit import PREV, build_previous  # noqa: E402


def version_of(lib):
    so = ctypes.CDLL(lib)
    so.distbind_version.restype = ctypes.c_char_p
    return so.distbind_version().decode()


need_worker()
old_top = build_previous("build/rt-tests/xchg_worker")
old_worker = os.path.join(old_top, "build", "rt-tests", "xchg_worker")
t = Test("tcp-versions")
this = open(os.path.join(ROOT, "VERSION")).read().strip()
t.ok(version_of(os.path.join(old_top, "build", "libdistbind.so")) == PREV,
     "the worker built from the history links libdistbind %s" % PREV)
t.ok(version_of(os.path.join(ROOT, "build", "libdistbind.so")) == this,
     "this tree's worker links libdistbind %s" % this)

world = 7
fence = {"DIST_BIND_TIMEOUT": "10", "DIST_BIND_TCP_FANOUT": "2"}
mixes = (("rank 0 and ranks 2, 4 of %s" % PREV, {0, 2, 4}),
         ("ranks 1, 3, 5 of %s under rank 0 of %s" % (PREV, this), {1, 3, 5}),
         ("rank 6 alone of %s" % PREV, {6}))
for secret in ("with the secret", "without (DIST_BIND_TCP_INSECURE=1)"):
    env = dict(fence)
    if secret.startswith("without"):
        env.update(DIST_BIND_TCP_INSECURE="1", DIST_BIND_SECRET=None)
    for what, old in mixes:
        res = run_ranks(world, ["roundtrip"], env=env, bound=60,
                        worker=lambda r, old=old: old_worker if r in old else WORKER)
        all_status(t, res, "OK", "%s, %s" % (what, secret))

# A failure on one release's rank reaches the other's ranks as the same error.
for what, old in mixes[:2]:
    res = run_ranks(world, ["badlen"], env=fence, bound=60, worker=lambda r, old=old: old_worker if r in old else WORKER)
    all_status(t, res, "DISTBIND_ERR_PEER", "%s, rank 1 passes another size" % what)
    all_say(t, res, "(every rank must pass the same size)", "%s, rank 1 passes another size" % what)

# A later release (protocol 5), played by the test build.
need_worker(SAN_WORKER)
later = {"DIST_BIND_TEST_TCP_RELEASE": "5 0.3.0"}
fence = {"DIST_BIND_TIMEOUT": "20"}
for secret in ("with the secret", "without (DIST_BIND_TCP_INSECURE=1)"):
    env = dict(fence)
    if secret.startswith("without"):
        env.update(DIST_BIND_TCP_INSECURE="1", DIST_BIND_SECRET=None)
    for what, new in (("rank 0 of 0.3.0, ranks 1-3 of %s" % this, {0}),
                      ("rank 3 of 0.3.0 under rank 0 of %s" % this, {3})):
        res = run_ranks(4, ["roundtrip"], env=env, bound=60, gate=True,
                        worker=lambda r, new=new: SAN_WORKER if r in new else WORKER,
                        per_rank=lambda r, new=new: later if r in new else {})
        what = "%s, %s" % (what, secret)
        all_status(t, res, "DISTBIND_ERR_PEER", what)
        all_say(t, res, "libdistbind 0.3.0 (protocol 5)", what)
        all_say(t, res, "(protocol 4)", what)
        mine = {r: x for r, x in res.items() if r not in new}
        all_say(t, mine, "libdistbind %s (protocol 4)" % this, what + ", ranks of " + this)
        all_say(t, res, "every node of a step needs the same libdistbind", what)


def frame(kind, body):
    return struct.pack("<IHHII", 0x32584244, kind, 0, 0, len(body)) + body


def stranger_of_another_release(t):
    """A stranger that opens with a Hello of protocol 5 gets rank 0's
    Mismatch and, with a proof that does not hold, is dropped: the step
    goes on and ends well."""
    world, port = 2, free_port()
    p0 = subprocess.Popen([WORKER, "roundtrip"], env=rank_env(0, world, port, {"DIST_BIND_TIMEOUT": "20"}),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    s, end = None, time.monotonic() + 10
    while s is None and time.monotonic() < end:
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
        except OSError:
            time.sleep(0.05)
    t.ok(s is not None, "a stranger reaches rank 0's port")
    kind = None
    if s:
        version = b"9.9.9"
        hello = struct.pack("<II", 5, len(version)) + version + os.urandom(60)
        s.sendall(frame(1, hello))
        try:
            head = s.recv(16)
            kind = struct.unpack("<IHHII", head)[1] if len(head) == 16 else None
            s.sendall(frame(3, bytes(32)))  # a proof that does not hold
        except OSError:
            pass
        s.close()
    t.ok(kind == 0x7fff, "the stranger's Hello of protocol 5 is answered with a Mismatch (got %r)" % kind)
    p1 = subprocess.Popen([WORKER, "roundtrip"], env=rank_env(1, world, port, {"DIST_BIND_TIMEOUT": "20"}),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    res = {}
    for r, p in ((0, p0), (1, p1)):
        out, err = p.communicate(timeout=60)
        res[r] = Result(p.returncode, out, err)
    all_status(t, res, "OK", "a stranger of another protocol, then rank 1")


stranger_of_another_release(t)
t.done()
