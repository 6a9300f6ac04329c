#!/bin/bash
# Run as every task of a lab job: one tab-separated line of the variables
# the tests look at ("\x01" marks an unset variable), plus
#   OPEN_   the lab's fake GPUs ($PWD/dev/nvidiaN: srun runs in the lab
#           directory) this task can open, by index: open() fails with ENXIO
#           (no driver) where the device cgroup allows the device, EPERM
#           where it denies it;
#   ERRNO_  what open() said for each of them: "0:ENXIO,1:EPERM,..." (ok:
#           it opened; ENXIO; EPERM; other: anything else);
#   ALLOC_  on each node's local task 0, the job's GPUs on this node as
#           slurmctld lists them (scontrol show job -d: "IDX:0-2").
# Bash builtins only, but one subshell for the opens and, on local task 0,
# scontrol: in the cgroup v2 guest (qemu without KVM) every process
# started costs a tenth of a second.
export LC_ALL=C
HOSTNAME_=""
read -r HOSTNAME_ </proc/sys/kernel/hostname 2>/dev/null || HOSTNAME_=$(hostname)

# "\nN:ok" or "\nN:<the shell's message>" per fake GPU, in one subshell.
opens=$(for f in dev/nvidia[0-9]*; do
    [ -c "$f" ] || continue
    printf '\n%s:' "${f#dev/nvidia}"
    { command exec 3<"$f" && exec 3<&- && printf ok; } 2>&1
done)
declare -a how=()
while IFS= read -r line; do
    [[ "$line" =~ ^([0-9]+):(.*)$ ]] || continue
    case ${BASH_REMATCH[2]} in
        ok) how[${BASH_REMATCH[1]}]=ok ;;
        *"No such device"*) how[${BASH_REMATCH[1]}]=ENXIO ;;
        *"Operation not permitted"*) how[${BASH_REMATCH[1]}]=EPERM ;;
        *) how[${BASH_REMATCH[1]}]=other ;;
    esac
done <<<"$opens"
OPEN_="" ERRNO_=""
for i in "${!how[@]}"; do # indexed arrays list their indices in order
    case ${how[$i]} in ok | ENXIO) OPEN_+="${OPEN_:+,}$i" ;; esac
    ERRNO_+="${ERRNO_:+,}$i:${how[$i]}"
done

# A hostlist of the lab's kind ("node1", "node[1-2,4]", "node1,node3")
# into HOSTS, one name an entry.
expand_hosts() {
    local item list=$1 lo hi n pre r=()
    HOSTS=()
    while [ -n "$list" ]; do
        if [[ "$list" =~ ^([^],[]*)\[([^]]*)\],?(.*)$ ]]; then
            pre=${BASH_REMATCH[1]} list=${BASH_REMATCH[3]}
            IFS=, read -r -a r <<<"${BASH_REMATCH[2]}"
            for item in "${r[@]}"; do
                lo=${item%-*} hi=${item#*-}
                for ((n = 10#$lo; n <= 10#$hi; n++)); do
                    printf -v item '%s%0*d' "$pre" ${#lo} "$n"
                    HOSTS+=("$item")
                done
            done
        else
            item=${list%%,*}
            [ "$item" = "$list" ] && list="" || list=${list#*,}
            HOSTS+=("$item")
        fi
    done
}

ALLOC_=$'\x01'
if [ "${SLURM_LOCALID:-}" = 0 ] && [ -n "${SLURM_JOB_ID:-}" ]; then
    ALLOC_=""
    job=$(scontrol show job -d "$SLURM_JOB_ID")
    while IFS= read -r line; do
        [[ "$line" == *" Nodes="* ]] || continue
        nodes=${line#*Nodes=}; nodes=${nodes%% *}
        # Every GRES entry's IDX (a node with two GPU types lists two):
        # "GRES=gpu:v100:2(IDX:2-3),gpu:a100:2(IDX:0-1)".
        idx="" rest=$line
        while [[ "$rest" =~ IDX:([^\)]*)\)(.*)$ ]]; do
            idx+="${idx:+,}${BASH_REMATCH[1]}" rest=${BASH_REMATCH[2]}
        done
        expand_hosts "$nodes"
        for n in "${HOSTS[@]}"; do [ "$n" = "$HOSTNAME_" ] && ALLOC_=$idx; done
    done <<<"$job"
fi
line="PROBE"
for v in SLURM_PROCID SLURM_LOCALID SLURMD_NODENAME SLURM_STEP_ID RANK WORLD_SIZE LOCAL_RANK \
         LOCAL_WORLD_SIZE NODE_RANK GROUP_RANK GROUP_WORLD_SIZE MASTER_ADDR MASTER_PORT \
         CUDA_VISIBLE_DEVICES GPU_DEVICE_ORDINAL ROCR_VISIBLE_DEVICES HIP_VISIBLE_DEVICES ZE_AFFINITY_MASK \
         CUDA_DEVICE_ORDER DIST_BIND_DEVICE DIST_BIND_GPUS DIST_BIND_MODE DIST_BIND_RANK0_ADDR \
         DIST_BIND_NODE_RANKS DIST_BIND_SRUN_DEVICES DIST_BIND_SRUN_VERSION SLURM_DIST_BIND_RANK0_ADDR \
         SLURM_DIST_BIND_NODE_RANKS SLURM_DIST_BIND_SRUN_DEVICES SLURM_DIST_BIND_SRUN_VERSION \
         SLURM_DIST_BIND_SECRET HOSTNAME_ OPEN_ ERRNO_ ALLOC_; do
    if [ -n "${!v+x}" ] && [ "${!v}" != $'\x01' ]; then line+=$'\t'"$v=${!v}"; else line+=$'\t'"$v="$'\x01'; fi
done
printf '%s\n' "$line"
