# An unmodified PyTorch program: everything it knows comes from the standard
# env:// variables (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT).
import os
import socket

import torch
import torch.distributed as dist

dist.init_process_group(backend="gloo", init_method="env://")
rank, world = dist.get_rank(), dist.get_world_size()
x = torch.tensor([float(rank + 1)])
dist.all_reduce(x)
print("TORCH rank=%d world=%d sum=%g host=%s local_rank=%s" % (
    rank, world, x.item(), socket.gethostname(), os.environ.get("LOCAL_RANK")), flush=True)
dist.destroy_process_group()
