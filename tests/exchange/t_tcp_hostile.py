#!/usr/bin/python3
"""Strangers against the TCP bootstrap, on loopback, bounded in connections
and time: a local user who can reach rank 0's port (and, by reading
/proc/net/tcp, every rank's listener) but does not know the step's secret.

  impersonation   a stranger keeps registering as rank 3 before and while
                  the real one does
  DoS Hello       the Hello that used to abort every rank (world 999)
  key probing     200 well-formed proofs made with wrong keys; and, as the
                  control that the probes were well-formed, one made with
                  the right key is taken in
  oversized Up    a 1 GiB Up (and a forged Abort) at every listener, rank 0
                  held to 256 MiB of address space
  idle flood      300 idle or half-sent connections to rank 0, more than it
                  holds unproven (256)
  port holder     a process on MASTER_PORT before rank 0: silent, chatty
                  (terminal escapes), or answering with a forged challenge
  absent rank     the real rank 3 never comes while a stranger keeps trying
                  in its place

Every time: the real ranks finish correctly (the roundtrip checks every
byte) or, where the step cannot run, fail with the right clear error; every
rank ends within its timeout (processes past timeout + slack are killed
and reported); a stranger receives nothing but rank 0's side of the
handshake (its challenge, its proof over the stranger's own Hello, and the
Welcome: the tree's fan-out), and a process posing as rank 0 nothing but
Hellos; the sanitized worker reports no error or leak."""
import hashlib
import hmac
import os
import socket
import struct
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from xkit import SECRET, WORKER, Test, collect, free_port, need_worker, rank_env  # noqa: E402

SAN_WORKER = WORKER + "_san"
MAGIC = 0x32584244
HELLO, CHALLENGE, PROOF, REGISTER, WELCOME, REJECT, TREE, ACK, ABORT, UP = range(1, 11)
LABEL = b"dist-bind tcp bootstrap v2 handshake\0"
HANDSHAKE = {CHALLENGE, ACK, WELCOME}  # what rank 0 answers any Hello with
TIMEOUT = 8          # DIST_BIND_TIMEOUT of the real ranks
SLACK = 20           # past TIMEOUT + SLACK a rank has ignored its timeout: killed, reported


def frame(t, body=b"", op=0, seq=0, length=None):
    return struct.pack("<IHHII", MAGIC, t, op, seq, len(body) if length is None else length) + body


def hello_body(client, server, world, step, nonce=b"\0" * 32):
    s = step.encode()
    return struct.pack("<IBIII", 4, 1, client, server, world) + struct.pack("<I", len(s)) + s + nonce


def mac(key, role, hbody, server_nonce):
    return hmac.new(key, LABEL + role + hbody + server_nonce, hashlib.sha256).digest()


def frames(data):
    """(type, body) of every whole frame in data."""
    out, at = [], 0
    while at + 16 <= len(data):
        magic, t, _, _, n = struct.unpack_from("<IHHII", data, at)
        if magic != MAGIC:
            out.append((-1, data[at:]))
            break
        out.append((t, data[at + 16:at + 16 + n]))
        at += 16 + n
    return out


def read_frame(sock, limit=1 << 16):
    """One frame, or None when the peer closes or stays silent."""
    buf = b""
    try:
        while len(buf) < 16:
            got = sock.recv(16 - len(buf))
            if not got:
                return None
            buf += got
        n = struct.unpack_from("<I", buf, 12)[0]
        if n > limit:
            return None
        while len(buf) < 16 + n:
            got = sock.recv(16 + n - len(buf))
            if not got:
                return None
            buf += got
    except OSError:
        return None
    return buf


def read_handshake(sock):
    """Rank 0's answer to a Hello: its challenge, its proof and its Welcome
    (whatever of them comes)."""
    got = b""
    for _ in range(3):
        f = read_frame(sock)
        if not f:
            break
        got += f
    return got


class Stranger(threading.Thread):
    """Runs attack(self) in a loop until stopped; keeps every byte it got."""

    def __init__(self, attack, once=False):
        super().__init__(daemon=True)
        self.attack, self.once = attack, once
        self.got = bytearray()
        self.halt = threading.Event()
        self.tries = 0
        self.socks = []

    def run(self):
        while not self.halt.is_set():
            try:
                self.attack(self)
            except OSError:
                pass
            self.tries += 1
            if self.once:
                break
            time.sleep(0.02)

    def keep(self, data):
        if data:
            self.got += data

    def stop(self):
        self.halt.set()
        self.join(10)
        for s in self.socks:
            s.close()


