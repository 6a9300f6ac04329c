#!/usr/bin/python3
"""Writes the fuzz harnesses' seed corpus (tests/fuzz/corpus/NAME/) and the
reproducers of the issue-9 findings (tests/fuzz/repro/NAME/): inputs in
each harness's own layout (see the harness's comment).  Run it after
changing a layout; `make check` replays both directories."""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def put(kind, name, fname, data):
    d = os.path.join(HERE, kind, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, fname), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def s(text):
    b = text.encode()
    return struct.pack("<I", len(b)) + b


# --- options: a --dist-bind value, then plugstack arguments, one a line --------
for i, v in enumerate(["rank\nports=20000-29999\nmaster_addr=name",
                       "isolate,verbose,share,port=1234\ndefault=closest,verbose\ntopology_cache=/lab/%n/spool/x.xml",
                       "off\ntopology_cache=none\nmaster_addr=addr",
                       "closest\nmaster_addr=suffix:-ib\nports=30000-30099",
                       "bogus,,\nfoo=1\ndefault=rank,port=5"]):
    put("corpus", "options", "seed-%d" % i, v)

# --- text: which (hostlist, tasks per node, GPU list, numbers), u32, text ------
def text(which, arg, body):
    return bytes([which]) + struct.pack("<I", arg) + body.encode()


for i, h in enumerate(["node[1-3,7],gpu[01-02]", "r[1-2]n[01-02]", "x[1-2]-ib,login", "n[0-99999999]m[0-99999999]"]):
    put("corpus", "text", "hostlist-%d" % i, text(0, 5 + i, h))
put("corpus", "text", "tasks-0", text(1, 16, "2(x3),1"))
put("corpus", "text", "tasks-1", text(1, 2, "3,2"))
put("corpus", "text", "gpus-0", text(2, 0, "0,1,GPU-abc,MIG-a/1"))
put("corpus", "text", "numbers-0", text(3, 0, "12000-12003"))
# 2^24 hosts times 2^40 wrapped to a small count; and a
# 12-byte tasks-per-node list naming 16 million nodes.
put("repro", "text", "hostlist-wrap", text(0, 0, "a[0-16777215]b[" + "0-268435455," * 4095 + "0-268435455]"))
put("repro", "text", "tasks-per-node", text(1, 4095, "1(x16777215)"))

# --- plan: flags, SPANK items, the step's environment, blank, the task's -------
def plan(flags, job, step, nnodes, node, ntasks, local_n, g, l, step_env, task_env):
    head = bytes([flags]) + struct.pack("<I", job) + bytes([0, step, nnodes, node, ntasks & 255, ntasks >> 8, local_n, g, l])
    return head + ("\n".join(step_env) + "\n\n" + "\n".join(task_env)).encode()


SEED_ENV = ["SLURM_STEP_NODELIST=node[1-2]", "SLURM_STEP_TASKS_PER_NODE=3,2", "CUDA_VISIBLE_DEVICES=0,1,2",
            "SLURM_STEP_GPUS=0,1,2", "GPU_DEVICE_ORDINAL=0,1,2", "SLURM_STEP_RESV_PORTS=12000-12003"]
put("corpus", "plan", "rank-verbose", plan(1 | 0x08, 12, 0, 2, 0, 5, 3, 1, 1, SEED_ENV,
                                          ["CUDA_VISIBLE_DEVICES=1", "GPU_DEVICE_ORDINAL=1"]))
put("corpus", "plan", "isolate-share", plan(2 | 0x10, 12, 1, 2, 1, 5, 2, 4, 1, SEED_ENV, ["CUDA_VISIBLE_DEVICES=0,1"]))
put("corpus", "plan", "arbitrary", plan(1 | 0x80, 7, 3, 2, 1, 4, 2, 3, 1,
                                        ["SLURM_STEP_NODELIST=a[1-2]", "SLURM_STEP_TASKS_PER_NODE=2(x2)",
                                         "SLURM_DISTRIBUTION=arbitrary", "DIST_BIND_RANK0_ADDR=a2",
                                         "MASTER_PORT=29400", "CUDA_VISIBLE_DEVICES=GPU-aa,GPU-bb"],
                                        ["CUDA_VISIBLE_DEVICES=GPU-bb", "DIST_BIND_STEP=7.2"]))
