#!/usr/bin/env bash
# The lab: a real slurmctld, munged and two slurmd (node1, node2) on this one
# machine, each slurmd in its own UTS + mount namespace so tasks see their
# node's hostname and a private /etc/hosts.
#
#   lab.sh up   [--cpus N] [--gpus N] [--plugin SO] [--dir DIR] [--resv-ports]
#               -> prints DIR (--resv-ports: MpiParams=ports, so every step
#                  gets SLURM_STEP_RESV_PORTS)
#   lab.sh down DIR
#
# LAB_SLURMD_ENV="K=V ..." is added to slurmd's (and so slurmstepd's)
# environment, e.g. to preload a sanitizer runtime.
#
# Everything lives under DIR (state, spool, logs, pid files, sockets); `down`
# stops only the daemons whose pid files are there. Tests use lib.sh, which
# wraps this with a trap so the lab is torn down also when a test fails.
set -euo pipefail

die() { echo "lab: $*" >&2; exit 1; }

free_port() {
    # A port nobody listens on, outside dist-bind's default MASTER_PORT range.
    local p
    for _ in $(seq 200); do
        p=$((40000 + RANDOM % 20000))
        if ! ss -Htln "sport = :$p" | grep -q .; then echo "$p"; return; fi
    done
    die "no free port found"
}

# Wait until `cond` (a command) succeeds, for at most $1 tenths of a second.
wait_for() {
    local n=$1; shift
    for _ in $(seq "$n"); do "$@" && return 0; sleep 0.1; done
    return 1
}

pid_alive() {
    # PID 1 here reaps zombies slowly: a zombie counts as gone.
    local pid=$1 st
    [ -r "/proc/$pid/stat" ] || return 1
    st=$(sed 's/^.*) //' "/proc/$pid/stat" | cut -d' ' -f1)
    [ "$st" != Z ] && [ "$st" != X ]
}

stop_pidfile() {
    local f=$1 pid
    [ -s "$f" ] || return 0
    pid=$(cat "$f")
    [[ "$pid" =~ ^[0-9]+$ ]] || return 0
    pid_alive "$pid" || return 0
    kill -TERM "$pid" 2>/dev/null || return 0
    wait_for 100 eval "! pid_alive $pid" || kill -KILL "$pid" 2>/dev/null || true
}

cmd_down() {
    local d=${1:?lab.sh down DIR}
    [ -f "$d/slurm.conf" ] || die "$d is not a lab directory"
    if [ -s "$d/slurmctld.pid" ] && pid_alive "$(cat "$d/slurmctld.pid")"; then
        SLURM_CONF=$d/slurm.conf timeout 10 scancel --quiet --user=root 2>/dev/null || true
    fi
    stop_pidfile "$d/node1/slurmd.pid"
    stop_pidfile "$d/node2/slurmd.pid"
    stop_pidfile "$d/slurmctld.pid"
    stop_pidfile "$d/munged.pid"
    # Namespace holders exit with their slurmd; anything else we started is
    # recorded in extra.pids.
    if [ -f "$d/extra.pids" ]; then
        while read -r pid; do
            pid_alive "$pid" && kill -TERM "$pid" 2>/dev/null || true
        done <"$d/extra.pids"
    fi
    [ -n "${LAB_KEEP:-}" ] || rm -rf "$d"
}

cmd_up() {
    local cpus=3 gpus=4 plugin="" d="" resv=0
    while [ $# -gt 0 ]; do
        case $1 in
            --cpus) cpus=$2; shift 2 ;;
            --gpus) gpus=$2; shift 2 ;;
            --plugin) plugin=$2; shift 2 ;;
            --dir) d=$2; shift 2 ;;
            --resv-ports) resv=1; shift ;;
            *) die "unknown argument $1" ;;
        esac
    done
    [ "$(id -u)" = 0 ] || die "the lab needs root (munged, slurmd, namespaces)"
    for b in munged slurmctld slurmd srun unshare; do
        command -v "$b" >/dev/null || die "$b not found (run 'make deps' as root)"
    done
    [ -n "$d" ] || d=$(mktemp -d /tmp/dist-bind-lab.XXXXXX)
    chmod 755 "$d"
    mkdir -p "$d"/{state,dev,tmp,node1/tmp,node2/tmp}
    chmod 1777 "$d/tmp" "$d"/node{1,2}/tmp

    # munged
    dd if=/dev/urandom of="$d/munge.key" bs=1024 count=1 status=none
    chmod 400 "$d/munge.key"
    munged --key-file="$d/munge.key" --socket="$d/munge.sock" \
        --pid-file="$d/munged.pid" --seed-file="$d/munged.seed" \
        --log-file="$d/munged.log" --num-threads=2 \
        || die "munged failed: $(tail -3 "$d/munged.log" 2>/dev/null)"

    # Fake GPUs: character devices, or Slurm sets no CUDA_VISIBLE_DEVICES.
    local i gfile=""
    if [ "$gpus" -gt 0 ]; then
        for i in $(seq 0 $((gpus - 1))); do mknod -m 666 "$d/dev/nvidia$i" c 195 "$i"; done
        gfile="$d/dev/nvidia[0-$((gpus - 1))]"
    fi

    local ctl_port n1_port n2_port
    ctl_port=$(free_port); n1_port=$(free_port); n2_port=$(free_port)
    while [ "$n1_port" = "$ctl_port" ]; do n1_port=$(free_port); done
    while [ "$n2_port" = "$ctl_port" ] || [ "$n2_port" = "$n1_port" ]; do n2_port=$(free_port); done

    local gres_node=""
    [ "$gpus" -gt 0 ] && gres_node="Gres=gpu:$gpus"
    cat >"$d/slurm.conf" <<CONF