def connect(port, timeout=2.0):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.settimeout(timeout)
    return s


def start(rank, world, port, delay=0.0, worker=WORKER, env=None, prefix=()):
    e = rank_env(rank, world, port, dict({"DIST_BIND_TIMEOUT": str(TIMEOUT)}, **(env or {})))
    cmd = list(prefix) + ["sh", "-c", 'sleep %s; exec "$0" roundtrip' % delay, worker]
    return subprocess.Popen(cmd, env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(procs):
    """Wait for every rank, at most TIMEOUT + SLACK from now; {rank: Result}."""
    return collect(procs, TIMEOUT + SLACK)


def listen_ports(pid):
    """The TCP ports process pid listens on (from /proc: what any local
    user can see of another's sockets)."""
    inodes = set()
    try:
        for fd in os.listdir("/proc/%d/fd" % pid):
            try:
                link = os.readlink("/proc/%d/fd/%s" % (pid, fd))
            except OSError:
                continue
            if link.startswith("socket:["):
                inodes.add(link[8:-1])
    except OSError:
        return []
    ports = []
    with open("/proc/net/tcp") as f:
        for line in f.readlines()[1:]:
            cols = line.split()
            if cols[3] == "0A" and cols[9] in inodes:
                ports.append(int(cols[1].split(":")[1], 16))
    return ports


def check(t, what, res, strangers, want="OK", say=None):
    bad = {r: x for r, x in res.items() if x.status != want}
    t.ok(not bad, "%s: every real rank ends with %s%s" % (what, want, "" if not bad else ": %r" % bad))
    if say:
        t.ok(all(say in x.msg for x in res.values()), "%s: and says %r (%s)" % (what, say, res[min(res)].msg[:300]))
    t.ok(not any("killed" in x.err for x in res.values()), what + ": no rank outlived its timeout")
    for s in strangers:
        kinds = {k for k, _ in frames(bytes(s.got))}
        t.ok(kinds <= HANDSHAKE, "%s: the stranger got nothing but rank 0's handshake (%d attempts, frame types %s)"
             % (what, s.tries, sorted(kinds)))
    t.ok(not any("\x1b" in x.out + x.err for x in res.values()), what + ": no terminal escape reached any rank's output")
    sanitized = [x for x in res.values() if "AddressSanitizer" in x.err or "LeakSanitizer" in x.err or "runtime error" in x.err]
    t.ok(not sanitized, what + ": no sanitizer report%s" % ("" if not sanitized else ": " + sanitized[0].err[-2000:]))


def step(port):
    return "test.%d" % port


def impersonation(t, worker):
    """A stranger registers as rank 3 over and over; the real rank 3 starts
    a second late."""
    world, port = 4, free_port()

    def attack(s):
        c = connect(port, 1.0)
        s.socks.append(c)
        hb = hello_body(3, 0, world, step(port), os.urandom(32))
        c.sendall(frame(HELLO, hb))
        s.keep(read_handshake(c))
        # A proof it cannot make, and the registration it wants read.
        c.sendall(frame(PROOF, os.urandom(32)) + frame(REGISTER, struct.pack("<IH", 0x0100007f, 9) + b"\0" * 8))
        c.settimeout(0.3)
        try:
            s.keep(c.recv(4096))
        except OSError:
            pass

    s = Stranger(attack)
    procs = {0: start(0, world, port, worker=worker)}
    time.sleep(0.3)
    s.start()
    procs.update({r: start(r, world, port, worker=worker) for r in (1, 2)})
    procs[3] = start(3, world, port, delay=1.0, worker=worker)
    res = finish(procs)
    s.stop()
    check(t, "impersonating rank 3", res, [s])
    t.ok(s.tries >= 3, "impersonating rank 3: the stranger kept trying (%d)" % s.tries)


def dos_hello(t, worker):
    world, port = 4, free_port()

    def attack(s):
        c = connect(port, 1.0)
        s.socks.append(c)
        c.sendall(frame(HELLO, hello_body(1, 0, 999, step(port))))
        s.keep(read_handshake(c))
        c.sendall(frame(PROOF, os.urandom(32)) + frame(REGISTER, struct.pack("<IH", 0x0100007f, 9) + bytes(40)))

    s = Stranger(attack)
    procs = {0: start(0, world, port, worker=worker)}
    time.sleep(0.3)
    s.start()
    time.sleep(0.3)
    procs.update({r: start(r, world, port, worker=worker) for r in range(1, world)})
    res = finish(procs)
    s.stop()
    check(t, "the DoS Hello (world 999)", res, [s])


def key_probing(t):
    """200 proofs with wrong keys are dropped, unanswered; the same code
    with the right key is taken in and answered with a Welcome (so the
    probes were well-formed)."""
    world, port = 2, free_port()
    procs = {0: start(0, world, port, env={"DIST_BIND_DEBUG": "1"})}
    time.sleep(0.3)

    def attempt(key):
        """A Hello; rank 0's handshake (checked: its proof is over this
        Hello and its challenge); then a proof made with key and a
        registration, as a rank would send them.  Returns the handshake,
        whether rank 0's proof held, and what came after the proof."""
        c = connect(port, 2.0)
        hb = hello_body(1, 0, world, step(port), os.urandom(32))
        c.sendall(frame(HELLO, hb))
        got = read_handshake(c)
        kinds = frames(got)
        if [k for k, _ in kinds] != [CHALLENGE, ACK, WELCOME]:
            c.close()
            return got, False, None
        ns = kinds[0][1][:32]
        proved = hmac.compare_digest(kinds[1][1][:32], mac(bytes.fromhex(SECRET), b"S", hb, ns))
        register = struct.pack("<IH", 0x0100007f, 9) + struct.pack("<I", 0) + struct.pack("<I", 1) + bytes(32)
        c.sendall(frame(PROOF, mac(key, b"C", hb, ns)) + frame(REGISTER, register))
        c.settimeout(0.3)
        after = b""
        try:
            while True:
                chunk = c.recv(4096)
                if not chunk:
                    break
                after += chunk
        except OSError:
            pass
        c.close()
        return got, proved, after

    got, proofs, answered = bytearray(), 0, 0
    for _ in range(200):
        g, proved, after = attempt(os.urandom(32))
        got += g
        proofs += proved
        answered += bool(after)
    t.eq(answered, 0, "key probing: nothing came back after any of 200 proofs made with wrong keys")
    t.ok({k for k, _ in frames(bytes(got))} <= HANDSHAKE, "key probing: only rank 0's handshake came back")
    t.eq(proofs, 200, "key probing: rank 0 proved itself first, every time, over the prober's own Hello")
    _, proved, after = attempt(bytes.fromhex(SECRET))
    t.ok(proved and [k for k, _ in frames(after)] == [WELCOME],
         "key probing: the right key's attempt went through the same handshake and was answered with a Welcome "
         "(control; got %s)" % [k for k, _ in frames(after)])
    time.sleep(0.5)
    procs[0].kill()
    r = finish(procs)[0]
    t.ok("its proof does not match this step's secret (200 dropped so far)" in r.err,
         "key probing: rank 0 dropped and counted every wrong proof (debug)")
    taken = "all 2 ranks registered; 200 connection(s)" in r.err
    t.ok(taken, "key probing: the right key's registration was taken in (control)%s"
         % ("" if taken else ": " + r.err[-300:]))


def oversized_up(t, worker):
    """Ranks 1-3 wait for rank 0 (it starts late) with their listeners up;
    the stranger finds every listener and sends a 1 GiB Up, a forged Abort
    and a parent's Hello with a bogus proof.  Rank 0 gets a 1 GiB Up too,
    with 256 MiB of address space."""
    world, port = 4, free_port()
    procs = {r: start(r, world, port, worker=worker) for r in range(1, world)}
    time.sleep(1.0)
    targets = sorted({p for pr in procs.values() for p in listen_ports(pr.pid)})
    t.ok(len(targets) >= 3, "oversized Up: the stranger found the ranks' listeners (%s)" % targets)

    def attack(s):
        for p in targets + [port]:
            try:
                for blob in (frame(UP, length=1 << 30), frame(ABORT, struct.pack("<H", 4) + b"\3\0\0\0bye"),
                             frame(HELLO, hello_body(0, 1, world, step(port))) + frame(PROOF, bytes(32)) +
                             frame(TREE, struct.pack("<II", 8, 0))):
                    c = connect(p, 0.5)
                    s.socks.append(c)
                    c.sendall(blob)
                    c.settimeout(0.2)
                    try:
                        s.keep(c.recv(4096))
                    except OSError:
                        pass
            except OSError:
                pass

    s = Stranger(attack)
    s.start()
    time.sleep(0.5)
    procs[0] = start(0, world, port, worker=worker, prefix=["prlimit", "--as=%d" % (256 << 20)] if worker == WORKER else [])
    res = finish(procs)
    s.stop()
    check(t, "a 1 GiB Up, a forged Abort and a forged parent at every listener", res, [s])


def idle_flood(t, worker):
    world, port = 6, free_port()
    procs = {0: start(0, world, port, worker=worker)}
    time.sleep(0.3)
    flood = []
    for i in range(300):
        try:
            c = connect(port, 2.0)
            if i % 3 == 1:
                c.sendall(frame(HELLO, length=100)[:10])  # half a header
            elif i % 3 == 2:
                c.sendall(frame(HELLO, hello_body(1 + i % 5, 0, world, step(port))))  # a Hello, then nothing
            flood.append(c)
        except OSError:
            break
    t.eq(len(flood), 300, "idle flood: 300 connections made to rank 0")
    procs.update({r: start(r, world, port, worker=worker) for r in range(1, world)})
    res = finish(procs)
    got = bytearray()
    for c in flood:
        c.settimeout(0.05)
        try:
            got += c.recv(65536)
        except OSError:
            pass
        c.close()
    s = Stranger(lambda s: None, once=True)
    s.got = got
    check(t, "300 idle connections before the ranks", res, [s])


def port_holder(t):
    for kind in ("silent", "chatty", "forged challenge"):
        world, port = 3, free_port()
        lis = socket.socket()
        lis.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        lis.bind(("127.0.0.1", port))
        lis.listen(64)
        lis.settimeout(0.2)
        received = bytearray()
        halt = threading.Event()

        def serve():
            held = []
            while not halt.is_set():
                try:
                    c, _ = lis.accept()
                except OSError:
                    continue
                held.append(c)
                c.settimeout(0.5)
                try:
                    received.extend(c.recv(65536))
                except OSError:
                    pass
                if kind == "chatty":
                    c.sendall(b"\x1b[2J\x1b[31mrank 0 here, trust me\x07\n" * 20)
                elif kind == "forged challenge":
                    c.sendall(frame(CHALLENGE, os.urandom(64)))
                try:
                    received.extend(c.recv(65536))
                except OSError:
                    pass
            for c in held:
                c.close()

        th = threading.Thread(target=serve, daemon=True)
        th.start()
        procs = {r: start(r, world, port) for r in range(world)}
        res = finish(procs)
        halt.set()
        th.join(5)
        lis.close()
        what = "a %s process holding MASTER_PORT before rank 0" % kind
        t.eq(res[0].status, "DISTBIND_ERR_SYSTEM", what + ": rank 0 cannot listen")
        t.ok("MASTER_PORT=%d): the port is already in use" % port in res[0].msg, what + ": and says so: " + res[0].msg[:200])
        rest = {r: x for r, x in res.items() if r}
        check(t, what, rest, [], want="DISTBIND_ERR_TIMEOUT",
              say="the process listening on port %d did not authenticate as this step's rank 0" % port)
        kinds = {k for k, _ in frames(bytes(received))}
        t.ok(kinds <= {HELLO}, what + ": it got nothing but Hellos (no registration, no payload): %s" % sorted(kinds))


def never_comes(t):
    """Rank 3 never starts, a stranger tries in its place all
    along: every rank still ends within its timeout, naming rank 3."""
    world, port = 4, free_port()

    def attack(s):
        c = connect(port, 1.0)
        s.socks.append(c)
        c.sendall(frame(HELLO, hello_body(3, 0, world, step(port), os.urandom(32))))
        s.keep(read_handshake(c))
        c.sendall(frame(PROOF, os.urandom(32)))

    s = Stranger(attack)
    procs = {0: start(0, world, port)}
    time.sleep(0.3)
    s.start()
    procs.update({r: start(r, world, port) for r in (1, 2)})
    res = finish(procs)
    s.stop()
    check(t, "rank 3 never comes, a stranger in its place", res, [s], want="DISTBIND_ERR_TIMEOUT",
          say="rank 3 did not reach rank 0")


need_worker()
t = Test("tcp-hostile")
impersonation(t, WORKER)
dos_hello(t, WORKER)
key_probing(t)
oversized_up(t, WORKER)
idle_flood(t, WORKER)
port_holder(t)
never_comes(t)
if os.path.exists(SAN_WORKER):
    impersonation(t, SAN_WORKER)
    oversized_up(t, SAN_WORKER)
    idle_flood(t, SAN_WORKER)
else:
    t.ok(False, SAN_WORKER + " is built by make check")
t.done()