put("corpus", "plan", "node-ranks", plan(1 | 0x08, 7, 0, 4, 2, 8, 2, 1, 1,
                                         ["SLURM_STEP_NODELIST=gpu[01-04]", "SLURM_STEP_TASKS_PER_NODE=2(x4)",
                                          "DIST_BIND_NODE_RANKS=2-3,0-1", "DIST_BIND_RANK0_ADDR=gpu03"], []))
put("corpus", "plan", "env-mode", plan(4 | 0x20, 9, 0, 1, 0, 2, 2, 0, 0, ["SLURM_STEP_NODELIST=n1"], []))
# srun's words carried under SLURM_ names (srun --export=NONE), beside a
# plain one they win over, and a task secret that is not srun's draw.
put("corpus", "plan", "carried", plan(1 | 0x08, 7, 0, 4, 2, 8, 2, 1, 1,
                                      ["SLURM_STEP_NODELIST=gpu[01-04]", "SLURM_STEP_TASKS_PER_NODE=2(x4)",
                                       "SLURM_DIST_BIND_NODE_RANKS=2-3,0-1", "DIST_BIND_NODE_RANKS=0-3",
                                       "SLURM_DIST_BIND_RANK0_ADDR=gpu03",
                                       "SLURM_DIST_BIND_SRUN_DEVICES=cgroup,gpus-per-task=1",
                                       "SLURM_DIST_BIND_SRUN_VERSION=0.2.0", "SLURM_DIST_BIND_SECRET=" + "ab" * 32,
                                       "CUDA_VISIBLE_DEVICES=0,1", "SLURM_GPUS_PER_TASK=1"],
                                      ["CUDA_VISIBLE_DEVICES=1", "DIST_BIND_SECRET=" + "cd" * 32]))
put("repro", "plan", "tasks-per-node", plan(1, 12, 0, 2, 0, 5, 3, 1, 1,
                                                        ["SLURM_STEP_NODELIST=node[1-2]",
                                                         "SLURM_STEP_TASKS_PER_NODE=1(x16777215)"], []))

# --- srun: a command line (TaskPlugin, options and program, environment) or a
# layout (node count, tasks per node, rank shuffle) -------------------------
def srun_line(plugins, args, env):
    return b"\x00" + ("%s\n%s\n\n%s" % (plugins, "\n".join(args), "\n".join(env))).encode()


put("corpus", "srun", "gpus-per-task", srun_line("task/affinity,task/cgroup", ["-N2", "-n5", "--gpus-per-task=2",
                                                  "--dist-bind", "python3", "train.py"], ["SLURM_GPUS_PER_TASK=2"]))
put("corpus", "srun", "het-export", srun_line("cgroup", ["--export=NONE", "--gres-flags=allow-task-sharing", "-n1",
                                               "--tres-per-task=gres/gpu:1", "a", ":", "--export", "ALL,X=1",
                                               "-n2", "--gpus-per-task=a100:1,v100:1", "b"],
                                              ["SLURM_EXPORT_ENV=NONE"]))
put("corpus", "srun", "async", srun_line("task/none", ["--exp=all", "--async", "--mpi", "pmix", "prog"], []))
def srun_layout(tasks, swaps, twice=False):
    """Tasks per node; then, for i = all tasks down to 2, the place below
    i that rank i-1 swaps with (i-1 itself: no swap)."""
    return bytes([3 if twice else 1, len(tasks) - 1] + tasks + swaps)


put("corpus", "srun", "layout-block", srun_layout([3, 3, 2], [7, 6, 5, 4, 3, 2, 1]))
# Node ranks "1-2,0,3-4": rank 0 on the middle node, ranges on both sides.
put("corpus", "srun", "layout-arbitrary", srun_layout([2, 1, 2, 3, 1], [8, 3, 4, 5, 8, 4, 5, 5]))
put("corpus", "srun", "layout-twice", srun_layout([2, 2], [3, 2, 1], twice=True))
put("corpus", "srun", "layout-empty-node", srun_layout([2, 0, 1], [2, 1]))