ClusterName=lab
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$ctl_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$d/munge.sock
StateSaveLocation=$d/state
SlurmdSpoolDir=$d/%n/spool
SlurmctldPidFile=$d/slurmctld.pid
SlurmdPidFile=$d/%n/slurmd.pid
SlurmctldLogFile=$d/slurmctld.log
SlurmdLogFile=$d/%n/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
TmpFS=$d/%n/tmp
ProctrackType=proctrack/pgid
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
SlurmdParameters=config_overrides
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
AcctGatherEnergyType=acct_gather_energy/none
MpiDefault=none
$([ "$resv" = 1 ] && echo "MpiParams=ports=$((ctl_port + 100))-$((ctl_port + 199))")
PlugStackConfig=$d/plugstack.conf
ReturnToService=2
SchedulerType=sched/backfill
InactiveLimit=0
KillWait=5
MinJobAge=2
SlurmctldTimeout=30
SlurmdTimeout=30
MessageTimeout=20
NodeName=node1 NodeHostname=node1 NodeAddr=127.0.0.2 Port=$n1_port CPUs=$cpus RealMemory=1000 $gres_node State=UNKNOWN
NodeName=node2 NodeHostname=node2 NodeAddr=127.0.0.3 Port=$n2_port CPUs=$cpus RealMemory=1000 $gres_node State=UNKNOWN
PartitionName=lab Nodes=node[1-2] Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
CONF
    {
        echo "AutoDetect=off"
        [ "$gpus" -gt 0 ] && echo "NodeName=node[1-2] Name=gpu File=$gfile"
    } >"$d/gres.conf"
    if [ -n "$plugin" ]; then
        echo "optional $plugin" >"$d/plugstack.conf"
    else
        : >"$d/plugstack.conf"
    fi
    printf '127.0.0.1 localhost\n127.0.0.2 node1\n127.0.0.3 node2\n' >"$d/hosts"
    printf 'export SLURM_CONF=%s/slurm.conf\n' "$d" >"$d/env"

    export SLURM_CONF=$d/slurm.conf
    slurmctld -c -i >"$d/slurmctld.out" 2>&1 || die "slurmctld failed: $(tail -5 "$d/slurmctld.log")"
    for n in node1 node2; do
        mkdir -p "$d/$n/spool"
        unshare --uts --mount --propagation private sh -c \
            "hostname $n && mount --bind '$d/hosts' /etc/hosts && exec env ${LAB_SLURMD_ENV:-} slurmd -N $n" \
            >"$d/$n/slurmd.out" 2>&1 || die "slurmd $n failed: $(tail -5 "$d/$n/slurmd.log" 2>/dev/null)"
    done
    if ! wait_for 300 eval "[ \"\$(sinfo -h -o %t -N 2>/dev/null | sort -u | tr -d '\n')\" = idle ]"; then
        sinfo -N >&2 || true
        tail -5 "$d/slurmctld.log" "$d"/node?/slurmd.log >&2 || true
        cmd_down "$d"
        die "nodes did not become idle"
    fi
    echo "$d"
}

case ${1:-} in
    up) shift; cmd_up "$@" ;;
    down) shift; cmd_down "$@" ;;
    *) echo "usage: lab.sh up [--cpus N] [--gpus N] [--plugin SO] [--dir DIR] [--resv-ports] | lab.sh down DIR" >&2; exit 2 ;;
esac
