#!/usr/bin/python3
"""make bench's verdicts, without a lab: benchkit.judge on synthetic runs
whose ratio and noise are known (met, missed, within-noise, how many
triples each takes), and tests/bench/run.sh's table and exit status on
benchmarks that print those verdicts (a within-noise row fails the run
unless DIST_BIND_BENCH_NOISE_PASSES=1; a missed row, or a benchmark that
fails without a GOAL line, always does)."""
import os
import random
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "lab", "kit"))
sys.path.insert(0, os.path.join(ROOT, "tests", "bench"))
from labkit import Test  # noqa: E402
import benchkit  # noqa: E402

t = Test("bench_verdicts")


def synthetic(ratio, noise, seed):
    """run(with) -> a time: 1 without, `ratio` with, each times a factor
    drawn uniformly within +-noise; the calls it got, by side."""
    rng = random.Random(seed)
    calls = {True: 0, False: 0}

    def run(with_):
        calls[with_] += 1
        return (ratio if with_ else 1.0) * (1 + rng.uniform(-noise, noise))
    return run, calls


# A quiet machine: each verdict after the first triples.
for ratio, want in ((1.00, "met"), (1.20, "missed")):
    run, calls = synthetic(ratio, 0.01, 1)
    p = benchkit.judge(run, 1.05, 18, 60)
    t.eq(p.verdict, want, "ratio %.2f, 1 %% noise: verdict" % ratio)
    t.eq(p.n, 18, "ratio %.2f, 1 %% noise: decided on the first 18 triples" % ratio)
    t.eq((calls[False], calls[True]), (1 + 2 * 18, 1 + 18), "one warm-up pair, then without twice and with once a triple")
    t.ok(p.lo <= p.ratio <= p.hi, "the ratio lies in its interval (%.3f-%.3f)" % (p.lo, p.hi))

# Just over the goal with a noise the interval cannot shrink below 5 %
# within 24 triples: more triples, six at a time, then within-noise.
run, calls = synthetic(1.06, 0.30, 2)
p = benchkit.judge(run, 1.05, 6, 24)
t.eq(p.n, 24, "a ratio just over the goal in 30 % noise takes every triple allowed")
t.ok(p.ratio > 1.05, "...its ratio (%.3f) is over the goal" % p.ratio)
t.eq(p.verdict, "within-noise", "...and it is within-noise")
t.ok(p.lo <= 1.05 < p.hi, "...its interval (%.3f-%.3f) still holds the goal" % (p.lo, p.hi))
t.eq(len(p.trips), p.n, "every triple run is in the verdict")

# The same noise, far over the goal: missed, however noisy.
run, _ = synthetic(2.0, 0.30, 3)
p = benchkit.judge(run, 1.05, 6, 24)
t.eq(p.verdict, "missed", "twice the time in 30 %% noise is missed (interval %.3f-%.3f)" % (p.lo, p.hi))

# Each triple's three runs follow ORDERS, continued across the extension.
seen, rng = [], random.Random(4)
p = benchkit.judge(lambda w: seen.append(w) or (1.0 + 0.3 * rng.random()), 1.05, 6, 12)
t.eq(p.n, 12, "ratio 1 in 30 %% noise: 6 triples, then 6 more (interval %.3f-%.3f)" % (p.lo, p.hi))
order = [["a", "b", "c"].index(x) for o in benchkit.ORDERS for x in o]
want = [False, True] + [[False, True, False][i] for i in order] * 2
t.eq(seen, want, "a warm-up pair, then the triples in ORDERS' orders, the extension continuing them")

# The interval is the same for the same triples.
q = benchkit.Paired(p.trips, lambda x: x)
t.eq(q.interval(), (p.lo, p.hi), "the same triples give the same interval")

# run.sh: the table and exit status for each verdict.
with tempfile.TemporaryDirectory() as tmp:
    def bench(name, body):
        path = os.path.join(tmp, name)
        with open(path, "w") as f:
            f.write(body)
        return path

    met = bench("b_met.sh", 'printf "GOAL\\tfig a\\t1.00\\t<= 1.05\\tmet\\n"\n')
    noise = bench("b_noise.sh", 'printf "GOAL\\tfig b\\t1.06 (95%% 0.99-1.12)\\t<= 1.05\\twithin-noise\\n"\n')
    missed = bench("b_missed.sh", 'printf "GOAL\\tfig c\\t1.30\\t<= 1.05\\tmissed\\n"; exit 1\n')
    silent = bench("b_silent.sh", 'exit 3\n')

    def run_sh(benches, noise_passes=False):
        env = dict(os.environ, DIST_BIND_BENCHES=" ".join(benches))
        env.pop("DIST_BIND_BENCH_NOISE_PASSES", None)
        if noise_passes:
            env["DIST_BIND_BENCH_NOISE_PASSES"] = "1"
        r = subprocess.run(["bash", os.path.join(ROOT, "tests", "bench", "run.sh")], env=env, capture_output=True,
                           text=True)
        summary = [line for line in r.stdout.splitlines() if line.startswith("bench: ")]
        return r.returncode, summary, r.stdout

    rc, summary, _ = run_sh([met])
    t.eq((rc, summary[:1]), (0, ["bench: 1 goals met, 0 missed, 0 within this run's noise, 0 need a GPU"]),
         "every goal met: exit 0")
    rc, summary, out = run_sh([met, noise])
    t.eq(rc, 1, "met and within-noise: exit 1")
    t.ok(any("NOISE" in line for line in out.splitlines() if "fig b" in line), "the table marks the row NOISE")
    t.ok(summary[:1] == ["bench: 1 goals met, 0 missed, 1 within this run's noise, 0 need a GPU"]
         and any("run again" in line for line in summary), "the summary counts it apart and says to run again")
    rc, _, _ = run_sh([met, noise], noise_passes=True)
    t.eq(rc, 0, "DIST_BIND_BENCH_NOISE_PASSES=1: within-noise does not fail the run")
    rc, _, _ = run_sh([met, noise, missed], noise_passes=True)
    t.eq(rc, 1, "...but a missed goal still does")
    rc, summary, out = run_sh([met, noise, missed])
    t.eq(rc, 1, "a missed goal fails the run")
    t.ok(any("MISSED" in line for line in out.splitlines() if "fig c" in line), "the table marks it MISSED")
    rc, summary, out = run_sh([met, silent])
    t.eq(rc, 1, "a benchmark that fails without a GOAL line fails the run")
    t.ok(any("b_silent.sh ran to the end" in line for line in out.splitlines()), "...with a row naming it")
t.done()
