#!/usr/bin/python3
"""The TCP exchange with 64 and 256 real processes on this host: every rank
gets rank 0's id, everyone's allgather slot, the last rank's broadcast; and
rank 0 never holds more connections than the tree's fan-out allows."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from xkit import Test, all_status, need_worker, run_ranks  # noqa: E402

need_worker()
t = Test("tcp-scale")

for world, fanout in ((64, 8), (256, 8), (256, 16), (64, 2), (12, 1)):
    what = "%d ranks, fan-out %d" % (world, fanout)
    res = run_ranks(world, ["roundtrip"], env={"DIST_BIND_TCP_FANOUT": str(fanout), "DIST_BIND_TIMEOUT": "60"})
    t.eq(len(res), world, what + ": every rank reported")
    all_status(t, res, "OK", what)
    t.eq({x.field("world") for x in res.values()}, {str(world)}, what + ": world size")
    t.eq({x.field("bootstrap") for x in res.values()}, {"tcp"}, what + ": bootstrap")
    t.eq({x.field("source") for x in res.values()}, {"env"}, what + ": place read from RANK/WORLD_SIZE")
    t.eq({x.field("secret_env") for x in res.values()}, {"0"}, what + ": DIST_BIND_SECRET taken out of the environment")
    peaks = {r: int(x.field("peak") or -1) for r, x in res.items()}
    # Rank 0: its children, or the one registration it is serving.
    t.ok(1 <= peaks[0] <= fanout, what + ": rank 0 held at most %d connections at once (held %d)" % (fanout, peaks[0]))
    # Anyone else: a parent plus its children (plus its registration).
    t.ok(max(peaks.values()) <= fanout + 1, what + ": no rank held more than %d (max %d)" % (fanout + 1, max(peaks.values())))

# The tree is what bounds rank 0: a star (fan-out >= world) makes it hold all.
res = run_ranks(64, ["roundtrip"], env={"DIST_BIND_TCP_FANOUT": "64"})
all_status(t, res, "OK", "64 ranks as a star")
t.eq(res[0].field("peak"), "63", "a star makes rank 0 hold all 63 connections")

# One rank alone needs no network at all.
res = run_ranks(1, ["roundtrip"], env={"MASTER_PORT": "1"})
all_status(t, res, "OK", "a world of 1")
t.done()