# --- closest: choice (machine, tasks, GPUs per task, CPUs per task, cores,
# distribution, GPUs) or the cache path (template, node name, host name) --------
def closest(machine, ntasks, k, cpt, cores, dist, gpus):
    return bytes([1, machine, ntasks - 1, k - 1, cpt]) + ("%s\n%s\n%s" % (cores, dist, gpus)).encode()


put("corpus", "closest", "tioga-8", closest(3, 8, 1, 16, "0-63", "", "0,1,2,3,4,5,6,7"))
put("corpus", "closest", "dgx2-3", closest(4, 3, 1, 1, "0-2", "block:cyclic", "0,1,2"))
put("corpus", "closest", "lassen-2x2", closest(1, 2, 2, 4, "0-39", "cyclic:fcyclic", "0,1,2,3"))
put("corpus", "closest", "pascal-uuid", closest(2, 2, 1, 2, "0-35", "plane=2", "GPU-1,GPU-0"))
put("corpus", "closest", "cache-path", b"\x00/lab/%n/spool/hwloc_topo_whole.xml\nnode1\nnode1.example")
# A node name of ../../.. in SlurmdSpoolDir's %n.
put("repro", "closest", "node-name", b"\x00/var/spool/%n/hwloc_topo_whole.xml\n../../..\nh")

# --- wire: which decoder, world (u32), body ---------------------------------------
def wire(which, world, body):
    return bytes([which]) + struct.pack("<I", world - 1) + body


HELLO = struct.pack("<IBIII", 4, 1, 3, 0, 4) + s("12.0") + bytes(range(32))
put("corpus", "wire", "header", wire(0, 4, struct.pack("<IHHII", 0x32584244, 1, 0, 0, len(HELLO))))
put("corpus", "wire", "hello", wire(1, 4, HELLO))
put("corpus", "wire", "challenge", wire(2, 4, bytes(range(32))))
put("corpus", "wire", "register", wire(3, 4, struct.pack("<IH", 0x0100007f, 40000) + s("node2") + struct.pack("<I", 4242)
                                      + bytes(range(32))))
put("corpus", "wire", "welcome", wire(4, 4, struct.pack("<I", 8)))
put("corpus", "wire", "abort", wire(5, 4, struct.pack("<H", 3) + s("barrier #2 failed: rank 9 did not arrive")))
put("corpus", "wire", "subtree", wire(6, 12, struct.pack("<II", 2, 2) + struct.pack("<IIH", 5, 0x0100007f, 40001) + bytes(32)
                                      + struct.pack("<IIH", 6, 0x0100007f, 40002) + bytes(range(32))))
put("corpus", "wire", "ack", wire(11, 4, bytes(range(32))))
HELLO2 = struct.pack("<IBIII", 4, 2, 0, 5, 12) + s("12.0") + bytes(32)
put("corpus", "wire", "hello-announced", wire(1, 12, HELLO2))
put("corpus", "wire", "missing", wire(7, 12, struct.pack("<IIII", 1, 2, 1, 5)))
put("corpus", "wire", "up", wire(8, 8, struct.pack("<II", 4, 8) + bytes(8)))
put("corpus", "wire", "base64", wire(9, 1, b"AAECAwQFBgc"))
put("corpus", "wire", "pmi2-chunk", wire(10, 1, b"1500,AAECAwQF"))
# An Up claiming less than its subtree owes (rank 0 read past it).
put("repro", "wire", "short-up", wire(8, 9, struct.pack("<II", 64, 0)))
# A Missing list with INT_MAX and beyond.
put("repro", "wire", "missing-int-max", wire(7, 16, struct.pack("<IIII", 2, 0x7fffffff, 0x80000000, 0)))
# The Hello that once aborted every rank (world 999) decodes, and is
# then dropped for want of a proof (see t_tcp_hostile.py).
put("repro", "wire", "dos-hello", wire(1, 4, struct.pack("<IBIII", 4, 1, 1, 0, 999) + s("12.0") + bytes(32)))
# Text from a peer with terminal escapes.
put("repro", "wire", "escapes", wire(5, 4, struct.pack("<H", 4) + s("\x1b[2J\x1b[31mpwned\x07\n")))
