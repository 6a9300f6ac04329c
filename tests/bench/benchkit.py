"""What the benchmarks share: a figure with and without dist-bind, side by
side, with the run's own noise floor beside it."""
import random
import statistics
import time

# Every order of (without, with, without again), one after another in this
# order: over the six each run is as often first, second and third, and
# (the six repeated) follows each run, itself included, equally often; so
# drift, and whatever one run leaves for the next (the steps' completions
# reaching slurmctld), fall on all three alike.  Counts of triples are best
# a multiple of six.
ORDERS = (("a", "b", "c"), ("c", "a", "b"), ("b", "a", "c"), ("c", "b", "a"), ("a", "c", "b"), ("b", "c", "a"))


class Paired:
    """`ratio`: the median of the triples' own ratios, with / without; `aa`:
    the same of without again / without, the same program twice, which
    dist-bind cannot move: how far chance alone moves the ratio in this run.
    `without` and `with_`: the medians of each side; `n`: the triples."""

    def __init__(self, trips, key):
        a, b, c = ([key(t[w]) for t in trips] for w in "abc")
        self.ratios = [y / x for x, y in zip(a, b)]
        self.n = len(trips)
        self.ratio = statistics.median(self.ratios)
        self.aa = statistics.median(z / x for x, z in zip(a, c))
        self.without, self.with_ = statistics.median(a), statistics.median(b)

    def interval(self, resamples=2000):
        """The 95 % interval of `ratio` (percentile bootstrap over the
        triples; the same triples give the same interval)."""
        rng = random.Random(20261207)
        ms = sorted(statistics.median(rng.choices(self.ratios, k=self.n)) for _ in range(resamples))
        return ms[int(0.025 * resamples)], ms[int(0.975 * resamples) - 1]


def timed_srun(lab, args, cmd, env=None, timeout=300):
    """(wall time, CompletedProcess) of lab.srun(args, cmd), timed from a
    moment slurmctld holds no job (Lab.wait_no_jobs): no srun pays for the
    previous one's nodes still completing."""
    lab.wait_no_jobs()
    t0 = time.perf_counter()
    r = lab.srun(args, cmd, env=env, timeout=timeout)
    return time.perf_counter() - t0, r


def srun_wall(lab, args, timeout=300):
    """timed_srun's wall time of `srun ARGS true`; RuntimeError when it fails."""
    took, r = timed_srun(lab, args, ["true"], timeout=timeout)
    if r.returncode != 0:
        raise RuntimeError("srun %s true failed (rc %d): %s" % (args, r.returncode, r.stderr.strip()[-300:]))
    return took


def triples(run, n, start=0):
    """run(with_dist_bind) for one warm-up pair (not counted; none when
    `start` continues earlier triples), then n triples: without, with, and
    without again, in ORDERS' orders in turn from triple `start` on.
    Returns a list of {"a": without, "b": with, "c": without again}."""
    if start == 0:
        run(False), run(True)
    out = []
    for i in range(start, start + n):
        t = {}
        for w in ORDERS[i % len(ORDERS)]:
            t[w] = run(w == "b")
        out.append(t)
    return out


def judge(run, goal, first, most, key=lambda x: x):
    """A ratio goal (with / without <= goal) judged on triples of run(),
    as many as it takes to tell, within `most`: `first` triples, then six
    more at a time while the ratio's 95 % interval (Paired.interval) still
    holds the goal.  Returns the last Paired, with `lo`, `hi` (that
    interval), `trips` and `verdict`:
      met           the ratio is at most the goal;
      missed        the whole interval lies over the goal: dist-bind costs
                    more than the goal, beyond what this run's noise explains;
      within-noise  the ratio is over the goal but the interval, after
                    `most` triples, still holds it: this run cannot tell.
    The median of the triples' own ratios, not the ratio of the medians: at
    64 nodes on 2 cores srun's wall time was bimodal (an srun started while
    the last job's nodes were still completing waited for them, 0.3 to 0.7
    s more, with and without --dist-bind alike; the benches now start each
    srun once slurmctld holds no job, Lab.wait_no_jobs), and which side
    more of the slow runs fell on moved that ratio by 0.2 between runs of
    16 pairs."""
    trips = triples(run, first)
    while True:
        p = Paired(trips, key)
        p.lo, p.hi = p.interval()
        if not p.lo <= goal < p.hi or len(trips) >= most:
            break
        trips += triples(run, len(ORDERS), start=len(trips))
    p.trips = trips
    # Judged as shown, to three places.
    r = round(p.ratio, 3)
    p.verdict = "met" if r <= goal else "missed" if round(p.lo, 3) > goal else "within-noise"
    return p


def shown(p):
    """A judged ratio as the goal table shows it."""
    return "%.3f (95%% %.3f-%.3f, %d triples; A/A %.3f)" % (p.ratio, p.lo, p.hi, p.n, p.aa)


# What this benchmark missed (goal() below); it exits 1 when any.
missed = []


def goal(figure, measured, target, verdict):
    """One "GOAL<TAB>figure<TAB>measured<TAB>goal<TAB>verdict" line for
    run.sh's table; verdict True (met), False (missed) or judge()'s."""
    verdict = {True: "met", False: "missed"}.get(verdict, verdict)
    if verdict == "missed":
        missed.append(figure)
    print("GOAL\t%s\t%s\t%s\t%s" % (figure, measured, target, verdict))
