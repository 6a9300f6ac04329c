#!/usr/bin/python3
"""The round trips of the TCP bootstrap's handshakes, counted by every rank
(DIST_BIND_DEBUG=1 prints them when its set-up is done): a count does not
depend on the machine's load, so a change that makes a rank wait for one
more answer fails here, where the benchmark (b_exchange) would only drift.

With the step's secret a rank registers in one round trip (its Hello, then
rank 0's challenge, proof and greeting; its own proof and registration go
without waiting for an answer) and links each child in one (the parent's
Hello, proof and tree, then the child's proof; the children in parallel).
Without a secret (DIST_BIND_TCP_INSECURE=1) registering takes one round
trip (the registration, then rank 0's Welcome) and linking a child none."""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from xkit import Test, all_status, need_worker, run_ranks  # noqa: E402

LINE = re.compile(r"tcp: set-up done: (\d+) round trip\(s\) to register with rank 0, (\d+) to link (\d+) child\(ren\)")


def counts(res):
    """{rank: (round trips registering, round trips linking children,
    children)} from each rank's debug line."""
    out = {}
    for r, x in res.items():
        m = LINE.search(x.err)
        if m:
            out[r] = tuple(int(v) for v in m.groups())
    return out


need_worker()
t = Test("tcp-trips")
world, fanout = 64, 8
for what, env, link in (("with the secret", {}, 1),
                        ("without (DIST_BIND_TCP_INSECURE=1)",
                         {"DIST_BIND_TCP_INSECURE": "1", "DIST_BIND_SECRET": None}, 0)):
    env = dict(env, DIST_BIND_DEBUG="1", DIST_BIND_TCP_FANOUT=str(fanout), DIST_BIND_TIMEOUT="60")
    res = run_ranks(world, ["roundtrip"], env=env)
    all_status(t, res, "OK", what)
    got = counts(res)
    silent = sorted(set(range(world)) - set(got))
    t.ok(not silent, what + ": every rank counted its round trips%s" % ("" if not silent else "; not: %s" % silent[:8]))
    want = {}
    for r in range(world):
        children = len([c for c in range(r * fanout + 1, r * fanout + fanout + 1) if c < world])
        want[r] = (0 if r == 0 else 1, link if children else 0, children)
    bad = {r: (got.get(r), want[r]) for r in range(world) if got.get(r) != want[r]}
    t.ok(not bad, "%s: rank 0 links its children in %d round trip(s); every other rank registers in 1 and links "
         "its children in %d%s" % (what, link, link, "" if not bad else "; (got, want): %r" % dict(list(bad.items())[:4])))
t.done()
