--[[
dist-bind: keep every GPU of a step openable by each of its tasks.

On clusters with device cgroups (TaskPlugin=task/cgroup, ConstrainDevices=yes
in cgroup.conf) Slurm confines a task it binds per task (--gpus-per-task,
--gpu-bind=...) to the device files of its own GPUs.  --dist-bind=rank and
closest promise that device LOCAL_RANK is the task's own GPU with the node's
other GPUs of the step visible too (what NCCL needs for CUDA IPC and NVLink
within a node); per-task confinement makes that impossible, and dist-bind
then stops the step with a message.  This filter adds --gpu-bind=none to
srun, sbatch and salloc when --dist-bind asks for rank or closest and the
user gave no --gpu-bind of their own: every task can then open the step's
GPUs on its node (the step's cgroup still holds them to the step), and
dist-bind gives each task its own.

Enable: install this file as cli_filter.lua in the directory of slurm.conf
and add CliFilterPlugins=cli_filter/lua to slurm.conf (the cli_filter/lua
plugin needs Lua 5.1-5.4; Debian's slurm-client ships it).  To keep a filter
you already have, copy the function dist_bind_pre_submit into it and call it
from your slurm_cli_pre_submit.  If plugstack.conf sets default=rank or
default=closest for everyone, set default_mode below to the same mode.
--]]

local default_mode = "off" -- keep equal to dist-bind's default= in plugstack.conf

-- The mode --dist-bind asks for: the first word of its value when it is a
-- mode, else rank; default_mode when the option was not given.
local function dist_bind_mode(options)
   local plugin = options.spank and options.spank["dist_bind"]
   local value = plugin and plugin["dist-bind"]
   if value == nil then return default_mode end
   if value == "set" or value == "" or value == "(null)" then return "rank" end
   local first = string.match(value, "^[^,]*")
   for _, m in ipairs({"rank", "isolate", "closest", "env", "off"}) do
      if first == m then return m end
   end
   return "rank"
end

function dist_bind_pre_submit(options)
   local mode = dist_bind_mode(options)
   local bind = options["gpu-bind"]
   if (mode == "rank" or mode == "closest") and (bind == nil or bind == "") then
      options["gpu-bind"] = "none"
   end
end

function slurm_cli_setup_defaults(options, early_pass)
   return slurm.SUCCESS
end

function slurm_cli_pre_submit(options, pack_offset)
   dist_bind_pre_submit(options)
   return slurm.SUCCESS
end

function slurm_cli_post_submit(offset, job_id, step_id)
   return slurm.SUCCESS
end
