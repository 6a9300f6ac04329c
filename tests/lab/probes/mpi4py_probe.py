# mpi4py as a user writes it: world rank and size, the node's shared-memory
# communicator, one allreduce, and the variables dist-bind set, on one line
# (the same line as mpi_probe.c).  With the argument "distbind", libdistbind
# (its path in DIST_BIND_LIB) is brought up through ctypes in the same
# process after MPI, and its allgather of the MPI ranks is checked.
import ctypes
import os
import socket
import sys

from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
node = comm.Split_type(MPI.COMM_TYPE_SHARED)
total = comm.allreduce(rank + 1)
extra = ""
if sys.argv[1:] == ["distbind"]:
    lib = ctypes.CDLL(os.environ["DIST_BIND_LIB"])
    lib.distbind_last_error.restype = ctypes.c_char_p
    lib.distbind_bootstrap.restype = ctypes.c_char_p
    h = ctypes.c_void_p()
    if lib.distbind_init(ctypes.byref(h)) != 0:
        sys.exit("mpi4py_probe: " + lib.distbind_last_error(None).decode())
    n = lib.distbind_world_size(h)
    mine, allr = ctypes.c_int(rank), (ctypes.c_int * max(n, 1))()
    ok = n == size and lib.distbind_allgather(h, ctypes.byref(mine), ctypes.sizeof(mine), allr) == 0
    ok = ok and list(allr) == list(range(n))
    extra = " db_rank=%d db_local=%d db_lws=%d db_boot=%s db_gather=%s" % (
        lib.distbind_rank(h), lib.distbind_local_rank(h), lib.distbind_local_world_size(h),
        lib.distbind_bootstrap(h).decode(), "ok" if ok else "bad")
    lib.distbind_barrier(h)
comm.Barrier()
print("MPI rank=%d size=%d local=%d lsize=%d sum=%d host=%s env_rank=%s env_local=%s env_lws=%s%s" % (
    rank, size, node.Get_rank(), node.Get_size(), total, socket.gethostname(), os.environ.get("RANK", "unset"),
    os.environ.get("LOCAL_RANK", "unset"), os.environ.get("LOCAL_WORLD_SIZE", "unset"), extra), flush=True)
node.Free()
