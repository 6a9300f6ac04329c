#!/usr/bin/python3
"""The TCP exchange at 64, 128 and 256 local ranks, side by side in one run:

1. the tree (fan-out 8) against a star (every rank a child of rank 0): the
   median over 40 rounds of one 128-byte id broadcast from rank 0 plus a
   barrier (timed at rank 0), the median set-up time (distbind_init at rank
   0) and the most connections rank 0 held at once; each configuration 3
   times, alternating tree and star;
2. at 256 ranks, the set-up with the step's secret (every connection
   proved both ways) against the same set-up without it
   (DIST_BIND_TCP_INSECURE=1, the unauthenticated protocol as it was): 30
   to 90 triples of runs (without, with, without again, back to back, in
   benchkit.ORDERS; as many as benchkit.judge needs to tell); the median
   of the triples' ratios (goal <= 1.05) and its 95 % interval,
   which the load of a shared machine moves least, the medians of each
   side, and the median of without again / without: the same set-up
   twice, how far this run's noise alone moves the ratio (on 2 cores 256
   ranks' set-up varies fourfold between identical runs).  The set-up's
   time is from the moment the first rank begins it to the moment the
   last one has finished it (every rank's distbind_init, on one clock):
   the time the step waits.  Rank 0's own
   distbind_init is shown too, but is not the set-up: the ranks leave the
   gate below over about 200 ms (each takes its turn on the 2 cores), and
   where rank 0 falls in that order decides how much of the set-up its own
   call sees.  The CPU time of every rank's distbind_init, summed, is shown
   too: on a loaded machine it tells work from waiting.

After the tables, one machine-readable line (tab-separated) for the goal:
  GOAL  authenticated / unauthenticated TCP set-up, 256 ranks  RATIO  <= 1.05  VERDICT
(benchkit.goal); it exits 1 when the goal is missed.

Every rank starts its set-up when the workers' gate opens (they wait on a
pipe until all run), so set-up times are the set-up, not process start-up.
Absolute times depend on the machine and its load; the ratios are the
figures to look at."""
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "exchange"))
from xkit import WORKER, run_ranks  # noqa: E402
from benchkit import Paired, goal, judge, missed, shown  # noqa: E402

ITERS, RUNS, FANOUT = 40, 3, 8
if not os.path.exists(WORKER):
    print("b_exchange: %s not built (make bench builds it)" % WORKER)
    sys.exit(1)


def one(world, fanout, insecure=False, iters=ITERS):
    env = {"DIST_BIND_TCP_FANOUT": str(fanout), "DIST_BIND_TIMEOUT": "120"}
    if insecure:
        env.update({"DIST_BIND_TCP_INSECURE": "1", "DIST_BIND_SECRET": None})
    res = run_ranks(world, ["bench", str(iters)], env=env, gate=True)
    bad = [r for r, x in res.items() if x.rc != 0]
    if bad:
        raise SystemExit("b_exchange: %d ranks, fan-out %d failed: %r" % (world, fanout, res[bad[0]]))
    f, began, done, cpu = {}, [], [], 0.0
    for r, x in res.items():
        for line in x.out.splitlines():
            kv = dict(w.partition("=")[::2] for w in line.split()[1:])
            if line.startswith("INIT"):
                began.append(float(kv["t0_us"]))
                done.append(float(kv["t0_us"]) + float(kv["init_us"]))
                cpu += float(kv["cpu_us"])
            if r == 0:
                f.update(kv)
    if len(began) != world:
        raise SystemExit("b_exchange: %d of %d ranks reported their set-up" % (len(began), world))
    return float(f["median_us"]), float(f["init_us"]), int(f["peak"]), max(done) - min(began), cpu


print("ranks | tree: id+barrier  set-up  rank-0 conns | star: id+barrier  set-up  rank-0 conns | tree/star id+barrier")
rows = []
for world in (64, 128, 256):
    runs = {"tree": [], "star": []}
    for _ in range(RUNS):
        runs["tree"].append(one(world, FANOUT))
        runs["star"].append(one(world, world))
    med = {k: (statistics.median(x[0] for x in v), statistics.median(x[3] for x in v), max(x[2] for x in v))
           for k, v in runs.items()}
    t, s = med["tree"], med["star"]
    print("%5d | %13.0f us %6.1f ms %12d | %13.0f us %6.1f ms %12d | %.2f" % (
        world, t[0], t[1] / 1e3, t[2], s[0], s[1] / 1e3, s[2], t[0] / s[0]))
    rows.append((world, t, s))

w, t, s = rows[-1]
print("at %d ranks the tree takes %.2fx the star's time per id+barrier; rank 0 holds %d connections (fan-out %d) "
      "instead of %d" % (w, t[0] / s[0], t[2], FANOUT, s[2]))

AUTH_TRIPLES, GOAL = (30, 90), 1.05  # first and most (benchkit.judge), multiples of 6
# Triples (benchkit.judge): without the secret, with it, without again, as
# many as it takes to tell.
setup = judge(lambda secure: one(256, FANOUT, insecure=not secure, iters=3), GOAL, *AUTH_TRIPLES,
              key=lambda x: x[3])

print()
print("at 256 ranks, %d triples | with the step's secret | without (DIST_BIND_TCP_INSECURE=1) | ratio, triples' median"
      " | without again / without" % setup.n)
for k, what in ((3, "set-up, first rank in to last out"), (1, "rank 0's distbind_init"),
                (4, "CPU, all ranks' distbind_init")):
    p = setup if k == 3 else Paired(setup.trips, lambda x, k=k: x[k])
    print("%-34s | %9.1f ms median | %28.1f ms median | %.3f (medians' ratio %.3f) | %.3f" % (
        what, p.with_ / 1e3, p.without / 1e3, p.ratio, p.with_ / p.without, p.aa))
print("authenticated set-up / unauthenticated: %.3f, 95%% %.3f-%.3f (goal <= %.2f: %s); the same run twice: %.3f" % (
    setup.ratio, setup.lo, setup.hi, GOAL, setup.verdict, setup.aa))
goal("authenticated / unauthenticated TCP set-up, 256 ranks", shown(setup), "<= %.2f" % GOAL, setup.verdict)
sys.exit(1 if missed else 0)
