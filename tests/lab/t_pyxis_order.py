#!/usr/bin/python3
"""Beside pyxis, in both plugstack.conf orders, with a stand-in that does
to the task's environment what pyxis does (tests/lab/kit/helpers/
spank_container_standin.c: in task_init it copies an "image environment"
over the task's, name by name; it enters nothing).  The image sets what
images and enroot's PyTorch hook set: CUDA_VISIBLE_DEVICES (naming every
GPU of the node, more than the step has), LOCAL_RANK, MASTER_ADDR,
MASTER_PORT, WORLD_SIZE.

- dist-bind after the stand-in (the packaged order): the program sees
  dist-bind's values, exactly those of the same step without the
  stand-in; the image's GPU list never widens what a task is shown;
  verbose says, once per task, what the plugin before it changed.
- dist-bind before it: the program sees the image's values, and
  dist-bind-check flags each task OVERWRITTEN, naming the variables.
- what a plugin listed before dist-bind sees (tests/lab/kit/helpers/
  spank_trace.c): nothing of dist-bind's in its user_init; in its
  task_init the variables every task of the node shares, which dist-bind
  wrote once in its user_init, and none of the task's own yet."""
# lab-configs: plain
# Releases: the default, 22.05 and 26.05 (plugstack order and task_init are Slurm's; 24.11 was run by hand: passed)
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "kit"))
from labkit import HERE, Lab, PROBES, Test, parse_probe  # noqa: E402
from runtimekit import CHECK, check_rows, need  # noqa: E402

need(CHECK)
t = Test("pyxis-order")
SEED = "-N2 -n5 --gpus-per-task=1"
IMAGE = {"CUDA_VISIBLE_DEVICES": "0,1,2,3", "LOCAL_RANK": "0", "MASTER_ADDR": "image-master",
         "MASTER_PORT": "61234", "WORLD_SIZE": "1"}
MINE = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "NODE_RANK", "MASTER_ADDR", "MASTER_PORT",
        "CUDA_VISIBLE_DEVICES", "DIST_BIND_DEVICE", "DIST_BIND_GPUS")


def build_standin(lab):
    so = os.path.join(lab.dir, "spank_container_standin.so")
    cc = subprocess.run(["cc", "-shared", "-fPIC", "-Wall", "-Wextra", "-Werror", "-o", so,
                         os.path.join(HERE, "helpers", "spank_container_standin.c")], capture_output=True, text=True)
    t.eq(cc.returncode, 0, "the stand-in builds against this release's spank.h %s" % cc.stderr.strip()[-300:])
    return so


def build_trace(lab):
    so = os.path.join(lab.dir, "spank_trace.so")
    cc = subprocess.run(["cc", "-shared", "-fPIC", "-Wall", "-Wextra", "-Werror", "-o", so,
                         os.path.join(HERE, "helpers", "spank_trace.c")], capture_output=True, text=True)
    t.eq(cc.returncode, 0, "the trace plugin builds against this release's spank.h %s" % cc.stderr.strip()[-300:])
    return so


def port(rows):
    return {r.get("MASTER_PORT") for r in rows.values()}


