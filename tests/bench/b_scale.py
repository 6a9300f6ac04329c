#!/usr/bin/python3
"""dist-bind at 2, 16 and (where memory allows) 64 nodes of the lab, 3
tasks and 3 of the 4 fake GPUs per node, side by side in one run per node
count:
  - srun's wall time with and without --dist-bind (`true` as the program,
    triples without, with and without again (benchkit.ORDERS), the median
    of their ratios, and of without again / without beside it as the
    run's noise, as many triples as it takes to tell: benchkit.judge):
    goal <= 1.05 at every node count;
  - slurmctld's RPCs per srun with and without --dist-bind on the default
    path (sdiag, by user, srun as nobody; deterministic): goal +0;
  - libdistbind's bring-up over each bootstrap Slurm has (PMIx, PMI2) and
    over TCP (--mpi=none): rank 0's set-up (distbind_init, which waits for
    the step's last rank) and one 128-byte id broadcast + barrier
    (tests/exchange/worker.c), medians of RUNS rounds, each bootstrap in
    turn in every round;
  - dist-bind-check's wall time (srun to exit) over each bootstrap;
    goal: libdistbind's own TCP bootstrap beats Slurm's PMI2 and PMIx at
    every node count, in rank 0's set-up plus one id broadcast + barrier
    (the median of its run's rounds) and in dist-bind-check's wall time.
    Set-up alone does not compare: over TCP it returns once every rank has
    joined, over PMI2 before (PMI2_Init waits for nobody; the first fence
    waits for the last rank).  The median leaves that first, slowest
    round out, which favours PMI.
Then srun's side at 1,000 to 100,000 nodes, without a lab: the time to
build DIST_BIND_NODE_RANKS from a synthetic layout and its size, block and
topology-permuted (bench_hints.c); goal: it fits one environment string
(the kernel's 128 KiB), or srun refuses the step with one message.
Prints "GOAL<TAB>figure<TAB>measured<TAB>goal<TAB>verdict" lines
(benchkit.goal) and exits 1 when one is missed."""
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "lab", "kit"))
import labkit  # noqa: E402
from runtimekit import CHECK, WORKER  # noqa: E402
from benchkit import goal, judge, missed, shown, srun_wall, timed_srun  # noqa: E402

HINTS = os.path.join(ROOT, "build", "bench", "bench_hints")
NODES = (2, 16, 64)
PER_NODE = 3
# Triples for the srun ratio (benchkit.judge): first, and at most while its
# interval still holds the goal; multiples of 6 (benchkit.ORDERS).
TRIPLES = {2: (18, 60), 16: (18, 60), 64: (24, 48)}
RUNS = 5  # rounds of every bootstrap in turn
SRUN_GOAL = 1.05
KERNEL_MAX = 128 * 1024
# A 64-node lab: 64 slurmd and 192 tasks; leave room for the rest.
MEM_64_KIB = 6 * 1024 * 1024


def mem_available_kib():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1])
    return 0


def worker_fields(stdout):
    """Rank 0's BENCH and INIT figures (srun --label: "0: BENCH ...")."""
    f = {}
    for line in stdout.splitlines():
        head, sep, rest = line.partition(": ")
        if sep and head.strip() == "0" and rest.startswith(("BENCH", "INIT")):
            f.update(w.partition("=")[::2] for w in rest.split()[1:])
    return f


