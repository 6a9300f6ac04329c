#!/usr/bin/python3
"""Faults of the TCP exchange, with real processes: each must end every
rank with one clear error (the right status, naming the culprit), never a
hang.  No timing thresholds: a fault that is not detected shows up as the
wrong status or message, not as slowness."""
import os
import select
import socket
import struct
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from xkit import WORKER, Result, Test, all_say, all_status, free_port, need_worker, rank_env, run_ranks  # noqa: E402

SAN_WORKER = WORKER + "_san"


def faults(t, worker, tag):
    run = lambda *a, **k: run_ranks(*a, worker=worker, **k)  # noqa: E731
    fast = {"DIST_BIND_TIMEOUT": "3"}

    # A rank that never starts: every other rank names it.
    res = run(8, ["roundtrip"], skip={5}, env=fast)
    what = tag + "rank 5 never starts"
    t.eq(len(res), 7, what + ": 7 ranks reported")
    all_status(t, res, "DISTBIND_ERR_TIMEOUT", what)
    all_say(t, res, "rank 5 did not reach rank 0", what)

    # A rank that starts but never reaches a barrier (a leaf, then an inner
    # rank whose subtree cannot report): rank 0 names it to everyone.
    # With fan-out 2 and 12 ranks, rank 2's subtree is 5, 6 and 11.
    binary = dict(fast, DIST_BIND_TCP_FANOUT="2")
    res = run(12, ["late", "5", "9"], env=binary)
    what = tag + "leaf rank 9 never reaches the barrier"
    all_status(t, res, "DISTBIND_ERR_TIMEOUT", what)
    all_say(t, res, "barrier #2 failed: rank 9 did not arrive within 3 s (seen by rank 0)", what)

    res = run(12, ["late", "5", "2"], env=binary)
    what = tag + "inner rank 2 never reaches the barrier"
    all_status(t, res, "DISTBIND_ERR_TIMEOUT", what)
    outside = {r: x for r, x in res.items() if r not in (5, 6, 11)}
    all_say(t, outside, "rank 2 did not arrive within 3 s (ranks 5, 6, 11, below them in the tree, could not report)",
            what + " (outside its subtree)")
    below = {r: x for r, x in res.items() if r in (5, 6, 11)}
    all_say(t, below, "no answer from rank 0", what + " (below it: cut off, they say so)")

    # Rank 0 exits right after set-up: the others learn it from the tree,
    # not from a timeout (the timeout is long on purpose).
    res = run(16, ["root-exits"], env={"DIST_BIND_TIMEOUT": "120"})
    others = {r: x for r, x in res.items() if r != 0}
    what = tag + "rank 0 exits early"
    all_status(t, others, "DISTBIND_ERR_PEER", what)
    all_say(t, others, "rank 0 closed its connection", what)

    # One rank disagrees on the world size: all hear it from rank 0.
    res = run(6, ["roundtrip"], env=fast, per_rank=lambda r: {"WORLD_SIZE": "7", "LOCAL_WORLD_SIZE": "7"} if r == 4 else None)
    what = tag + "rank 4 has WORLD_SIZE=7"
    all_status(t, res, "DISTBIND_ERR_PEER", what)
    all_say(t, res, "has world size 7 but rank 0 has 6", what)

    # Two processes claim the same rank.
    res = run(6, ["roundtrip"], env=fast, per_rank=lambda r: {"RANK": "2", "LOCAL_RANK": "2"} if r == 3 else None)
    what = tag + "two processes say RANK=2"
    all_status(t, res, "DISTBIND_ERR_PEER", what)
    all_say(t, res, "rank 2 registered twice", what)

    # A rank of another step hits this step's rank 0.  Its secret is that
    # step's: it cannot prove itself, so it changes nothing here (rank 0
    # drops it and says so when its own rank 3 never comes), and it hears
    # nothing from this step's rank 0 but learns it is not its own.
    port = free_port()
    res = run(5, ["roundtrip"], env=fast, port=port,
              per_rank=lambda r: {"DIST_BIND_STEP_KEY": "other.1", "DIST_BIND_SECRET": "ab" * 32} if r == 3 else None)
    what = tag + "rank 3 belongs to another step"
    t.eq(res[3].status, "DISTBIND_ERR_TIMEOUT", what + ": the stray rank gives up")
    t.ok("did not authenticate as this step's rank 0" in res[3].msg and "port %d" % port in res[3].msg,
         what + ": and says the port's owner did not authenticate: %s" % res[3].msg)
    rest = {r: x for r, x in res.items() if r != 3}
    all_status(t, rest, "DISTBIND_ERR_TIMEOUT", what + " (the step's own rank 3 is missing)")
    all_say(t, rest, "rank 3 did not reach rank 0", what)
    all_say(t, rest, "did not prove they know this step's secret were dropped", what)
    t.ok(not any("other.1" in x.msg or "test.%d" % port in x.msg for x in res.values()),
         what + ": no step's key is shown to the other")

    # Two steps that share a secret (a user's own DIST_BIND_SECRET) and a
    # port: the stray rank proves itself, so its step is checked, and named.
    port = free_port()
    res = run(5, ["roundtrip"], env=fast, port=port,
              per_rank=lambda r: {"DIST_BIND_STEP_KEY": "other.1"} if r == 3 else None)
    what = tag + "rank 3 of another step with the same secret"
    all_status(t, res, "DISTBIND_ERR_PEER", what)
    all_say(t, res, "rank 3 (", what)
    all_say(t, res, "is in step 'other.1' but rank 0 in step 'test.%d'" % port, what)

    # MASTER_PORT is busy with something that is not a dist-bind rank 0.
    port = free_port()
    squatter = socket.socket()
    squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    squatter.bind(("0.0.0.0", port))
    squatter.listen(64)
    try:
        res = run(4, ["roundtrip"], env=fast, port=port)
    finally:
        squatter.close()
    what = tag + "MASTER_PORT held by another program"
    t.eq(res[0].status, "DISTBIND_ERR_SYSTEM", what + ": rank 0 cannot listen")
    t.ok("cannot listen on 127.0.0.1:%d (MASTER_ADDR=127.0.0.1, MASTER_PORT=%d): the port is already in use" % (port, port)
         in res[0].msg, what + ": %s" % res[0].msg)
    rest = {r: x for r, x in res.items() if r != 0}
    all_status(t, rest, "DISTBIND_ERR_TIMEOUT", what + ": the others")
    all_say(t, rest, "the process listening on port %d did not authenticate as this step's rank 0" % port, what)

    # Ranks that pass different sizes to one allgather.
    res = run(5, ["badlen"], env=fast)
    what = tag + "rank 1 passes 48 bytes, the rest 32"
    all_status(t, res, "DISTBIND_ERR_PEER", what)
    all_say(t, res, "rank 1 passed 48 bytes but rank 0 passed 32", what)

    # A broadcast over DISTBIND_MAX_EXCHANGE_BYTES: refused on every rank
    # (ARG, naming the limit), and the barrier after it still works.
    res = run(3, ["toobig"], env=fast)
    what = tag + "a broadcast of 1 GiB + 1 byte"
    all_status(t, res, "OK", what + ": refused, then the barrier")
    t.ok(all("limit of 1073741824 bytes" in x.err for x in res.values()), what + ": every rank's message names the limit")


