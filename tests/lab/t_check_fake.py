#!/usr/bin/python3
"""dist-bind-check on the lab with fake GPUs behind the fake CUDA driver
(tests/gpu/fake, loaded through LD_LIBRARY_PATH as a real one is): the
seed job `srun -N2 -n5 --gpus-per-task=1 --dist-bind dist-bind-check`
under --mpi=pmix (where Slurm has it), pmi2 and none passes, each rank on its own GPU by bus id,
with an NCCL all-reduce through the fake NCCL whose sum comes from the
ranks' real buffers; without --dist-bind, with ranks sharing a GPU, and
with one rank's NCCL failing, it names what is wrong and fails."""
# lab-configs: plain cgroup cgroup2
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "kit"))
from labkit import Lab, Test  # noqa: E402
from runtimekit import BUILD, CHECK, check_rows, need  # noqa: E402

FAKE = os.path.join(BUILD, "fake")
need(CHECK, os.path.join(FAKE, "libcudart.so.13"), os.path.join(FAKE, "libnccl.so.2"))
t = Test("check-fake")
SEED = "-N2 -n5 --gpus-per-task=1"
ARGS = ["--bytes", "1048576", "--iters", "3"]
# rank: (host, local, device, gpu as Slurm names it, bus id of that GPU)
WANT = {0: ("node1", "0/3", "0", "0", "0000:10:00.0"), 1: ("node1", "1/3", "1", "1", "0000:11:00.0"),
        2: ("node1", "2/3", "2", "2", "0000:12:00.0"), 3: ("node2", "0/2", "0", "0", "0000:10:00.0"),
        4: ("node2", "1/2", "1", "1", "0000:11:00.0")}

state = tempfile.mkdtemp(prefix="fakegpu-lab.")
os.chmod(state, 0o777)
try:
    with Lab() as lab:
        # The node's four GPUs are the lab's device nodes (c 195 N).
        fake = {"LD_LIBRARY_PATH": FAKE, "FAKEGPU_STATE": state, "DIST_BIND_TIMEOUT": "30",
                "FAKEGPU_DEVICES": "4*file=%s/dev/nvidia%%i" % lab.dir}
        for mpi, boot in lab.bootstraps():
            what = "--mpi=%s: " % mpi
            r = lab.srun("%s --dist-bind --mpi=%s" % (SEED, mpi), [CHECK] + ARGS, env=fake)
            t.eq(r.returncode, 0, what + "every task exits 0 (%s)" % (r.stdout + r.stderr).strip()[-400:])
            rows = check_rows(r.stdout)
            for rank, (host, local, dev, gpu, bus) in WANT.items():
                row = rows.get(rank, {})
                t.eq((row.get("host"), row.get("local"), row.get("device"), row.get("gpu"), row.get("bus"),
                      row.get("flags")), (host, local, dev, gpu, bus, "ok"), what + "rank %d's row" % rank)
            t.ok("exchange: ok (allgather, broadcast from rank 4, barrier over %s)" % boot in r.stdout,
                 what + "exchange checked")
            t.ok("NCCL all-reduce: 1048576 bytes x 3 on 5 ranks, result correct on every rank" in r.stdout,
                 what + "NCCL all-reduce through the fake, result checked")
            t.ok("GPU checks skipped" not in r.stdout, what + "the GPU checks ran")
            t.ok("dist-bind-check: all checks passed" in r.stdout, what + "verdict")

        # Without --dist-bind each task sees only its own GPU, as device 0.
        # There is no step secret without the plugin: the opt-out.
        r = lab.srun(SEED + " --mpi=none", [CHECK] + ARGS,
                     env=dict(fake, MASTER_ADDR="node1", MASTER_PORT="29778", DIST_BIND_TCP_INSECURE="1"))
        flags = {k: v["flags"] for k, v in check_rows(r.stdout).items()}
        t.ok(r.returncode != 0 and all("NO-SUCH-DEVICE" in flags.get(k, "") for k in (1, 2, 4))
             and flags.get(0) == "ok" and flags.get(3) == "ok",
             "without --dist-bind: ranks 1, 2, 4 flagged, the step fails (%s)" % flags)
        # Slurm numbers rank 1's GPU 1 inside its device cgroup, where it is 0.
        own = "0" if lab.cgroup else "1"
        t.ok("PROBLEM: rank 1 (node1): device 1 (from SLURM_LOCALID) does not exist: CUDA sees 1 device "
             "(CUDA_VISIBLE_DEVICES=\"%s\")" % own in r.stdout, "and CUDA's own view is named (%s)" % r.stdout.strip()[-300:])

        # Every task on device 0 of its node's four GPUs: they share it.
        r = lab.srun("-N2 -n5 --gpus-per-node=4 --mpi=" + lab.pmi(), [CHECK] + ARGS, env=dict(fake, DIST_BIND_DEVICE="0"))
        t.eq({k: v["flags"] for k, v in check_rows(r.stdout).items()}, {k: "DUPLICATE" for k in range(5)},
             "DIST_BIND_DEVICE=0 everywhere: every rank flagged")
        t.ok("PROBLEM: ranks 0 and 1 would both use GPU GPU-" in r.stdout and "(0000:10:00.0) on node1" in r.stdout,
             "named by the GPU's UUID and bus id")
        t.ok(r.returncode != 0, "and the step fails")

        # Rank 3's all-reduce fails: named, and the step fails.
        r = lab.srun(SEED + " --dist-bind --mpi=" + lab.pmi(), [CHECK] + ARGS, env=dict(fake, FAKEGPU_NCCL="fail-allreduce=3"))
        t.ok(r.returncode != 0 and "rank 3 on node2: ncclAllReduce: unhandled system error" in r.stdout
             and "injected all-reduce failure on rank 3" in r.stdout,
             "rank 3's NCCL fails: named on rank 0's report (%s)" % r.stdout.strip()[-300:])
finally:
    shutil.rmtree(state, ignore_errors=True)
t.done()
