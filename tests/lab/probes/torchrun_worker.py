# A worker torchrun starts (tests/lab/t_torchrun.py): one line with what it
# was given, the fake GPUs it can open, the device libdistbind chooses for
# it, and a gloo all-reduce over torchrun's own rendezvous (env://).
import ctypes
import errno
import glob
import os
import socket
import sys

import torch
import torch.distributed as dist


def openable():
    """The lab's fake GPUs ($PWD/dev/nvidiaN) this process can open: ENXIO
    (no driver) where allowed, EPERM where a device cgroup denies it."""
    out = []
    for f in glob.glob("dev/nvidia[0-9]*"):
        try:
            os.close(os.open(f, os.O_RDONLY))
            out.append(int(f[len("dev/nvidia"):]))
        except OSError as e:
            if e.errno == errno.ENXIO:
                out.append(int(f[len("dev/nvidia"):]))
    return ",".join(str(i) for i in sorted(out))


def libdistbind_device():
    """distbind_create (no network) and the device it chooses, or its error."""
    lib = ctypes.CDLL(sys.argv[1])
    lib.distbind_last_error.restype = ctypes.c_char_p
    lib.distbind_source.restype = ctypes.c_char_p
    h = ctypes.c_void_p()
    if lib.distbind_create(ctypes.byref(h)) != 0:
        return "error", lib.distbind_last_error(None).decode().replace(" ", "_")
    dev, src = lib.distbind_device(h), lib.distbind_source(h).decode()
    lib.distbind_destroy(h)
    return str(dev), src


dev, src = libdistbind_device()
dist.init_process_group(backend="gloo", init_method="env://")
x = torch.tensor([float(dist.get_rank() + 1)])
dist.all_reduce(x)
fields = {k: os.environ.get(k, "-") for k in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "GROUP_RANK", "LOCAL_WORLD_SIZE",
                                              "CUDA_VISIBLE_DEVICES", "DIST_BIND_DEVICE", "DIST_BIND_GPUS",
                                              "MASTER_ADDR", "MASTER_PORT", "DIST_BIND_MASTER", "DIST_BIND_STEP",
                                              "TORCHELASTIC_RUN_ID", "SLURM_PROCID")}
fields.update(host=socket.gethostname(), open=openable() or "-", db_device=dev, db_source=src,
              sum="%g" % x.item(), world=str(dist.get_world_size()))
# One write(2) per line: the workers of an agent share its stdout, and a
# line under PIPE_BUF is not interleaved with another's.
os.write(1, ("WORKER " + " ".join("%s=%s" % kv for kv in sorted(fields.items())) + "\n").encode())
dist.destroy_process_group()