def one_size(n):
    job = "-N%d -n%d --gpus-per-task=1" % (n, n * PER_NODE)
    with labkit.Lab(nodes=n) as lab:
        print("== %d nodes: srun %s" % (n, job))
        # srun's wall time, in triples (benchkit.judge).
        try:
            r = judge(lambda db: srun_wall(lab, job + " --dist-bind" * db), SRUN_GOAL, *TRIPLES[n])
        except RuntimeError as e:
            print(e)
            goal("srun ratio, %d nodes" % n, "srun failed", "<= %g" % SRUN_GOAL, False)
            return
        print("  srun's wall time, medians: %.0f ms with --dist-bind, %.0f ms without" % (r.with_ * 1e3,
                                                                                          r.without * 1e3))
        goal("srun ratio, %d nodes" % n, shown(r), "<= %g" % SRUN_GOAL, r.verdict)

        base, _, f1 = lab.srun_rpcs(job)
        ours, types, f2 = lab.srun_rpcs(job + " --dist-bind")
        ok = not f1 and not f2 and base
        goal("RPCs per srun added by --dist-bind, %d nodes" % n,
             "%+g (%g with, %g without)" % (ours - base, ours, base) if ok else "srun failed", "+0",
             bool(ok) and ours == base)

        print("bring-up, %d ranks on %d nodes (medians of %d rounds)" % (n * PER_NODE, n, RUNS))
        print("  --mpi | bootstrap | set-up (rank 0) | id+barrier | set-up + id+barrier | dist-bind-check, srun to exit")
        # Round by round, each bootstrap in turn, so that drift falls on all
        # of them alike; a bootstrap that fails once is left out after.
        boots = list(lab.bootstraps())
        setups, idb, checks = ({boot: [] for _, boot in boots} for _ in range(3))
        failed = set()
        for _ in range(RUNS):
            for mpi, boot in boots:
                if boot in failed:
                    continue
                r = lab.srun("--label %s --dist-bind --mpi=%s" % (job, mpi), [WORKER, "bench", "5"],
                             env={"DIST_BIND_TIMEOUT": "120"}, timeout=300)
                f = worker_fields(r.stdout)
                if r.returncode != 0 or "median_us" not in f:
                    print("  xchg_worker over %s failed (rc %d): %s" % (mpi, r.returncode, r.stderr.strip()[-300:]))
                    missed.append("bring-up over %s, %d nodes" % (boot, n))
                    failed.add(boot)
                    continue
                setups[boot].append(float(f["init_us"]) / 1e3)
                idb[boot].append(float(f["median_us"]) / 1e3)
                took, r = timed_srun(lab, "%s --dist-bind --mpi=%s" % (job, mpi), [CHECK],
                                     env={"DIST_BIND_TIMEOUT": "120"})
                if r.returncode != 0:
                    print("  dist-bind-check over %s failed (rc %d): %s" % (mpi, r.returncode,
                                                                         r.stdout.strip()[-300:]))
                    missed.append("dist-bind-check over %s, %d nodes" % (boot, n))
                    failed.add(boot)
                    continue
                checks[boot].append(took)
        got = {}
        for mpi, boot in boots:
            if boot in failed or not checks[boot]:
                continue
            usable = statistics.median(su + ib for su, ib in zip(setups[boot], idb[boot]))
            got[boot] = (usable, statistics.median(checks[boot]))
            print("  %-5s | %-9s | %12.1f ms | %7.2f ms | %17.1f ms | %.2f s" % (
                mpi, boot, statistics.median(setups[boot]), statistics.median(idb[boot]), usable, got[boot][1]))
        slurms = [b for b in got if b != "tcp"]
        for i, (what, unit) in enumerate((("set-up + id+barrier (rank 0)", "ms"), ("dist-bind-check", "s"))):
            if "tcp" not in got or not slurms:
                goal("TCP bring-up beats Slurm's PMI, %d nodes: %s" % (n, what), "not measured", "below PMI2, PMIx",
                     False)
                continue
            best = min(got[b][i] for b in slurms)
            goal("TCP bring-up beats Slurm's PMI, %d nodes: %s" % (n, what),
                 "tcp %.1f %s, %s" % (got["tcp"][i], unit, ", ".join("%s %.1f %s" % (b, got[b][i], unit)
                                                                       for b in slurms)),
                 "below " + ", ".join(slurms), got["tcp"][i] < best)


def hints():
    print("== srun's node ranks (DIST_BIND_NODE_RANKS) from synthetic layouts, 4 tasks per node")
    r = subprocess.run([HINTS], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        goal("DIST_BIND_NODE_RANKS fits one environment string", "bench_hints failed: " + r.stderr.strip(),
             "< 128 KiB or one clear error", False)
        return
    print("  nodes   | layout   | build time | size")
    error_text = [l[len("HINTS-ERROR "):] for l in r.stdout.splitlines() if l.startswith("HINTS-ERROR")]
    fits = True
    for line in r.stdout.splitlines():
        if not line.startswith("HINTS "):
            continue
        f = dict(w.split("=", 1) for w in line.split()[1:])
        size = "refused: too irregular" if f["error"] == "1" else "%s bytes" % f["bytes"]
        print("  %7s | %-8s | %7.0f us | %s" % (f["nodes"], f["layout"], float(f["us"]), size))
        if f["error"] == "0" and int(f["bytes"]) >= KERNEL_MAX:
            fits = False
        if f["error"] == "1" and f["layout"] != "shuffled":
            fits = False  # a layout Slurm makes must pass
    clear = all("too irregular" in e and "DIST_BIND_NODE_RANKS" in e for e in error_text)
    goal("DIST_BIND_NODE_RANKS at 100,000 nodes (block, topology: fits; any order: fits or one clear error)",
         "fits" if fits and clear else "does not fit", "< 128 KiB or one clear error", fits and clear)


def main():
    for n in NODES:
        if n == 64 and mem_available_kib() < MEM_64_KIB:
            print("== 64 nodes: not run, %d MiB of memory available (needs %d)" % (
                mem_available_kib() // 1024, MEM_64_KIB // 1024))
            continue
        try:
            one_size(n)
        except SystemExit as e:  # the lab cannot run here
            print("b_scale: the lab cannot run here (%s)" % e)
            goal("srun ratio, %d nodes" % n, "no lab", "<= %g" % SRUN_GOAL, False)
            break
    hints()
    sys.exit(1 if missed else 0)


if __name__ == "__main__":
    main()
