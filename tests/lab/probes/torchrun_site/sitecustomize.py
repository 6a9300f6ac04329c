# Test-only (tests/lab/t_torchrun.py puts this directory on PYTHONPATH for
# torchrun and its workers): Debian builds torch 2.x without libuv, while
# torchrun's stores ask TCPStore for libuv (its default, and the c10d
# rendezvous backend and the workers' client of the agent's store pass
# nothing else).  Here TCPStore defaults to use_libuv=False instead.
# Nothing of dist-bind is changed.
import os

if os.environ.get("DIST_BIND_TEST_NO_LIBUV") == "1":
    import torch.distributed as _dist

    _Store = _dist.TCPStore

    class TCPStore(_Store):  # noqa: D101
        def __init__(self, *args, **kwargs):
            kwargs.setdefault("use_libuv", False)
            super().__init__(*args, **kwargs)

    import sys

    # torch.distributed.rendezvous is also a function's name in
    # torch.distributed: take the module itself.
    for _name in ("torch.distributed", "torch._C._distributed_c10d", "torch.distributed.rendezvous"):
        sys.modules[_name].TCPStore = TCPStore
