#!/usr/bin/python3
"""What differs between Slurm releases, measured on the lab: one row per
behaviour dist-bind depends on, stating what each release does.  The test
runs on the release of its configuration (this machine's, or "24.11"
inside its root) and checks that release's cells; a release without a cell
fails and prints what it measured, so the row can be completed.  README's
release table is these rows (plus what was read from Slurm's history)."""
# lab-configs: plain cgroup cgroup2
# lab-releases: every (behaviour that differs by release: runs on 24.11 too)
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "kit"))
from labkit import BUILD, HERE, Lab, PROBES, Test, lab_config  # noqa: E402
import releasekit  # noqa: E402

RELEASE = releasekit.native()
# Device cgroups, on cgroup v1 or (in the guest) v2.
CGROUP = bool({"cgroup", "cgroup2"} & lab_config())
V2 = "cgroup2" in lab_config()
t = Test("releases (Slurm %s%s)" % (RELEASE, ", device cgroups" + (" (cgroup v2)" if V2 else "") if CGROUP else ""))

# Every task: "REL rank host/local VAR=value ... open=N,N," where open lists
# the fake GPUs (DIR/dev/nvidiaN) it can open: a character device without a
# driver gives ENXIO where the device cgroup allows it, EPERM where not.
PROBE = r'''
line="REL $SLURM_PROCID $(hostname)/$SLURM_LOCALID"
for v in CUDA_VISIBLE_DEVICES SLURM_STEP_GPUS SLURMD_TRES_BIND SLURM_GPUS_PER_TASK SLURM_TRES_PER_TASK; do
    [ -n "${!v+x}" ] && line+=" $v=${!v}"
done
open=""
for f in "$1"/nvidia*; do
    case $( (exec 3<"$f") 2>&1 ) in ""|*"No such device"*) open+="${f##*nvidia}," ;; esac
done
echo "$line open=$open"
'''


def tasks(lab, args, script=PROBE):
    """{rank: {var: value, "open": "0,1,"}} of a step, and srun's result."""
    r = lab.srun(args, ["bash", "-c", script, "probe", os.path.join(lab.dir, "dev")])
    rows = {}
    for line in r.stdout.splitlines():
        if line.startswith("REL "):
            f = line.split()
            rows[int(f[1])] = dict([("host", f[2])] + [kv.split("=", 1) for kv in f[3:]])
    return rows, r


def rank(rows, r, *names):
    row = rows.get(r, {})
    return tuple(row.get(n) for n in names) if len(names) > 1 else row.get(names[0])


def check(name, measured, cells):
    """One row: the cell of this release must be what was measured."""
    if RELEASE not in cells:
        t.ok(False, "%s: no cell for Slurm %s; measured %r" % (name, RELEASE, measured))
    else:
        t.eq(measured, cells[RELEASE], "%s [Slurm %s]" % (name, RELEASE))


def refused(r, text):
    return "refused: " + text if r.returncode != 0 and text in r.stderr else "accepted (rc %d)" % r.returncode


def build_trace(lab):
    """tests/lab/kit/helpers/spank_trace.c, built against this release's spank.h
    (in the cgroup v2 guest, which has no compiler, as the Makefile built it
    for this release: $(B)/lab/spank_trace.so)."""
    so = os.path.join(lab.dir, "spank_trace.so")
    if not shutil.which("cc"):
        built = os.path.join(BUILD, "lab", "spank_trace.so")
        t.ok(os.path.exists(built), "no compiler here: the trace plugin built for this release, %s" % built)
        if os.path.exists(built):
            shutil.copy(built, so)
        return so
    cc = subprocess.run(["cc", "-shared", "-fPIC", "-Wall", "-Wextra", "-Werror", "-o", so,
                         os.path.join(HERE, "helpers", "spank_trace.c")], capture_output=True, text=True)
    t.eq(cc.returncode, 0, "the trace plugin builds against this release's spank.h %s" % cc.stderr.strip()[-300:])
    return so


def traced_env(path, callback):
    """(CUDA_VISIBLE_DEVICES, SLURM_STEP_GPUS) as the trace plugin saw them
    in `callback`; where the calls disagree, their values joined by '|'."""
    lines = open(path).read().splitlines() if os.path.exists(path) else []
    calls = [dict(kv.split("=", 1) for kv in l.split()[1:]) for l in lines if l.startswith(callback + " ")]
    return tuple("|".join(sorted({c.get(v, "?") for c in calls})) for v in ("CUDA_VISIBLE_DEVICES", "SLURM_STEP_GPUS"))


SEED = "-N2 -n5 --gpus-per-task=1"

