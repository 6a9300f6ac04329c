"""What the benchmarks share: srun with and without --dist-bind, side by side."""
import statistics


def srun_ratio(run, pairs):
    """run(with_dist_bind) -> seconds, called for one warm-up pair (not
    counted) and then `pairs` pairs, each pair's two runs back to back and
    in alternating order (without first, then with first), so that drift
    and whatever one srun leaves for the next (the steps' completions
    reaching slurmctld) fall on both alike.  Returns (ratio, without, with):
    the median of the pairs' own ratios and the two medians.  The ratio of
    the medians is not used: at 64 nodes on 2 cores srun's wall time is
    bimodal (about a third of the runs take 0.7 s longer, with and without
    --dist-bind alike), and which side more of the slow runs fall on moved
    that ratio by 0.2 between runs of 16 pairs."""
    run(False), run(True)
    got = []
    for i in range(pairs):
        order = (False, True) if i % 2 == 0 else (True, False)
        t = {w: run(w) for w in order}
        got.append((t[False], t[True]))
    ratio = statistics.median(b / a for a, b in got)
    return ratio, statistics.median(a for a, _ in got), statistics.median(b for _, b in got)