def huge_hello(t):
    """A connection to MASTER_PORT that is not a rank sends a registration
    header claiming a 1 GiB body.  Rank 0 runs with 256 MiB of address
    space: had it allocated what the header claims, it would fail (out of
    memory); refusing the header, it takes the real ranks in as usual."""
    world, port = 4, free_port()
    env = dict(rank_env(0, world, port), DIST_BIND_TIMEOUT="20")
    root = subprocess.Popen(["prlimit", "--as=%d" % (256 << 20), WORKER, "roundtrip"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    rogue = None
    try:
        for _ in range(200):  # until rank 0 listens
            try:
                rogue = socket.create_connection(("127.0.0.1", port))
                break
            except ConnectionRefusedError:
                time.sleep(0.05)
        t.ok(rogue is not None, "huge Hello: connected to rank 0's MASTER_PORT")
        if rogue is None:
            return
        # magic "DBX2", type 1 (Hello), op 0, seq 0, body length 1 GiB; no body.
        rogue.sendall(struct.pack("<IHHII", 0x32584244, 1, 0, 0, 1 << 30))
        rogue.settimeout(30)
        got, gone = b"", False
        try:
            while True:  # nothing (a challenge answers a whole Hello), then it hangs up
                chunk = rogue.recv(4096)
                if not chunk:
                    gone = True
                    break
                got += chunk
        except ConnectionResetError:
            gone = True
        except socket.timeout:
            pass
        t.ok(gone, "huge Hello: rank 0 hangs up on the connection")
        t.eq(len(got), 0, "huge Hello: it got nothing from rank 0")
        res = run_ranks(world, ["roundtrip"], skip={0}, port=port, env={"DIST_BIND_TIMEOUT": "20"})
        out, err = root.communicate(timeout=60)
        res[0] = Result(root.returncode, out, err)
        all_status(t, res, "OK", "huge Hello, then the real ranks")
    finally:
        if rogue:
            rogue.close()
        if root.poll() is None:
            root.kill()
            root.communicate()


def read_frame(c):
    """One whole frame from socket c (header and body), or b"" at its end."""
    buf = b""
    while len(buf) < 16 or len(buf) < 16 + struct.unpack_from("<I", buf, 12)[0]:
        chunk = c.recv(65536)
        if not chunk:
            return b""
        buf += chunk
    return buf


def dropped_registrations(t):
    """Rank 0 drops a connection after its challenge, before it has read the
    rank's proof and registration (it does so to the oldest when more
    connections wait than it holds unproven: 32 ranks of 1024 on the lab).
    The rank must notice that its registration was not answered and
    register again.  Ranks 1-4 reach rank 0 through a relay that passes
    their Hello and rank 0's challenge and proof, then, on each rank's first
    connection, takes in its proof and registration and closes both ends."""
    world, port, relay_port = 5, free_port(), free_port()
    lis = socket.socket()
    lis.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lis.bind(("127.0.0.1", relay_port))
    lis.listen(64)
    lis.settimeout(0.2)
    halt, lock, cut, seen, threads = threading.Event(), threading.Lock(), [], [], []

    def relay(c):
        up = None
        try:
            hello = read_frame(c)
            if len(hello) < 16 + 9:
                return
            rank = struct.unpack_from("<I", hello, 16 + 5)[0]  # Hello: version u32, mode u8, client u32
            up = socket.create_connection(("127.0.0.1", port), timeout=5)
            up.sendall(hello)
            with lock:
                seen.append(rank)
                first = rank not in cut
                if first:
                    cut.append(rank)
            while not halt.is_set():
                ready, _, _ = select.select([c, up], [], [], 0.2)
                for src in ready:
                    data = src.recv(65536)
                    if not data or (first and src is c):
                        return  # closed; or this rank's proof and registration, which rank 0 never gets
                    (up if src is c else c).sendall(data)
        except OSError:
            pass
        finally:
            c.close()
            if up:
                up.close()

    def serve():
        while not halt.is_set():
            try:
                c, _ = lis.accept()
            except OSError:
                continue
            th = threading.Thread(target=relay, args=(c,), daemon=True)
            th.start()
            threads.append(th)

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    try:
        res = run_ranks(world, ["roundtrip"], port=port, env={"DIST_BIND_TIMEOUT": "20", "DIST_BIND_DEBUG": "1"},
                        per_rank=lambda r: {"MASTER_PORT": str(relay_port)} if r else None)
    finally:
        halt.set()
        server.join(5)
        for th in threads:
            th.join(5)
        lis.close()
    what = "rank 0 drops each rank's first registration after its challenge"
    t.eq(sorted(cut), [1, 2, 3, 4], what + ": the relay cut one connection of each rank")
    all_status(t, res, "OK", what + ": every rank registers again and the step runs")
    again = [r for r in range(1, world) if "registration unanswered" in res[r].err]
    t.eq(again, [1, 2, 3, 4], what + ": each rank saw its registration go unanswered (debug)")


need_worker()
t = Test("tcp-faults")
faults(t, WORKER, "")
huge_hello(t)
dropped_registrations(t)

# The same under AddressSanitizer/UBSan (a few of them), when built.
if os.path.exists(SAN_WORKER):
    res = run_ranks(16, ["roundtrip"], worker=SAN_WORKER)
    all_status(t, res, "OK", "[asan] 16 ranks")
    res = run_ranks(8, ["late", "5", "6"], worker=SAN_WORKER, env={"DIST_BIND_TIMEOUT": "3", "DIST_BIND_TCP_FANOUT": "2"})
    all_status(t, res, "DISTBIND_ERR_TIMEOUT", "[asan] rank 6 late")
    res = run_ranks(6, ["root-exits"], worker=SAN_WORKER, env={"DIST_BIND_TIMEOUT": "120"})
    all_status(t, {r: x for r, x in res.items() if r}, "DISTBIND_ERR_PEER", "[asan] rank 0 exits early")
    res = run_ranks(6, ["roundtrip"], worker=SAN_WORKER, env={"DIST_BIND_TIMEOUT": "3"},
                    per_rank=lambda r: {"WORLD_SIZE": "9", "LOCAL_WORLD_SIZE": "9"} if r == 2 else None)
    all_status(t, res, "DISTBIND_ERR_PEER", "[asan] wrong world size")
    t.ok(not any("ERROR: AddressSanitizer" in x.err or "runtime error:" in x.err for x in res.values()),
         "[asan] no sanitizer reports")
else:
    t.ok(False, SAN_WORKER + " is built by make check")
t.done()