with Lab() as lab:
    if not CGROUP:
        print("-- GPU variables (task/none)")
        rows, _ = tasks(lab, SEED)
        check("per-task binding: rank 1's CUDA_VISIBLE_DEVICES, SLURM_STEP_GPUS, SLURMD_TRES_BIND",
              rank(rows, 1, "CUDA_VISIBLE_DEVICES", "SLURM_STEP_GPUS", "SLURMD_TRES_BIND"),
              {"22.05": ("1", "1", "gpu:per_task:1"), "24.11": ("1", "1", "gres/gpu:per_task:1"),
               "26.05": ("1", "1", "gres/gpu:per_task:1")})
        rows, _ = tasks(lab, SEED + " --gpu-bind=none")
        check("--gpu-bind=none: GPU variables in a task of node1",
              rank(rows, 1, "CUDA_VISIBLE_DEVICES", "SLURM_STEP_GPUS", "SLURMD_TRES_BIND"),
              {"22.05": (None, None, "gpu:none"), "24.11": ("0,1,2", "0,1,2", "gres/gpu:none"),
               "26.05": ("0,1,2", "0,1,2", "gres/gpu:none")})
        # A node's only task: 22.05 to 25.05 skip per-task binding there;
        # 25.11 binds it (26.05 measured here).
        rows, _ = tasks(lab, "-N1 -n1 --gpus-per-node=2 --gpu-bind=map_gpu:1")
        check("a node's only task, --gpu-bind=map_gpu:1 of 2 GPUs: its CUDA_VISIBLE_DEVICES",
              rank(rows, 0, "CUDA_VISIBLE_DEVICES"), {"22.05": "0,1", "24.11": "0,1", "26.05": "1"})

        print("-- --gpus-per-task as the step and a batch script see it")
        check("srun --gpus-per-task=1: SLURM_GPUS_PER_TASK, SLURM_TRES_PER_TASK in the task",
              rank(tasks(lab, "-N1 -n2 --gpus-per-task=1")[0], 0, "SLURM_GPUS_PER_TASK", "SLURM_TRES_PER_TASK"),
              {"22.05": (None, None), "24.11": (None, "gres/gpu=1"), "26.05": (None, "gres/gpu=1")})
        script = os.path.join(lab.dir, "gpt.sh")
        out = os.path.join(lab.dir, "gpt.out")
        with open(script, "w") as f:
            f.write("#!/bin/bash\necho BATCH ${SLURM_GPUS_PER_TASK-unset} ${SLURM_TRES_PER_TASK-unset}\n")
        r = lab.run(["sbatch", "--wait", "-o", out, "-N1", "-n2", "--gpus-per-task=1", script], timeout=120)
        text = open(out).read() if os.path.exists(out) else r.stderr
        batch = [l.split()[1:] for l in text.splitlines() if l.startswith("BATCH")]
        check("sbatch --gpus-per-task=1: SLURM_GPUS_PER_TASK, SLURM_TRES_PER_TASK in the script",
              batch[0] if batch else text.strip(),
              {"22.05": ["1", "unset"], "24.11": ["unset", "gres/gpu=1"], "26.05": ["unset", "gres/gpu=1"]})

        print("-- options srun accepts")
        r = lab.srun("-N2 -n5 -m arbitrary -w node2,node1,node2,node1,node2", ["true"])
        check("-N with -m arbitrary", refused(r, "--nodes is incompatible with --distribution=arbitrary"),
              {"22.05": "accepted (rc 0)", "24.11": "refused: --nodes is incompatible with --distribution=arbitrary",
               "26.05": "refused: --nodes is incompatible with --distribution=arbitrary"})
        r = lab.srun("-N1 -n1 --gpus-per-task=1 --tres-bind=gres/gpu:none", ["true"])
        check("--tres-bind", refused(r, "unrecognized option"),
              {"22.05": "refused: unrecognized option", "24.11": "accepted (rc 0)", "26.05": "accepted (rc 0)"})
        r = lab.run(["srun", "--mpi=list"])
        versions = sorted(w for w in (r.stdout + r.stderr).split() if w.startswith("pmix_"))
        check("srun --mpi=list: the PMIx plugin", versions, {"22.05": ["pmix_v4"], "24.11": ["pmix_v5"], "26.05": []})

        print("-- SPANK: option callbacks in slurmstepd")
        trace_so = build_trace(lab)
        trace = os.path.join(lab.dir, "trace.log")
        lab.plugstack(raw="required %s\noptional %s file=%s" % (lab.plugin, trace_so, trace))
        r = lab.srun("-N1 -n1 --trace-probe", ["true"])
        lines = open(trace).read().splitlines() if os.path.exists(trace) else []
        by_pid = {}
        for l in lines:
            f = dict(kv.split("=") for kv in l.split()[1:])
            if f["remote"] == "1":
                by_pid[f["pid"]] = by_pid.get(f["pid"], 0) + 1
        check("option callbacks per slurmstepd for one option (remote)", sorted(by_pid.values()),
              {"22.05": [2], "24.11": [1], "26.05": [1]})
        t.eq(sum(1 for l in lines if "remote=0" in l), 1, "and once in srun")
        lab.plugstack("")

        print("-- an optional plugin whose .so is missing (roll-out: installed on some nodes only)")
        missing = os.path.join(lab.dir, "no-such-plugin.so")
        lab.plugstack(raw="optional %s" % missing)
        r = lab.srun("-N1 -n1", ["true"])
        said = [l for l in r.stderr.splitlines() if missing in l]
        check("optional plugin missing: srun runs the step; what it prints at the default log level",
              (r.returncode, "names the .so" if said else "nothing"),
              {"22.05": (0, "names the .so"), "24.11": (0, "names the .so"), "26.05": (0, "nothing")})
        lab.plugstack("")

        print("-- Debian's PyTorch on this release's distribution")
        r = lab.srun("-t 2 -N1 -n2 --dist-bind", ["/usr/bin/python3", os.path.join(PROBES, "torch_allreduce.py")],
                     timeout=240)
        if "without libuv" in r.stderr:
            torch = "env:// needs USE_LIBUV=0"
        else:
            torch = "env:// works" if r.returncode == 0 and r.stdout.count("TORCH ") == 2 else r.stderr[-300:]
        check("PyTorch env:// rendezvous under --dist-bind", torch,
              {"22.05": "env:// works", "24.11": "env:// needs USE_LIBUV=0", "26.05": "env:// needs USE_LIBUV=0"})
    else:
        print("-- device cgroups (task/cgroup, ConstrainDevices=yes)")
        rows, _ = tasks(lab, SEED)
        check("per-task binding: rank 1's CUDA_VISIBLE_DEVICES, SLURM_STEP_GPUS, GPUs it can open",
              rank(rows, 1, "CUDA_VISIBLE_DEVICES", "SLURM_STEP_GPUS", "open"),
              {"22.05": ("0", "0", "1,"), "24.11": ("0", "0", "1,"), "26.05": ("0", "0", "1,")})
        rows, _ = tasks(lab, "-N1 -n1 --gpus-per-node=2 --gpu-bind=map_gpu:1")
        check("a node's only task, --gpu-bind=map_gpu:1 of 2 GPUs: its CUDA_VISIBLE_DEVICES, GPUs it can open",
              rank(rows, 0, "CUDA_VISIBLE_DEVICES", "open"),
              {"22.05": ("0,1", "0,1,"), "24.11": ("0,1", "0,1,"), "26.05": ("0", "1,")})
        rows, _ = tasks(lab, SEED + " --gpu-bind=none")
        check("--gpu-bind=none: rank 1's CUDA_VISIBLE_DEVICES, SLURM_STEP_GPUS, GPUs it can open",
              rank(rows, 1, "CUDA_VISIBLE_DEVICES", "SLURM_STEP_GPUS", "open"),
              {"22.05": (None, None, "0,1,2,"), "24.11": ("0,1,2", "0,1,2", "0,1,2,"),
               "26.05": ("0,1,2", "0,1,2", "0,1,2,")})
        # What the plugin sees: the step's environment in user_init (once
        # per node) and task_init (per task), through a second plugin.
        trace_so = build_trace(lab)
        trace = os.path.join(lab.dir, "trace.log")
        lab.plugstack(raw="required %s\noptional %s file=%s vars=CUDA_VISIBLE_DEVICES,SLURM_STEP_GPUS"
                      % (lab.plugin, trace_so, trace))
        for args, cells in (
                ("", {"22.05": ("0,1,2", "0,1,2", "0", "0"), "24.11": ("0,1,2", "0,1,2", "0", "0"),
                      "26.05": ("0,1,2", "0,1,2", "0", "0")}),
                (" --gpu-bind=none", {"22.05": ("0,1,2", "0,1,2", "-", "-"),
                                      "24.11": ("0,1,2", "0,1,2", "0,1,2", "0,1,2"),
                                      "26.05": ("0,1,2", "0,1,2", "0,1,2", "0,1,2")})):
            if os.path.exists(trace):
                os.unlink(trace)
            lab.srun("-N1 -n3 --gpus-per-task=1" + args, ["true"])
            got = traced_env(trace, "user_init") + traced_env(trace, "task_init")
            check("-N1 -n3 --gpus-per-task=1%s: CUDA_VISIBLE_DEVICES, SLURM_STEP_GPUS in user_init; "
                  "in task_init (every task)" % args, got, cells)
        lab.plugstack("")
        rows, r = tasks(lab, SEED + " --gres-flags=allow-task-sharing")
        check("--gres-flags=allow-task-sharing: rank 1's CUDA_VISIBLE_DEVICES, SLURM_STEP_GPUS, GPUs it can open",
              rank(rows, 1, "CUDA_VISIBLE_DEVICES", "SLURM_STEP_GPUS", "open") if rows else
              refused(r, "Invalid --gres-flags specification"),
              {"22.05": "refused: Invalid --gres-flags specification", "24.11": ("1", "1", "0,1,2,"),
               "26.05": ("1", "1", "0,1,2,")})
    ok, states = lab.nodes_settled()
    t.ok(ok, "no node drained or down (sinfo: %s)" % states)
t.done()
