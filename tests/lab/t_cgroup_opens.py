#!/usr/bin/python3
"""Under device cgroups each task opens exactly the GPUs it is shown, as it
tries them (the probe opens every fake GPU: ENXIO where the device cgroup
lets it through to the driverless device, EPERM where it refuses it; on
cgroup v2 Slurm's eBPF program decides), while another job holds GPU 0 of
node2 (and one of its CPUs), so that the seed job's GPUs there are 1 and 2
by the node's numbering and 0 and 1 inside the step's cgroup: the seed job with the
packaged cli_filter (rank), isolate, --gres-flags=allow-task-sharing
(Slurm 23.11.4 and later; 22.05 refuses it) without the filter, rank and
isolate.  Every task
is also checked by check_mapping, whose check_opens asserts the same for
every job of the device-cgroup tests."""
# lab-configs: cgroup cgroup2
# lab-releases: every (behaviour that differs by release: runs on 24.11 too)
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "kit"))
from labkit import Lab, Test, bound_own, check_mapping, opens, slurm_at_least, unbound_own  # noqa: E402

JOB = "-N2 -n5 --gpus-per-task=1"
t = Test("cgroup-opens")


def hold_gpu0(lab):
    """A job that holds GPU 0 and a CPU of node2 (Slurm gives the lowest
    free index) until cancelled; its id."""
    r = lab.run(["sbatch", "--parsable", "-N1", "-n1", "-w", "node2", "--gpus=1", "-o", "/dev/null",
                 "--wrap", "sleep 3600"])
    job = r.stdout.strip().split(";")[0]
    t.ok(r.returncode == 0 and job.isdigit(), "another job asks for one GPU of node2 (%s)" % r.stderr.strip())
    deadline = time.monotonic() + 60
    state = ""
    while time.monotonic() < deadline:
        state = lab.run(["squeue", "-h", "-j", job, "-o", "%T"]).stdout.strip()
        if state == "RUNNING":
            break
        time.sleep(0.5)
    detail = lab.run(["scontrol", "show", "job", "-d", job]).stdout
    t.ok(state == "RUNNING" and "IDX:0)" in detail, "it runs and holds GPU 0 of node2 (%s)" % state)
    return job


def expect_opens(rows, want, what):
    """Each task's open() answers, by rank: want[rank] is the GPUs it opens
    (ENXIO); every other fake GPU must answer EPERM."""
    for r, gpus in sorted(want.items()):
        row = rows.get(r, {})
        said = opens(row)
        t.eq(said, {g: "ENXIO" if g in gpus else "EPERM" for g in range(4)},
             "%s: rank %d (%s/%s) opens exactly GPUs %s (shown %s)" % (what, r, row.get("SLURMD_NODENAME"),
                                                                      row.get("SLURM_LOCALID"), gpus,
                                                                      row.get("CUDA_VISIBLE_DEVICES")))


# GPU 0 of node2 is the other job's: the seed job gets 1 and 2 there.
NODE1, NODE2 = [0, 1, 2], [1, 2]
OWN = {0: [0], 1: [1], 2: [2], 3: [1], 4: [2]}
ALL = {0: NODE1, 1: NODE1, 2: NODE1, 3: NODE2, 4: NODE2}

with Lab(cli_filter=False) as lab:
    print("-- no cli_filter: --gres-flags=allow-task-sharing; another job holds GPU 0 of node2")
    hold = hold_gpu0(lab)
    sharing = JOB + " --gres-flags=allow-task-sharing"
    if not slurm_at_least("23.11"):
        r = lab.srun(sharing + " --dist-bind", ["/bin/echo", "RAN"])
        t.ok(r.returncode != 0 and "Invalid --gres-flags specification" in r.stderr,
             "Slurm before 23.11.4 refuses --gres-flags=allow-task-sharing (%s)" % r.stderr.strip()[-200:])
    else:
        base = lab.table(sharing)
        expect_opens(base, ALL, "allow-task-sharing without --dist-bind: every step GPU of the node")
        print("  (Slurm's own lists: %s)" % [base[r]["CUDA_VISIBLE_DEVICES"] for r in sorted(base)])
        for mode in ("rank", "isolate"):
            fixed = lab.table(sharing + " --dist-bind=" + mode)
            check_mapping(t, base, fixed, mode, unbound_own(base))
            # dist-bind narrows what isolate shows, not what the cgroup lets through.
            expect_opens(fixed, ALL, mode + ", allow-task-sharing")
    lab.run(["scancel", hold])
    lab.nodes_settled()
with Lab() as lab:
    print("-- the packaged cli_filter; another job holds GPU 0 of node2")
    hold = hold_gpu0(lab)
    base = lab.table(JOB)
    t.eq(base[3].get("ALLOC_") if base else None, "1-2", "the step's GPUs on node2 are 1-2 (slurmctld)")
    expect_opens(base, OWN, "without --dist-bind, bound per task")
    t.eq([base[r]["CUDA_VISIBLE_DEVICES"] for r in sorted(base)], ["0"] * 5,
         "Slurm numbers each task's GPU inside its cgroup: 0")
    fixed = lab.table(JOB + " --dist-bind")
    check_mapping(t, base, fixed, "rank", unbound_own(base))
    expect_opens(fixed, ALL, "rank (the filter added --gpu-bind=none)")
    # Inside the step's cgroup node2's GPUs 1 and 2 are CUDA devices 0 and
    # 1 (not 1 and 2): device LOCAL_RANK is each task's own.
    t.eq([fixed[r]["CUDA_VISIBLE_DEVICES"] for r in sorted(fixed)], ["0,1,2"] * 3 + ["0,1"] * 2,
         "rank: the lists in the cgroup's numbering")
    iso = lab.table(JOB + " --dist-bind=isolate")
    check_mapping(t, base, iso, "isolate", bound_own(base))
    expect_opens(iso, OWN, "isolate")
    lab.run(["scancel", hold])
    lab.nodes_settled()

t.done()