with Lab() as lab:
    standin = build_standin(lab)
    image = os.path.join(lab.dir, "image.env")
    with open(image, "w") as f:
        f.write("".join("%s=%s\n" % kv for kv in IMAGE.items()))
    before_line = "optional %s env=%s" % (standin, image)
    ours = "required %s" % lab.plugin

    print("-- without the stand-in: what dist-bind gives each task")
    lab.plugstack(raw="%s\n%s" % (ours, before_line))
    base = lab.table(SEED + " --dist-bind")
    t.eq(sorted(base), [0, 1, 2, 3, 4], "five tasks")

    print("-- a plugin before dist-bind: the node's variables are there in task_init, the task's not yet")
    trace = os.path.join(lab.dir, "trace.log")
    seen = ("WORLD_SIZE", "MASTER_ADDR", "APPTAINERENV_WORLD_SIZE", "CUDA_DEVICE_ORDER", "RANK", "LOCAL_RANK",
            "DIST_BIND_SET")
    lab.plugstack(raw="optional %s file=%s vars=%s\n%s" % (build_trace(lab), trace, ",".join(seen), ours))
    r = lab.srun(SEED + " --dist-bind", [os.path.join(PROBES, "probe.sh")])
    lines = open(trace).read().splitlines() if os.path.exists(trace) else []

    def traced(callback):
        return [dict(kv.split("=", 1) for kv in l.split()[1:] if kv.split("=", 1)[0] in seen)
                for l in lines if l.startswith(callback + " ")]
    t.eq(len(traced("user_init")), 2, "one user_init per node (rc %d, %s)" % (r.returncode, r.stderr.strip()[-300:]))
    for got in traced("user_init"):
        t.eq(got, {v: "-" for v in seen}, "user_init before dist-bind's: nothing of dist-bind's")
    t.eq(len(traced("task_init")), 5, "one task_init per task")
    for got in traced("task_init"):
        t.eq(got, {"WORLD_SIZE": "5", "MASTER_ADDR": "node1", "APPTAINERENV_WORLD_SIZE": "5",
                   "CUDA_DEVICE_ORDER": "PCI_BUS_ID", "RANK": "-", "LOCAL_RANK": "-", "DIST_BIND_SET": "-"},
             "task_init before dist-bind's: the node's variables from dist-bind's user_init, no task's own")
    t.eq(sorted(parse_probe(r.stdout)), [0, 1, 2, 3, 4], "and the step runs")

    print("-- dist-bind after the stand-in (the packaged order)")
    lab.plugstack(raw="%s\n%s" % (before_line, ours))
    r = lab.srun(SEED + " --standin-image --dist-bind=rank,verbose", [os.path.join(PROBES, "probe.sh")])
    after = parse_probe(r.stdout)
    t.eq(sorted(after), [0, 1, 2, 3, 4], "five tasks (stderr: %s)" % r.stderr.strip()[-300:])
    for rank, row in sorted(after.items()):
        b = base.get(rank, {})
        # MASTER_PORT is hashed from the step id: the same in every task of
        # the step, compared below.
        t.eq({v: row.get(v) for v in MINE if v != "MASTER_PORT"}, {v: b.get(v) for v in MINE if v != "MASTER_PORT"},
             "rank %d sees dist-bind's values, as without the stand-in" % rank)
        visible = (row.get("CUDA_VISIBLE_DEVICES") or "").split(",")
        t.ok("3" not in visible, "rank %d: the image's GPU 3 (not the step's) is not shown (%s)" % (rank, visible))
    t.eq(len(port(after)), 1, "one MASTER_PORT in the step")
    t.ok("61234" not in port(after), "dist-bind's MASTER_PORT, not the image's")
    for rank in range(5):
        lines = [l for l in r.stderr.splitlines() if "dist-bind: rank=%d/5 " % rank in l]
        t.eq(len(lines), 1, "rank %d: one verbose line" % rank)
        line = lines[0] if lines else ""
        t.ok("a plugin that ran before dist-bind in task_init changed WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, "
             "MASTER_PORT" in line, "rank %d: verbose names what the plugin before it changed" % rank)
        t.ok("CUDA_VISIBLE_DEVICES=\"0,1,2,3\" names GPU" in line and "ignored" in line,
             "rank %d: verbose says the image's GPU list was ignored" % rank)
    r = lab.srun(SEED + " --standin-image --dist-bind --mpi=" + lab.pmi(), [CHECK], env={"DIST_BIND_TIMEOUT": "30"})
    rows = check_rows(r.stdout)
    t.eq({k: v.get("flags") for k, v in rows.items()}, {k: "ok" for k in range(5)},
         "dist-bind-check: every rank ok (rc %d, %s)" % (r.returncode, r.stdout.strip()[-400:]))

    print("-- dist-bind before the stand-in: the image wins")
    lab.plugstack(raw="%s\n%s" % (ours, before_line))
    before = lab.table(SEED + " --standin-image --dist-bind")
    t.eq(sorted(before), [0, 1, 2, 3, 4], "five tasks")
    for rank, row in sorted(before.items()):
        t.eq({v: row.get(v) for v in IMAGE}, IMAGE, "rank %d sees the image's values" % rank)
    r = lab.srun(SEED + " --standin-image --dist-bind --mpi=" + lab.pmi(), [CHECK], env={"DIST_BIND_TIMEOUT": "30"})
    # Local task 0's LOCAL_RANK is the image's 0 too: not listed there.
    for rank, host, local in ((0, "node1", ""), (1, "node1", "LOCAL_RANK,"), (4, "node2", "LOCAL_RANK,")):
        # In DIST_BIND_SET's order: RANK, LOCAL_RANK, then what every task
        # of the node shares.
        t.ok("dist-bind-check: task %d (%s): not what dist-bind set: %sWORLD_SIZE,MASTER_ADDR,MASTER_PORT,"
             "CUDA_VISIBLE_DEVICES" % (rank, host, local) in r.stderr,
             "dist-bind-check: task %d names what was replaced in its own environment" % rank)
    t.ok(r.returncode != 0, "and the check fails (rc %d)" % r.returncode)
    # An image that changes only MASTER_PORT and the GPU list: the exchange
    # still runs, and the table flags every rank.
    with open(image, "w") as f:
        f.write("MASTER_PORT=61234\nCUDA_VISIBLE_DEVICES=0,1,2,3\n")
    r = lab.srun(SEED + " --standin-image --dist-bind --mpi=" + lab.pmi(), [CHECK], env={"DIST_BIND_TIMEOUT": "30"})
    rows = check_rows(r.stdout)
    t.eq(sorted(rows), [0, 1, 2, 3, 4], "dist-bind-check: one row per rank (%s)" % r.stdout.strip()[-300:])
    t.ok(all("OVERWRITTEN" in (v.get("flags") or "") for v in rows.values()), "every rank flagged OVERWRITTEN")
    t.ok("PROBLEM: rank 3 (node2): not what dist-bind set: MASTER_PORT,CUDA_VISIBLE_DEVICES" in r.stdout,
         "the table's finding names the variables")
    t.ok(r.returncode != 0, "and the check fails (rc %d)" % r.returncode)
t.done()
