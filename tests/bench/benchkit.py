"""What the benchmarks share: a figure with and without dist-bind, side by
side, with the run's own noise floor beside it."""
import statistics

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
    A ratio over its goal by less than |aa - 1| is within this run's noise.
    `without` and `with_`: the medians of each side."""

    def __init__(self, trips, key):
        a, b, c = ([key(t[w]) for t in trips] for w in "abc")
        self.ratio = statistics.median(y / x for x, y in zip(a, b))
        self.aa = statistics.median(z / x for x, z in zip(a, c))
        self.without, self.with_ = statistics.median(a), statistics.median(b)


def triples(run, n):
    """run(with_dist_bind) for one warm-up pair (not counted), then n
    triples: without, with, and without again, in ORDERS' orders in turn.
    Returns a list of {"a": without, "b": with, "c": without again}."""
    run(False), run(True)
    out = []
    for i in range(n):
        t = {}
        for w in ORDERS[i % len(ORDERS)]:
            t[w] = run(w == "b")
        out.append(t)
    return out


def srun_ratio(run, n):
    """run(with_dist_bind) -> seconds; a Paired over n triples.  The
    median of the triples' own ratios, not the ratio of the medians: at 64
    nodes on 2 cores srun's wall time is bimodal (about a third of the runs
    take 0.7 s longer, with and without --dist-bind alike), and which side
    more of the slow runs fall on moved that ratio by 0.2 between runs of
    16 pairs."""
    return Paired(triples(run, n), lambda x: x)
