#!/usr/bin/python3
"""PMIx against PMI2 against TCP on the lab, side by side in one run, at
the largest step the lab can hold: 2 nodes x 512 tasks (Slurm's limit of
tasks per node), declared with Lab(cpus=512).

Per bootstrap: rank 0's median over 20 rounds of one 128-byte id broadcast
plus a barrier, and rank 0's set-up time (distbind_init, which includes
waiting for the step's last task to start).  Each bootstrap runs twice,
alternating; the medians are shown, with each one's ratio to TCP."""
import collections
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lab", "kit"))
import labkit  # noqa: E402
from runtimekit import WORKER  # noqa: E402

PER_NODE, ITERS, RUNS = 512, 20, 2
if not os.path.exists(WORKER):
    print("b_bootstrap: %s not built (make bench builds it)" % WORKER)
    sys.exit(1)
try:
    lab = labkit.Lab(cpus=PER_NODE, gpus=0)
except SystemExit as e:  # the lab cannot run here (no root, no Slurm)
    print("b_bootstrap: skipped (the lab cannot run here)")
    sys.exit(0 if e.code == 77 else 1)


def by_rank(text):
    """srun --label's output: {rank: [its lines]}, and srun's own lines."""
    ranks, own = collections.defaultdict(list), []
    for line in text.splitlines():
        head, sep, rest = line.partition(": ")
        if sep and head.strip().isdigit():
            ranks[int(head)].append(rest)
        elif line.strip():
            own.append(line)
    return ranks, own


def fields(out):
    """Rank 0's figures: its BENCH line and its own INIT line (every rank
    prints one)."""
    f = {}
    for line in out.get(0, []):
        if line.startswith(("BENCH", "INIT")):
            f.update(w.partition("=")[::2] for w in line.split()[1:])
    return f


def report_failure(mpi, r):
    """Every rank that did not finish, in its own words: its ERR line (status
    and distbind_last_error), else whatever it wrote to stderr; then srun's
    own messages."""
    out, _ = by_rank(r.stdout)
    err, own = by_rank(r.stderr)
    failed = {}
    for rank in range(tasks):
        if any(l.startswith("INIT") for l in out.get(rank, [])):
            continue
        said = [l for l in out.get(rank, []) if l.startswith("ERR ")] or err.get(rank, []) or ["(no output at all)"]
        failed[rank] = " | ".join(said)
    print("b_bootstrap: --mpi=%s failed (srun rc %d): %d of %d ranks did not finish, each in its own words:"
          % (mpi, r.returncode, len(failed), tasks))
    for rank, said in failed.items():
        print("  rank %d: %s" % (rank, said))
    if own:
        print("srun:\n  " + "\n  ".join(own[-20:]))


tasks = 2 * PER_NODE
got = {"pmix": [], "pmi2": [], "none": []}
with lab:
    for _ in range(RUNS):
        for mpi in got:
            # --label: every line says which rank wrote it.
            r = lab.srun("--label -N2 -n%d --dist-bind --mpi=%s" % (tasks, mpi), [WORKER, "bench", str(ITERS)],
                         env={"DIST_BIND_TIMEOUT": "300"}, timeout=600)
            f = fields(by_rank(r.stdout)[0])
            if r.returncode != 0 or "median_us" not in f:
                report_failure(mpi, r)
                sys.exit(1)
            got[mpi].append((float(f["median_us"]), float(f["init_us"]), f["bootstrap"]))

tcp = statistics.median(x[0] for x in got["none"])
print("%d tasks on 2 nodes (%d per node)" % (tasks, PER_NODE))
print("srun --mpi | bootstrap | id+barrier (median) | set-up (rank 0) | id+barrier / tcp")
for mpi, runs in got.items():
    med = statistics.median(x[0] for x in runs)
    init = statistics.median(x[1] for x in runs)
    print("%-10s | %-9s | %16.1f ms | %12.1f ms | %.1f" % (mpi, runs[0][2], med / 1e3, init / 1e3, med / tcp))
