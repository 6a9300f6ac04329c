#!/usr/bin/python3
"""Plugin cost, side by side in one run:
  1. per-task cost of plan + environment writes (8 tasks per node), against
     the peer approach of running `scontrol show hostnames` for MASTER_ADDR
     (what MMEngine and the enroot PyTorch hook do), on the lab's config;
  2. `srun -N2 -n5 --gpus-per-task=1 true` without and with --dist-bind on
     the lab, interleaved, median of 20 each.
Goals: under 20 us per task and 100x faster than the peer; srun ratio <= 1.05."""
import os, statistics, subprocess, sys, time
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "lab"))
from labkit import Lab

BENCH = os.path.join(ROOT, "build", "bench", "bench_plan")


def timed(fn, n):
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


with Lab() as lab:
    ours_ns = statistics.median(float(subprocess.check_output([BENCH]).decode()) for _ in range(3))
    peer = timed(lambda: subprocess.run(["scontrol", "show", "hostnames", "node[1-2]"], env=lab.env,
                                        stdout=subprocess.DEVNULL, check=True), 20)
    peer_ns = statistics.median(peer) * 1e9
    print("per-task cost (median)")
    print("  dist-bind plan + env writes, 8 tasks/node: %8.1f us" % (ours_ns / 1e3))
    print("  peer: scontrol show hostnames            : %8.1f us" % (peer_ns / 1e3))
    print("  peer / dist-bind                          : %8.0fx   (goal: >= 100x; ours goal: < 20 us)" %
          (peer_ns / ours_ns))

    job = ["-N2", "-n5", "--gpus-per-task=1"]
    with_db, without = [], []
    for _ in range(20):  # interleaved, so drift hits both alike
        without += timed(lambda: lab.run(["srun"] + job + ["true"]), 1)
        with_db += timed(lambda: lab.run(["srun"] + job + ["--dist-bind", "true"]), 1)
    a, b = statistics.median(without), statistics.median(with_db)
    print("srun -N2 -n5 --gpus-per-task=1 true (median of 20)")
    print("  without --dist-bind: %7.1f ms" % (a * 1e3))
    print("  with    --dist-bind: %7.1f ms" % (b * 1e3))
    print("  ratio              : %7.3f   (goal: <= 1.05)" % (b / a))
