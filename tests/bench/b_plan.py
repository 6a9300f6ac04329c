#!/usr/bin/python3
"""Plugin cost, side by side in one run:
  1. per-task cost of the plan (node plan amortised over its 8 tasks + task
     plan, every feature on: bench_plan.c), ours against the plan of
     e50afc0 on the same steps, run alternately, ROUNDS rounds, medians;
     and with the environment writes slurmstepd then does (modelled on its
     setenvf: a 256 KiB calloc and a scan per variable; ours writes the
     node's variables once per node in user_init, e50afc0 writes everything
     per task), with how many variables each writes per task; e50afc0's own
     bench_plan (its step, its older write model), as information;
  2. `srun -N2 -n5 --gpus-per-task=1 true` without and with --dist-bind on
     the lab, 18 to 60 triples (without, with, without again), the median
     of their ratios and of without again / without, the run's noise
     (benchkit.judge); `scontrol show hostnames`
     (how MMEngine and the enroot PyTorch hook get MASTER_ADDR) beside the
     per-task cost, as information.
Prints one line per goal, "GOAL<TAB>figure<TAB>measured<TAB>goal<TAB>verdict"
(benchkit.goal), and exits 1 when one is missed."""
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "lab", "kit"))
from benchkit import goal, judge, missed, shown, srun_wall  # noqa: E402

BASELINE = "e50afc0"  # tests/bench/build.mk: BASELINE_REV
BENCH = os.path.join(ROOT, "build", "bench", "bench_plan")
BASE = os.path.join(ROOT, "build", "bench", "bench_plan_" + BASELINE)
BASE_OWN = os.path.join(ROOT, "build", "baseline-" + BASELINE, "build", "bench", "bench_plan")
ROUNDS = 5
PLAN_GOAL_US = 10.0
SRUN_GOAL = 1.05


def bench(argv):
    """bench_plan's "key=value ..." line, numbers as floats."""
    out = subprocess.run(argv, stdout=subprocess.PIPE, check=True, text=True).stdout.split()
    return {k: float(v) for k, v in (kv.split("=", 1) for kv in out)}


def build_baseline():
    """None, or why there is no baseline."""
    if subprocess.run(["git", "-C", ROOT, "cat-file", "-e", BASELINE + "^{commit}"],
                      stderr=subprocess.DEVNULL).returncode != 0:
        return "%s is not in this clone's history (shallow clone? git fetch --unshallow)" % BASELINE
    # Its own make, not the one that may have started us (its jobserver
    # does not reach here).
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    r = subprocess.run(["make", "-C", ROOT, "-j2", "--no-print-directory", "bench-baseline"], env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        return "building it failed: " + " | ".join(r.stdout.strip().splitlines()[-3:])
    return None


def us(ns):
    return "%.1f us" % (ns / 1e3)


def plan_figures():
    why_not = build_baseline()
    ours, base, base_own, het = [], [], [], []
    for _ in range(ROUNDS):  # alternately, so drift on a shared machine hits both alike
        ours.append(bench([BENCH]))
        if not why_not:
            base.append(bench([BASE]))
            base_own.append(float(subprocess.check_output([BASE_OWN]).decode()))
        het.append(bench([BENCH, "--het"]))

    def med(runs, key):
        return statistics.median(r[key] for r in runs)

    plan, total = med(ours, "plan_ns"), med(ours, "total_ns")
    writes = "%d + %d/8 per node" % (ours[0]["vars"], ours[0]["node_vars"])
    print("per-task cost, every feature on (8 tasks, 8 GPUs, rank,verbose, torchrun, enclosing step; "
          "median of %d rounds)" % ROUNDS)
    print("  %-44s %9s %22s  %s" % ("", "plan", "plan + slurmstepd's", "writes per task"))
    print("  %-44s %9s %22s" % ("", "", "writes (modelled)"))
    print("  %-44s %9s %22s  %s" % ("dist-bind", us(plan), us(total), writes))
    print("  %-44s %9s %22s  %d + %d/8 per node" % ("dist-bind, heterogeneous step", us(med(het, "plan_ns")),
                                                   us(med(het, "total_ns")), het[0]["vars"], het[0]["node_vars"]))
    if why_not:
        print("  %s: no baseline: %s" % (BASELINE, why_not))
    else:
        bplan, btotal = med(base, "plan_ns"), med(base, "total_ns")
        print("  %-44s %9s %22s  %d" % (BASELINE + ", same steps", us(bplan), us(btotal), base[0]["vars"]))
        print("  %-44s %9s %22s" % (BASELINE + "'s own bench_plan (its step, older model)", "",
                                    us(statistics.median(base_own))))
        print("  plan: dist-bind / %s = %.2f; with the writes: %.2f" % (BASELINE, plan / bplan, total / btotal))
        print("  writes per task: dist-bind %s (%.2f amortised), %s %d" %
              (writes, ours[0]["vars"] + ours[0]["node_vars"] / 8.0, BASELINE, base[0]["vars"]))
    figures = {"plan": plan, "total": total}
    goal("per-task cost (bench_plan, every feature on)", us(plan), "<= %g us" % PLAN_GOAL_US,
         plan <= PLAN_GOAL_US * 1e3)
    for figure, key, mine in (("per-task cost vs %s, same run" % BASELINE, "plan_ns", plan),
                              ("per-task cost with slurmstepd's writes, vs %s" % BASELINE, "total_ns", total)):
        if why_not:
            goal(figure, "%s vs no baseline" % us(mine), "below %s's" % BASELINE, False)
        else:
            theirs = med(base, key)
            goal(figure, "%s vs %s" % (us(mine), us(theirs)), "below %s's" % BASELINE, mine < theirs)
    return figures


def timed(fn, n):
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def lab_figures(figures):
    from labkit import Lab

    with Lab() as lab:
        peer = timed(lambda: subprocess.run(["scontrol", "show", "hostnames", "node[1-2]"], env=lab.env,
                                            stdout=subprocess.DEVNULL, check=True), 20)
        peer_ns = statistics.median(peer) * 1e9
        print("MASTER_ADDR the peers' way: scontrol show hostnames: %.1f us per task (median of 20), "
              "%.0fx dist-bind's plan + writes" % (peer_ns / 1e3, peer_ns / figures["total"]))

        job = "-N2 -n5 --gpus-per-task=1"
        r = judge(lambda db: srun_wall(lab, job + " --dist-bind" * db, timeout=60), SRUN_GOAL, 18, 60)
        print("srun -N2 -n5 --gpus-per-task=1 true (%d triples: without, with, without again)" % r.n)
        print("  without --dist-bind: %7.1f ms (median)" % (r.without * 1e3))
        print("  with    --dist-bind: %7.1f ms (median)" % (r.with_ * 1e3))
        print("  ratio              : %7.3f (median of the triples' own ratios; 95%% %.3f-%.3f)" % (r.ratio, r.lo,
                                                                                                    r.hi))
        print("  without again / without: %.3f (the same run twice: this run's noise)" % r.aa)
    goal("srun ratio, seed layout (-N2 -n5)", shown(r), "<= %g" % SRUN_GOAL, r.verdict)


figures = plan_figures()
try:
    lab_figures(figures)
except (Exception, SystemExit) as e:  # labkit exits 77 without root or Slurm
    why = "exit %s" % e.code if isinstance(e, SystemExit) else str(e)
    goal("srun ratio, seed layout (-N2 -n5)", "not measured (lab: %s)" % why, "<= %g" % SRUN_GOAL, False)
sys.exit(1 if missed else 0)
