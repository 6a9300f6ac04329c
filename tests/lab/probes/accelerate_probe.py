# accelerate and transformers as a user starts them, one line per task:
#   gloo        PartialState(cpu=True, backend="gloo"), one all-reduce through
#               torch.distributed, then TrainingArguments(use_cpu=True) on
#               that state (accelerator_config use_configured_state)
#   default     PartialState(cpu=True): accelerate picks the backend
#   ta-gloo     TrainingArguments(use_cpu=True, ddp_backend="gloo") alone
#   ta-default  TrainingArguments(use_cpu=True) alone
import os
import socket
import sys
import tempfile

import torch
import torch.distributed as dist
from accelerate import PartialState

mode = sys.argv[1]
out = tempfile.mkdtemp(prefix="accel.")
ta = None
if mode in ("gloo", "default"):
    state = PartialState(cpu=True, **({"backend": "gloo"} if mode == "gloo" else {}))
else:
    from transformers import TrainingArguments

    kw = {"ddp_backend": "gloo"} if mode == "ta-gloo" else {}
    ta = TrainingArguments(output_dir=out, use_cpu=True, report_to=[], **kw)
    state = ta.distributed_state
x = torch.tensor([float(state.process_index + 1)])
if dist.is_initialized():
    dist.all_reduce(x)
if mode == "gloo":
    from transformers import TrainingArguments

    ta = TrainingArguments(output_dir=out, use_cpu=True, report_to=[],
                           accelerator_config={"use_configured_state": True})
line = "ACCEL mode=%s n=%d index=%d local=%d backend=%s dist=%s sum=%g host=%s env_rank=%s env_local=%s" % (
    mode, state.num_processes, state.process_index, state.local_process_index, state.backend,
    dist.get_world_size() if dist.is_initialized() else 0, x.item(), socket.gethostname(),
    os.environ.get("RANK", "unset"), os.environ.get("LOCAL_RANK", "unset"))
if ta is not None:
    line += " ta_local=%d ta_index=%d ta_world=%d ta_local_rank_field=%d" % (
        ta.local_process_index, ta.process_index, ta.world_size, ta.local_rank)
print(line, flush=True)
if dist.is_initialized():
    dist.barrier()
    dist.destroy_process_group()
