"""How a task's GPU lists resolve to GPUs, the way CUDA and ROCm do it,
from the GPUs the task can open; and the invariant every lab test checks on
every task dist-bind set up.

CUDA enumerates only the devices a process can open, in PCI bus order (the
lab's fake GPUs: by index), then applies CUDA_VISIBLE_DEVICES: each entry is
an ordinal among those, and the list ends at the first entry that names no
device (or names one again); an entry may also be a GPU's UUID.  ROCm does the same with ROCR_VISIBLE_DEVICES
first, then HIP_VISIBLE_DEVICES (else CUDA_VISIBLE_DEVICES) among what is
left; OpenCL on ROCm then GPU_DEVICE_ORDINAL; Level Zero ZE_AFFINITY_MASK.

GPUs are the lab's global indices (ints).  A list value of None means unset.
Unit-tested by tests/unit/t_devmodel.py.
"""


def expand(spec):
    """ "0-2,4" -> [0, 1, 2, 4] (Slurm's IDX lists and the probe's OPEN_)."""
    out = []
    for part in (spec or "").split(","):
        if not part:
            continue
        lo, _, hi = part.partition("-")
        out.extend(range(int(lo), int(hi or lo) + 1))
    return out


def uuid_gpu(entry):
    """The lab GPU a UUID entry names (fake_nvidia.sh: "GPU-0000000K-0000-
    4000-8000-00000000000N" is minor N of node K), or None."""
    parts = entry.split("-")
    if len(parts) == 6 and parts[0] == "GPU" and parts[-1].isdigit():
        return int(parts[-1])
    return None


def lab_uuid(host, gpu):
    """The UUID fake_nvidia.sh gives GPU (minor) `gpu` of lab node `host`."""
    return "GPU-%08d-0000-4000-8000-%012d" % (int(host.lstrip("node")), gpu)


def resolve(value, devices):
    """The devices (in order) a list selects from `devices`; None: all.
    An entry is an ordinal among them, or a GPU's UUID (CUDA accepts both)."""
    if value is None:
        return list(devices)
    out = []
    for entry in value.split(","):
        if entry.startswith("GPU-"):
            g = uuid_gpu(entry)
            if g is None or g not in devices or g in out:
                break
            out.append(g)
            continue
        if not entry.isdigit() or int(entry) >= len(devices) or devices[int(entry)] in out:
            break
        out.append(devices[int(entry)])
    return out


def entries(value):
    return [] if value is None else value.split(",")


def cuda_view(row, openable):
    return resolve(row.get("CUDA_VISIBLE_DEVICES"), openable)


def hip_view(row, openable):
    first = resolve(row.get("ROCR_VISIBLE_DEVICES"), openable)
    second = row.get("HIP_VISIBLE_DEVICES") or row.get("CUDA_VISIBLE_DEVICES")
    return resolve(second, first)


def opencl_view(row, openable):
    return resolve(row.get("GPU_DEVICE_ORDINAL"), resolve(row.get("ROCR_VISIBLE_DEVICES"), openable))


def level_zero_view(row, openable):
    return resolve(row.get("ZE_AFFINITY_MASK"), openable)


def views(row, openable):
    """(runtime, the list(s) it reads, the GPUs it sees): CUDA, and every other
    runtime the task's lists address."""
    out = [("CUDA", [row.get("CUDA_VISIBLE_DEVICES")], cuda_view(row, openable))]
    if row.get("ROCR_VISIBLE_DEVICES") is not None or row.get("HIP_VISIBLE_DEVICES") is not None:
        second = row.get("HIP_VISIBLE_DEVICES") or row.get("CUDA_VISIBLE_DEVICES")
        out.append(("HIP", [row.get("ROCR_VISIBLE_DEVICES"), second], hip_view(row, openable)))
    if row.get("GPU_DEVICE_ORDINAL") is not None:
        out.append(("OpenCL", [row.get("ROCR_VISIBLE_DEVICES"), row["GPU_DEVICE_ORDINAL"]],
                    opencl_view(row, openable)))
    if row.get("ZE_AFFINITY_MASK") is not None:
        out.append(("Level Zero", [row["ZE_AFFINITY_MASK"]], level_zero_view(row, openable)))
    return out


def violations(rows, own, alloc, mode, share=False):
    """Everything wrong with the tasks `rows` ({rank: probe row}) by the
    invariant, as messages (empty: all is well):

    - every entry of every GPU list names a device the task can open (no
      runtime's list is cut short; in env mode, which leaves Slurm's lists
      alone, CUDA's);
    - device DIST_BIND_DEVICE is the task's own GPU in every runtime, and in
      rank/closest (without share) so is device LOCAL_RANK*k;
    - own GPUs are distinct on a node unless share;
    - nothing outside the step's allocation on the node is seen.

    own(rank) -> the task's own GPUs (global indices, first first);
    alloc(host) -> the step's GPUs on that node (global indices)."""
    bad = []
    first_own = {}
    for r in sorted(rows):
        row = rows[r]
        pre = "rank %d (%s/%s): " % (r, row.get("SLURMD_NODENAME"), row.get("SLURM_LOCALID"))
        openable = expand(row.get("OPEN_"))
        mine = own(r)
        host = row.get("SLURMD_NODENAME")
        for runtime, lists, seen in views(row, openable):
            if mode == "env" and runtime != "CUDA":
                continue  # env leaves Slurm's lists as they are; only CUDA's view is promised
            want = len(entries(lists[-1])) if lists[-1] is not None else len(seen)
            if lists[0] is not None and len(lists) > 1:
                stage1 = resolve(lists[0], openable)
                if len(stage1) != len(entries(lists[0])):
                    bad.append(pre + "%s: ROCR_VISIBLE_DEVICES=%s names GPUs it cannot open (can open %s)"
                               % (runtime, lists[0], openable))
            if len(seen) != want:
                bad.append(pre + "%s: %s names GPUs it cannot open (can open %s, sees %s)"
                           % (runtime, lists, openable, seen))
            outside = [g for g in seen if g not in alloc(host)]
            if outside and any(l is not None for l in lists):  # an unset list shows what the task can open
                bad.append(pre + "%s sees GPUs %s outside the step's %s on %s" % (runtime, outside, alloc(host), host))
            dev = row.get("DIST_BIND_DEVICE")
            if dev is not None and mine:
                d = int(dev)
                if d >= len(seen) or seen[d] != mine[0]:
                    bad.append(pre + "%s device DIST_BIND_DEVICE=%d is %s, not its own GPU %d"
                               % (runtime, d, seen[d] if d < len(seen) else "missing", mine[0]))
            if mode in ("rank", "closest") and not share and mine and row.get("LOCAL_RANK") is not None:
                d = int(row["LOCAL_RANK"]) * len(mine)
                if seen[d:d + len(mine)] != mine:
                    bad.append(pre + "%s devices LOCAL_RANK*k.. are %s, not its own %s" % (runtime, seen[d:d + len(mine)],
                                                                                       mine))
        if mine and not share:
            key = (host, mine[0])
            if key in first_own:
                bad.append(pre + "owns GPU %d, as rank %d does" % (mine[0], first_own[key]))
            first_own[key] = r
    return bad


def node_alloc(rows):
    """{host: the job's GPUs there} from the probe's ALLOC_ (local task 0)."""
    return {row["SLURMD_NODENAME"]: sorted(expand(row["ALLOC_"])) for row in rows.values()
            if row.get("ALLOC_") is not None}


def own_from_slurm(row):
    """The GPUs Slurm gave a task it bound (its list, resolved)."""
    return cuda_view(row, expand(row.get("OPEN_")))
