#!/usr/bin/python3
"""libdistbind on the lab: the exchange over Slurm's PMIx, Slurm's PMI2 and
TCP; the place from the plugin, from Slurm and from PMIx; PMIx and PMI2
timeouts; a second handle in one process; and the README's example
program, built against `make install` with pkg-config, under all three."""
# lab-releases: every (behaviour that differs by release: runs on 24.11 too)
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "kit"))
from labkit import Lab, Test  # noqa: E402
from runtimekit import WORKER, Installed, need, worker_results as results  # noqa: E402

need(WORKER)
t = Test("runtime-lab")
SEED = "-N2 -n5 --gpus-per-task=1"


with Lab() as lab, Installed() as inst:
    for mpi, boot in lab.bootstraps():
        what = "--mpi=%s: " % mpi
        r = lab.srun("%s --dist-bind --mpi=%s" % (SEED, mpi), [WORKER, "roundtrip"], env={"DIST_BIND_TIMEOUT": "30"})
        res = results(r.stdout)
        t.eq(sorted(res), [0, 1, 2, 3, 4], what + "every rank's broadcasts and allgathers were right (%s)" % r.stdout.strip()[-300:])
        t.eq({x["bootstrap"] for x in res.values()}, {boot}, what + "chosen automatically")
        t.eq({x["source"] for x in res.values()}, {"dist-bind"}, what + "place from the plugin's variables")

        # The example, as a user builds it.
        r = lab.srun("%s --dist-bind --mpi=%s" % (SEED, mpi), [inst.example], env={"LD_LIBRARY_PATH": inst.libdir})
        t.eq(r.returncode, 0, what + "the example exits 0 (%s)" % r.stderr.strip()[-300:])
        for rank, (local, node) in {0: ("0/3", 0), 2: ("2/3", 0), 4: ("1/2", 1)}.items():
            line = "rank %d/5 local %s node %d device %s (place from dist-bind, exchange over %s)" % (
                rank, local, node, local.split("/")[0], boot)
            t.ok(line in r.stdout, what + "example: " + line)
        t.ok("rank 3 runs on node2" in r.stdout and "rank 0 runs on node1" in r.stdout, what + "example: hosts gathered")
        t.ok("no GPU: dist-bind: rank 0:" in r.stdout, what + "example: says there is no GPU")

    # The step's secret: srun draws one per step, every task of the step
    # gets it, and libdistbind takes it out of the program's environment.
    def secrets():
        r = lab.srun(SEED + " --dist-bind --mpi=none", ["sh", "-c", 'echo "SECRET $SLURM_PROCID ${DIST_BIND_SECRET-unset}"'])
        return {int(l.split()[1]): l.split()[2] for l in r.stdout.splitlines() if l.startswith("SECRET ")}
    first, second = secrets(), secrets()
    t.eq(sorted(first), [0, 1, 2, 3, 4], "every task of the step has DIST_BIND_SECRET")
    t.ok(len(set(first.values())) == 1 and all(len(v) == 64 and int(v, 16) >= 0 for v in first.values()),
         "one secret, 64 hex digits, for the whole step")
    t.ok(set(first.values()).isdisjoint(second.values()), "the next step gets another")
    r = lab.srun(SEED + " --dist-bind --mpi=none", [WORKER, "roundtrip"])
    t.eq({x.get("secret_env") for x in results(r.stdout).values()}, {"0"},
         "libdistbind took DIST_BIND_SECRET out of the program's environment")
    # Without it the TCP bootstrap says what to do; the opt-out runs without.
    r = lab.srun(SEED + " --dist-bind --mpi=none", ["env", "-u", "DIST_BIND_SECRET", WORKER, "roundtrip"])
    errs = [l for l in r.stdout.splitlines() if l.startswith("ERR ")]
    t.ok(len(errs) == 5 and all("DISTBIND_ERR_ENV" in l and "DIST_BIND_SECRET is not set" in l for l in errs),
         "TCP without the secret: a clear error on every rank (%s)" % errs[:1])
    r = lab.srun(SEED + " --dist-bind --mpi=none", ["env", "-u", "DIST_BIND_SECRET", "DIST_BIND_TCP_INSECURE=1",
                                                    WORKER, "roundtrip"])
    t.eq(sorted(results(r.stdout)), [0, 1, 2, 3, 4], "DIST_BIND_TCP_INSECURE=1: the exchange runs unauthenticated")
    t.ok("warning: DIST_BIND_TCP_INSECURE=1" in r.stderr, "... and rank 0 warns about it")

    # The override wins over the automatic choice.
    pmi = lab.pmi()
    r = lab.srun(SEED + " --dist-bind --mpi=" + pmi, [WORKER, "roundtrip"], env={"DIST_BIND_BOOTSTRAP": "tcp"})
    t.eq({x["bootstrap"] for x in results(r.stdout).values()}, {"tcp"}, "DIST_BIND_BOOTSTRAP=tcp under --mpi=" + pmi)
    r = lab.srun(SEED + " --dist-bind --mpi=none", [WORKER, "roundtrip"], env={"DIST_BIND_BOOTSTRAP": "pmix"})
    t.ok("DIST_BIND_BOOTSTRAP=pmix, but this task has no PMIx server" in r.stdout, "forcing pmix without it: clear error")

    # Without the plugin: Slurm's variables; without those: PMIx itself.
    r = lab.srun(SEED + " --mpi=" + pmi, [WORKER, "roundtrip"])
    res = results(r.stdout)
    t.eq({x["source"] for x in res.values()}, {"slurm"}, "no plugin: place from Slurm's variables")
    t.eq(len(res), 5, "no plugin: all 5 ranks fine")
    if pmi == "pmix":
        r = lab.srun(SEED + " --mpi=pmix", ["env", "-u", "SLURM_PROCID", WORKER, "roundtrip"])
        res = results(r.stdout)
        t.eq({x["source"] for x in res.values()}, {"pmix"}, "no RANK, no SLURM_PROCID: place from PMIx")
        t.eq(sorted(res), [0, 1, 2, 3, 4], "PMIx gives every rank its place")

        # A rank that never reaches the barrier, under each PMI.
        r = lab.srun(SEED + " --dist-bind --mpi=pmix", [WORKER, "late", "6", "3"], env={"DIST_BIND_TIMEOUT": "3"})
        errs = [l for l in r.stdout.splitlines() if l.startswith("ERR ")]
        t.ok(len(errs) >= 4 and all("DISTBIND_ERR_TIMEOUT" in l for l in errs),
             "pmix: the others time out (%s)" % errs[:1])
        t.ok(sum("rank 3 did not arrive within 3 s" in l for l in errs) >= 4, "pmix: and name rank 3")
    r = lab.srun(SEED + " --dist-bind --mpi=pmi2", [WORKER, "late", "6", "3"], env={"DIST_BIND_TIMEOUT": "3"})
    errs = [l for l in r.stdout.splitlines() if l.startswith("ERR ")]
    t.ok(len(errs) >= 4 and all("not every rank arrived within 3 s" in l and "PMI2 cannot tell which" in l for l in errs),
         "pmi2: the others time out, and say PMI2 cannot name the missing rank (%s)" % errs[:1])
    # A second handle in the same process, after the first was destroyed,
    # comes up over the same exchange, also when the last rank destroys its
    # first handle a second after the others began their second set-up
    # (PMI2 cannot be initialised again after PMI2_Finalize, and a PMIx
    # server drops a finalising client from the fences under way: both
    # stay connected for the process).
    for mpi, boot in lab.bootstraps():
        r = lab.srun(SEED + " --dist-bind --mpi=" + mpi, [WORKER, "twice", "1"], env={"DIST_BIND_TIMEOUT": "30"})
        res = results(r.stdout)
        t.eq((sorted(res), {x["bootstrap"] for x in res.values()}), ([0, 1, 2, 3, 4], {boot}),
             "--mpi=%s: destroy, then a new handle over %s (%s)" % (mpi, boot, r.stdout.strip()[-300:]))
    # After a PMI2 timeout a helper thread is still inside PMI2: a new handle
    # in that process is refused, never run beside it.
    r = lab.srun(SEED + " --dist-bind --mpi=pmi2", [WORKER, "again", "6", "3"], env={"DIST_BIND_TIMEOUT": "3"})
    errs = [l for l in r.stdout.splitlines() if l.startswith("ERR ")]
    t.ok(len(errs) == 4 and all(l.startswith("ERR DISTBIND_ERR_STATE") and "PMI2 is unusable in this process" in l
                                for l in errs),
         "pmi2: init after a timed-out collective is refused on the 4 ranks that timed out (%s)" % errs[:1])
    # Disagreeing sizes reach every rank as an error, also through PMI.
    for mpi in [m for m, _ in lab.bootstraps() if m != "none"]:
        r = lab.srun(SEED + " --dist-bind --mpi=" + mpi, [WORKER, "badlen"], env={"DIST_BIND_TIMEOUT": "10"})
        errs = [l for l in r.stdout.splitlines() if l.startswith("ERR DISTBIND_ERR_PEER")]
        t.ok(len(errs) == 5 and all(" passed 48 bytes" in l or "expected 48" in l for l in errs),
             "%s: a size mismatch fails every rank (%s)" % (mpi, errs[:1]))
t.done()
