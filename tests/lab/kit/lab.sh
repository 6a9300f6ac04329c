#!/usr/bin/env bash
# The lab: a real slurmctld, munged and N slurmd (node1 .. nodeN, two by
# default) on this one machine, each slurmd in its own UTS + mount namespace
# so tasks see their node's hostname and a private /etc/hosts, each with its
# own address in 127/8 (nodeI is 127.0.0.(I+1)), port, spool and fake GPUs.
#
#   lab.sh up   [--nodes N] [--cpus N] [--gpus N] [--plugin SO] [--dir DIR] [--resv-ports]
#               [--cgroup | --cgroup2] [--cli-filter LUA] [--tree-first NODE] [--tree SWITCHES]
#               [--gpu-uuids] [--gpu-types] [--stepmgr] [--oci] [--configless]
#               [--release 24.11]
#               -> prints DIR (--resv-ports: MpiParams=ports, so every step
#                  gets SLURM_STEP_RESV_PORTS; --cgroup: task/cgroup and
#                  proctrack/cgroup with ConstrainDevices=yes, cgroup v1;
#                  --cgroup2: the same on cgroup v2 (CgroupPlugin=cgroup/v2,
#                  IgnoreSystemd=yes), on a machine whose only cgroup
#                  hierarchy is v2 (the guest of tests/lab/kit/guest.sh); each
#                  node then also has a network namespace of its own, its
#                  address 10.201.0.(I+1) on a veth to a bridge that holds
#                  the controller's 10.201.0.1;
#                  --cli-filter: cli_filter/lua with that script;
#                  --tree-first: topology/tree, NODE's leaf switch first;
#                  --tree: topology/tree with these leaf switches in this
#                  order, each a hostlist, ';' between them
#                  ('node[9-12];node[1-4];node[5-8];node[13-16]'): Slurm
#                  26.05 starts the block layout on the first one's nodes;
#                  --gpu-uuids: the GPUs found by gpu/nvidia AutoDetect on a
#                  fake driver tree (fake_nvidia.sh), listed by UUID (25.11+);
#                  --gpu-types: half the GPUs of type a100, half v100;
#                  --stepmgr: steps managed on the job's first node (24.05+;
#                  what srun --async needs);
#                  --oci: oci.conf for srun --container BUNDLE, with crun
#                  (its state in DIR/crun; each node's namespace hides the
#                  cgroup v2 hierarchy, as crun refuses hybrid cgroups);
#                  --configless: SlurmctldParameters=enable_configless;
#                  each slurmd fetches its configuration from slurmctld
#                  (--conf-server), and so do the clients: run them as
#                  `DIR/client CMD...`, a login node without slurm.conf
#                  (SLURM_CONF_SERVER); the nodes and the login node see
#                  the lab's munged at munge's default socket and keep
#                  slurmd's /run/slurm/conf link, in a tmpfs on /run of
#                  their own;
#                  --release: that Slurm release's daemons, in its root,
#                  see release.sh; its clients: release.sh run 24.11 srun ...)
#   lab.sh down DIR
#
# LAB_SLURMD_ENV="K=V ..." is added to slurmd's (and so slurmstepd's)
# environment, e.g. to preload a sanitizer runtime; LAB_SLURMD_DEBUG sets
# SlurmdDebug (default info).
#
# Each node's files are under DIR/nodeI/; DIR/nodes lists the node names.
# Everything lives under DIR (state, spool, logs, pid files, sockets); `down`
# stops only the daemons whose pid files are there. Tests use lib.sh, which
# wraps this with a trap so the lab is torn down also when a test fails.
set -euo pipefail

die() { echo "lab: $*" >&2; exit 1; }

free_port() {
    # A port no socket on this machine uses, below Linux's ephemeral range
    # (32768+, where outgoing connections take their ports) and outside
    # dist-bind's default MASTER_PORT range (20000-29999).
    local p
    for _ in $(seq 200); do
        p=$((10000 + RANDOM % 10000))
        case " ${USED_PORTS:-} " in *" $p "*) continue ;; esac
        if ! ss -Hanp "( sport = :$p )" 2>/dev/null | grep . >/dev/null; then
            USED_PORTS="${USED_PORTS:-} $p"
            echo "$p"
            return
        fi
    done
    die "no free port found"
}

# Wait until a command succeeds, for at most $1 seconds; exit status 2 from
# the command means it never will.
wait_for() {
    local deadline=$((SECONDS + $1)) rc; shift
    while [ $SECONDS -lt $deadline ]; do
        "$@"; rc=$?
        [ $rc = 0 ] && return 0
        [ $rc = 2 ] && return 1
        sleep 0.1
    done
    return 1
}

pid_alive() {
    # PID 1 here reaps zombies slowly: a zombie counts as gone.
    local pid=$1 st
    [ -r "/proc/$pid/stat" ] || return 1
    # Gone between the test and the read: as gone.
    st=$(sed 's/^.*) //' "/proc/$pid/stat" 2>/dev/null | cut -d' ' -f1)
    [ -n "$st" ] && [ "$st" != Z ] && [ "$st" != X ]
}

# The processes of this lab's nodes: everything inside the mount namespaces
# the slurmds were started in (recorded by `up`), slurmstepds included, but
# the holders.  A holder (a sleep started in each node's namespace) keeps
# the namespace alive until the very end of `down`: the kernel gives a
# freed namespace's number to the next one made on the machine, so without
# it the kill loops could hit another lab's (or anyone's) processes.
ns_pids() {
    local d=$1 ns f mine nss="" pid holders
    holders=" $(cat "$d"/node*/holder.pid 2>/dev/null | tr '\n' ' ') "
    mine=$(readlink /proc/self/ns/mnt)
    for f in "$d"/node*/mntns; do
        [ -s "$f" ] || continue
        ns=$(cat "$f")
        [ "$ns" != "$mine" ] || continue # never the machine's own namespace
        nss+=" $ns"
    done
    [ -n "$nss" ] || return 0
    # One stat for all of /proc: "'/proc/PID/ns/mnt' -> 'mnt:[N]'".
    stat -c '%N' /proc/[0-9]*/ns/mnt 2>/dev/null | while read -r path _ target; do
        target=${target//\'/}
        [ -n "$target" ] || continue # unreadable (PID 1 here)
        case "$nss " in *" $target "*) ;; *) continue ;; esac
        pid=${path#\'/proc/}; pid=${pid%%/*}
        [[ "$pid" =~ ^[0-9]+$ ]] && [ "$pid" -gt 1 ] || continue
        case $holders in *" $pid "*) continue ;; esac
        pid_alive "$pid" && echo "$pid"
    done
    return 0
}

# --cgroup: each node gets its own subtree of the v1 devices and freezer
# hierarchies, bind-mounted over the hierarchy's root inside the node's
# mount namespace, so the two slurmds (which both use /slurm/uid_U/job_J/...)
# and concurrent labs never share a cgroup.
CGROUP_CONTROLLERS="devices freezer"
HIDDEN_CONTROLLERS="memory cpuset"
HIDE_CGROUPS=""
for c in $HIDDEN_CONTROLLERS; do
    HIDE_CGROUPS+="{ [ ! -d /sys/fs/cgroup/$c ] || mount -t tmpfs -o ro,size=4k,mode=0555 dist-bind-lab-hidden /sys/fs/cgroup/$c; } && "
done
cgroup_dir() { local b; b=$(basename "$1"); echo "/sys/fs/cgroup/$2/dist-bind-lab.${b#dist-bind-lab.}.$3"; }

# --cgroup2 (a machine with cgroup v2 alone, the guest): Slurm's own
# hierarchy in the one tree, each slurmd's steps under the scope that names
# its node (system.slice/nodeI_slurmstepd.scope), so the two slurmds never
# share a cgroup; one such lab at a time on a machine.
v2_only() { [ -f /sys/fs/cgroup/cgroup.controllers ] && ! grep -qv '^0::' /proc/self/cgroup; }

# Slurm 22.05's cgroup/v2 without systemd expects system.slice, with the
# controllers it uses enabled in the root's and its own subtree_control
# (else "Controller memory is not enabled!", and srun still exits 0).
v2_prepare() {
    local ctl="+cpuset +cpu +memory +pids"
    echo "$ctl" >/sys/fs/cgroup/cgroup.subtree_control
    mkdir -p /sys/fs/cgroup/system.slice
    echo "$ctl" >/sys/fs/cgroup/system.slice/cgroup.subtree_control
}

# Each node of a --cgroup2 lab in a network namespace of its own: a veth
# from a bridge that holds the controller's address, V2_NET.1, to the
# node's eth0 with V2_NET.(I+1).  The names come from the lab's folder.
V2_NET=10.201.0
net_name() { echo "db$(echo "$1" | md5sum | cut -c1-6)$2"; }

net_up() {
    local d=$1 br
    br=$(net_name "$d" br)
    ! ip -o addr show | grep " $V2_NET.1/" >/dev/null || die "another --cgroup2 lab holds $V2_NET.1 on this machine"
    modprobe -a bridge veth 2>/dev/null || true
    ip link add "$br" type bridge || die "cannot make the bridge $br"
    echo "$br" >"$d/net"
    ip addr add "$V2_NET.1/24" dev "$br"
    ip link set "$br" up
}

# net_node DIR INDEX PID: the veth into the network namespace of PID.
net_node() {
    local d=$1 i=$2 pid=$3 veth br
    br=$(cat "$d/net")
    veth=$(net_name "$d" "n$i")
    ip link add "$veth" type veth peer name eth0 netns "$pid" || return 1
    ip link set "$veth" master "$br" up || return 1
    nsenter -t "$pid" --net sh -c "ip link set lo up && ip addr add $V2_NET.$((i + 2))/24 dev eth0 && ip link set eth0 up"
}

# The holder's pid file is written (0), or the command that was to write
# it is gone (2: it never will be).
holder_up() {
    [ ! -s "$1" ] || return 0
    kill -0 "$2" 2>/dev/null || return 2
    return 1
}

# The bridge; each veth went with its node's namespace.
net_down() {
    local d=$1 br
    [ -f "$d/net" ] || return 0
    br=$(cat "$d/net")
    ! ip link show "$br" >/dev/null 2>&1 || ip link del "$br" || echo "lab: could not remove the bridge $br" >&2
}

cgroup_remove() {
    local d=$1 c n dir
    [ -f "$d/cgroup" ] || return 0
    if [ "$(cat "$d/cgroup")" = 2 ]; then
        for n in $(lab_nodes "$d"); do
            dir=/sys/fs/cgroup/system.slice/${n}_slurmstepd.scope
            [ -d "$dir" ] || continue
            find "$dir" -depth -type d -exec rmdir {} + 2>/dev/null || true
            [ ! -d "$dir" ] || echo "lab: could not remove $dir" >&2
        done
        return 0
    fi
    for n in $(lab_nodes "$d"); do
        for c in $CGROUP_CONTROLLERS; do
            dir=$(cgroup_dir "$d" "$c" "$n")
            [ -d "$dir" ] || continue
            # Children first; a cgroup with processes left cannot go.
            find "$dir" -depth -type d -exec rmdir {} + 2>/dev/null || true
            [ ! -d "$dir" ] || echo "lab: could not remove $dir" >&2
        done
    done
}

node_procs_left() {
    # Anything but the slurmds themselves (their pid files are still there).
    local d=$1 pid keep
    keep=" $(cat "$d"/node*/slurmd.pid 2>/dev/null | tr '\n' ' ') "
    for pid in $(ns_pids "$d"); do
        case $keep in *" $pid "*) continue ;; esac
        pid_alive "$pid" && return 0
    done
    return 1
}

# TERM the processes of these pid files all at once, then wait for them
# (at most 10 s) and KILL what is left.
stop_pidfiles() {
    local f pid pids=()
    for f in "$@"; do
        [ -s "$f" ] || continue
        pid=$(cat "$f")
        [[ "$pid" =~ ^[0-9]+$ ]] || continue
        pid_alive "$pid" || continue
        kill -TERM "$pid" 2>/dev/null && pids+=("$pid")
    done
    [ ${#pids[@]} -gt 0 ] || return 0
    wait_for 10 none_alive "${pids[@]}" || true
    for pid in "${pids[@]}"; do
        ! pid_alive "$pid" || kill -KILL "$pid" 2>/dev/null || true
    done
}

none_alive() {
    local pid
    for pid in "$@"; do ! pid_alive "$pid" || return 1; done
}

# The lab's node names (DIR/nodes; node1 and node2 for a lab made before it).
lab_nodes() {
    if [ -f "$1/nodes" ]; then cat "$1/nodes"; else echo node1; echo node2; fi
}

cmd_down() {
    local d=${1:?lab.sh down DIR}
    [ -f "$d/slurm.conf" ] || die "$d is not a lab directory"
    if [ -s "$d/slurmctld.pid" ] && pid_alive "$(cat "$d/slurmctld.pid")"; then
        SLURM_CONF=$d/slurm.conf timeout 10 scancel --quiet --user=root 2>/dev/null || true
        # Let the steps end while the controller still answers: a
        # slurmstepd whose controller is gone retries its step-complete
        # message for ever and ignores SIGTERM.
        wait_for 30 eval '! node_procs_left "$d"' || true
    fi
    local n
    stop_pidfiles $(for n in $(lab_nodes "$d"); do echo "$d/$n/slurmd.pid"; done)
    stop_pidfiles "$d/slurmctld.pid" "$d/munged.pid"
    # Whatever is still inside the nodes' namespaces was started by this
    # lab: TERM, then KILL what ignores it.
    local pid left
    for pid in $(ns_pids "$d"); do kill -TERM "$pid" 2>/dev/null || true; done
    wait_for 5 eval '[ -z "$(ns_pids "$d")" ]' || true
    for pid in $(ns_pids "$d"); do kill -KILL "$pid" 2>/dev/null || true; done
    wait_for 5 eval '[ -z "$(ns_pids "$d")" ]' || true
    # Anything else we started is recorded in extra.pids.
    if [ -f "$d/extra.pids" ]; then
        while read -r pid; do
            pid_alive "$pid" && kill -TERM "$pid" 2>/dev/null || true
        done <"$d/extra.pids"
    fi
    left=$(ns_pids "$d" | tr '\n' ' ')
    [ -z "$left" ] || echo "lab: processes still in the nodes' namespaces: $left" >&2
    stop_pidfiles $(for n in $(lab_nodes "$d"); do echo "$d/$n/holder.pid"; done)
    cgroup_remove "$d"
    net_down "$d"
    [ -n "${LAB_KEEP:-}" ] || rm -rf "$d"
}

cmd_up() {
    local cpus=3 gpus=4 plugin="" d="" resv=0 cgroup=0 cli_filter="" tree_first="" tree="" uuids=0 types=0
    local stepmgr=0 oci=0 nnodes=2 configless=0
    while [ $# -gt 0 ]; do
        case $1 in
            --nodes) nnodes=$2; shift 2 ;;
            --configless) configless=1; shift ;;
            --tree) tree=$2; shift 2 ;;
            --cgroup) cgroup=1; shift ;;
            --cgroup2) cgroup=2; shift ;;
            --cli-filter) cli_filter=$2; shift 2 ;;
            --cpus) cpus=$2; shift 2 ;;
            --gpus) gpus=$2; shift 2 ;;
            --plugin) plugin=$2; shift 2 ;;
            --dir) d=$2; shift 2 ;;
            --resv-ports) resv=1; shift ;;
            --tree-first) tree_first=$2; shift 2 ;;
            --gpu-uuids) uuids=1; shift ;;
            --gpu-types) types=1; shift ;;
            --stepmgr) stepmgr=1; shift ;;
            --oci) oci=1; shift ;;
            *) die "unknown argument $1" ;;
        esac
    done
    [[ "$nnodes" =~ ^[0-9]+$ ]] && [ "$nnodes" -ge 1 ] && [ "$nnodes" -le 250 ] || die "--nodes $nnodes: expected 1..250"
    [ -z "$tree" ] || [ -z "$tree_first" ] || die "--tree and --tree-first: one or the other"
    [ "$(id -u)" = 0 ] || die "the lab needs root (munged, slurmd, namespaces)"
    for b in munged slurmctld slurmd srun unshare; do
        command -v "$b" >/dev/null || die "$b not found (run 'make deps' as root)"
    done
    [ -n "$d" ] || d=$(mktemp -d /tmp/dist-bind-lab.XXXXXX)
    chmod 755 "$d"
    local nodes=() n
    for i in $(seq 1 "$nnodes"); do nodes+=("node$i"); done
    printf '%s\n' "${nodes[@]}" >"$d/nodes"
    local all="node[1-$nnodes]"
    [ "$nnodes" = 1 ] && all=node1
    mkdir -p "$d"/{state,dev,tmp}
    chmod 1777 "$d/tmp"
    for n in "${nodes[@]}"; do mkdir -p "$d/$n/tmp" && chmod 1777 "$d/$n/tmp"; done

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

    local ctl_port port=()
    USED_PORTS=""
    ctl_port=$(free_port); USED_PORTS+=" $ctl_port"
    for n in "${nodes[@]}"; do
        port+=("$(free_port)"); USED_PORTS+=" ${port[-1]}"
    done

    local gres_node="" task_plugin=task/none proctrack=proctrack/pgid half=$((gpus / 2))
    local ctl_addr=127.0.0.1 node_net=127.0.0.
    [ "$gpus" -gt 0 ] && gres_node="Gres=gpu:$gpus"
    [ "$types" = 1 ] && gres_node="Gres=gpu:a100:$half,gpu:v100:$((gpus - half))"
    if [ "$cgroup" = 1 ]; then
        [ -f /sys/fs/cgroup/devices/devices.list ] || die "--cgroup needs the cgroup v1 devices controller at /sys/fs/cgroup/devices"
        task_plugin=task/cgroup proctrack=proctrack/cgroup
        : >"$d/cgroup"
        cat >"$d/cgroup.conf" <<CONF
CgroupPlugin=cgroup/v1
CgroupAutomount=no
ConstrainDevices=yes
ConstrainCores=no
ConstrainRAMSpace=no
CONF
        for n in "${nodes[@]}"; do
            for c in $CGROUP_CONTROLLERS; do mkdir -p "$(cgroup_dir "$d" "$c" "$n")"; done
        done
    elif [ "$cgroup" = 2 ]; then
        v2_only || die "--cgroup2 needs a machine whose only cgroup hierarchy is v2 at /sys/fs/cgroup (this one has v1 hierarchies too; run it in the guest: tests/lab/kit/guest.sh)"
        task_plugin=task/cgroup proctrack=proctrack/cgroup
        echo 2 >"$d/cgroup"
        {
            echo "CgroupPlugin=cgroup/v2"
            # No systemd in the guest: slurmd makes its scope itself.
            echo "IgnoreSystemd=yes"
            # 22.05 mounts nothing itself without it; later releases call
            # the option defunct.
            [[ "$(slurmd -V)" =~ \ 22\. ]] && echo "CgroupAutomount=yes"
            echo "ConstrainDevices=yes"
            echo "ConstrainCores=no"
            echo "ConstrainRAMSpace=no"
        } >"$d/cgroup.conf"
        v2_prepare
        net_up "$d" "${#nodes[@]}"
        ctl_addr=$V2_NET.1 node_net=$V2_NET.
    fi
    if [ -n "$cli_filter" ]; then
        [ -f /usr/lib/x86_64-linux-gnu/slurm-wlm/cli_filter_lua.so ] || die "--cli-filter needs Slurm's cli_filter/lua"
        install -m 0644 "$cli_filter" "$d/cli_filter.lua"
    fi
    if [ -n "$tree_first" ]; then
        # NODE's leaf switch first, the other nodes on a second one.
        local others=() ; for n in "${nodes[@]}"; do [ "$n" = "$tree_first" ] || others+=("$n"); done
        tree=$tree_first
        [ ${#others[@]} = 0 ] || tree+=";$(IFS=,; echo "${others[*]}")"
    fi
    if [ -n "$tree" ]; then
        # topology/tree with the leaf switches in the order given: Slurm
        # 26.05 ranks the nodes by it and places task 0 on the lowest-ranked
        # node, the first switch's first node.
        local sw=() leaf
        IFS=';' read -r -a sw <<<"$tree"
        : >"$d/topology.conf"
        for i in "${!sw[@]}"; do
            leaf=${sw[$i]}
            [ -n "$leaf" ] || die "--tree '$tree': an empty switch"
            echo "SwitchName=s$i Nodes=$leaf" >>"$d/topology.conf"
        done
        echo "SwitchName=top Switches=s[0-$((${#sw[@]} - 1))]" >>"$d/topology.conf"
    fi
    cat >"$d/slurm.conf" <<CONF
ClusterName=lab
SlurmctldHost=localhost($ctl_addr)
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
SlurmdDebug=${LAB_SLURMD_DEBUG:-info}
# At verbose, slurmd logs whether it touched the cgroup it started in
# (tests/lab/t_lab_cgroups.py).
DebugFlags=CGROUP
TmpFS=$d/%n/tmp
ProctrackType=$proctrack
TaskPlugin=$task_plugin
$([ -n "$cli_filter" ] && echo "CliFilterPlugins=cli_filter/lua")
$([ -n "$tree" ] && echo "TopologyPlugin=topology/tree")
$(params=(); [ "$stepmgr" = 1 ] && params+=(enable_stepmgr); [ "$configless" = 1 ] && params+=(enable_configless)
  [ ${#params[@]} = 0 ] || echo "SlurmctldParameters=$(IFS=,; echo "${params[*]}")"
  [ "$stepmgr" = 1 ] && echo "PrologFlags=contain")
# Job ids of concurrent labs (and of earlier runs) do not repeat.
FirstJobId=$((1000 + RANDOM * 16 + RANDOM % 16))
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
# Heterogeneous jobs (t_het) wait for the backfill scheduler: a 1 s cycle, not 30 s.
SchedulerParameters=bf_interval=1
InactiveLimit=0
KillWait=5
MinJobAge=2
SlurmctldTimeout=30
SlurmdTimeout=30
MessageTimeout=20
$(for i in "${!nodes[@]}"; do
    echo "NodeName=${nodes[$i]} NodeHostname=${nodes[$i]} NodeAddr=$node_net$((i + 2)) Port=${port[$i]} CPUs=$cpus RealMemory=1000 $gres_node State=UNKNOWN"
  done)
PartitionName=lab Nodes=$all Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
CONF
    if [ "$uuids" = 1 ]; then
        # gpu/nvidia AutoDetect on the fake driver tree of fake_nvidia.sh;
        # Flags=env_uuid (26.05) lists the GPUs by UUID.
        printf 'AutoDetect=nvidia\nNodeName=%s Name=gpu Flags=env_uuid\n' "$all" >"$d/gres.conf"
    elif [ "$types" = 1 ]; then
        # Two GPU types per node: the first half a100, the rest v100.
        printf 'AutoDetect=off\nNodeName=%s Name=gpu Type=a100 File=%s\nNodeName=%s Name=gpu Type=v100 File=%s\n' \
            "$all" "$d/dev/nvidia[0-$((half - 1))]" "$all" "$d/dev/nvidia[$half-$((gpus - 1))]" >"$d/gres.conf"
    else
        {
            echo "AutoDetect=off"
            [ "$gpus" -gt 0 ] && echo "NodeName=$all Name=gpu File=$gfile"
        } >"$d/gres.conf"
    fi
    if [ -n "$plugin" ]; then
        echo "optional $plugin" >"$d/plugstack.conf"
    else
        : >"$d/plugstack.conf"
    fi
    if [ "$oci" = 1 ]; then
        # srun --container: Slurm reads oci.conf next to slurm.conf and runs
        # the task through crun.  crun keeps its state in the lab; it joins
        # no cgroup (the lab's tasks stay where Slurm put them).
        command -v crun >/dev/null || die "--oci needs crun"
        mkdir -p "$d/crun"
        local crun="crun --root=$d/crun"
        cat >"$d/oci.conf" <<CONF
RunTimeQuery="$crun state %n.%u.%j.%s.%t"
RunTimeKill="$crun kill -a %n.%u.%j.%s.%t"
RunTimeDelete="$crun delete --force %n.%u.%j.%s.%t"
RunTimeRun="$crun --cgroup-manager=disabled run --bundle %b %n.%u.%j.%s.%t"
CONF
    fi
    {
        echo "127.0.0.1 localhost"
        for i in "${!nodes[@]}"; do echo "$node_net$((i + 2)) ${nodes[$i]}"; done
    } >"$d/hosts"
    # Before slurmd or a client has a configuration it finds munged at the
    # default socket only: a tmpfs on /run of the node's (or login node's)
    # own namespace links it to the lab's.
    local own_run="mount -t tmpfs -o size=1m,mode=0755 dist-bind-lab-run /run && mkdir /run/munge && ln -s '$d/munge.sock' /run/munge/munge.socket.2"
    if [ "$configless" = 1 ]; then
        # The login node has no Slurm configuration of its own (an empty
        # /etc/slurm), but for cli_filter.lua on Slurm before 23.02, whose
        # clients fetch the controller's copy and do not use it.
        local etc="mount -t tmpfs -o size=1m,mode=0755 dist-bind-lab-etc /etc/slurm"
        if [ -n "$cli_filter" ] && [[ "$(slurmctld -V)" =~ \ 22\. ]]; then
            etc+=" && cp '$d/cli_filter.lua' /etc/slurm/"
        fi
        cat >"$d/client" <<CLIENT
#!/bin/sh
# A login node of this configless lab: CMD in a mount namespace of its own
# without slurm.conf, fetching the configuration from slurmctld.
exec unshare --mount --propagation private sh -c "$own_run && { [ ! -d /etc/slurm ] || $etc; } && exec env -u SLURM_CONF SLURM_CONF_SERVER=$ctl_addr:$ctl_port \\"\\\$@\\"" sh "\$@"
CLIENT
        chmod 755 "$d/client"
    fi
    printf 'export SLURM_CONF=%s/slurm.conf\n' "$d" >"$d/env"

    export SLURM_CONF=$d/slurm.conf
    slurmctld -c -i >"$d/slurmctld.out" 2>&1 || die "slurmctld failed: $(tail -5 "$d/slurmctld.log")"
    local c binds slurmd_args upids=()
    for n in "${nodes[@]}"; do
        mkdir -p "$d/$n/spool"
        # Slurm 25.05+ slurmd (cgroup v1) resets the memory and cpuset
        # limits of the cgroup it starts in, which here is the machine's
        # own: the node's namespace shows those controllers as empty,
        # read-only directories (slurmd then logs "controller not found").
        binds="$HIDE_CGROUPS"
        [ "$uuids" = 1 ] && binds+="'$HERE/fake_nvidia.sh' '$d/$n' ${n#node} $gpus && "
        # crun stops with "cgroups in hybrid mode not supported" when the
        # v2 hierarchy (cgroup/unified) has controllers, as here.
        [ "$oci" = 1 ] && binds+="{ [ ! -d /sys/fs/cgroup/unified ] || mount -t tmpfs -o ro,size=4k,mode=0555 dist-bind-lab-hidden /sys/fs/cgroup/unified; } && "
        if [ "$cgroup" = 1 ]; then
            for c in $CGROUP_CONTROLLERS; do
                binds+="mount --bind '$(cgroup_dir "$d" "$c" "$n")' /sys/fs/cgroup/$c && "
            done
        fi
        slurmd_args="-N $n"
        if [ "$configless" = 1 ]; then
            binds+="$own_run && "
            slurmd_args="--conf-server $ctl_addr:$ctl_port -N $n"
        fi
        # --cgroup2: a network namespace too, which gets its veth from
        # here once the holder runs in it; slurmd waits for that.
        local netns="" gate=""
        if [ "$cgroup" = 2 ]; then
            netns=--net
            gate="while [ ! -e '$d/$n/net.ok' ]; do sleep 0.1; done && "
        fi
        # The namespace is recorded before slurmd starts, so `down` finds
        # every process of the node, whatever happens next.
        unshare $netns --uts --mount --propagation private sh -c \
            "hostname $n && mount --bind '$d/hosts' /etc/hosts && $binds readlink /proc/self/ns/mnt >'$d/$n/mntns' && { sleep infinity </dev/null >/dev/null 2>&1 & echo \$! >'$d/$n/holder.pid'; } && $gate exec env $([ "$configless" = 1 ] && echo "-u SLURM_CONF") ${LAB_SLURMD_ENV:-} slurmd $slurmd_args" \
            >"$d/$n/slurmd.out" 2>&1 &
        local upid=$! i=${n#node}
        if [ "$cgroup" = 2 ]; then
            # The guest's slurmds start at once (each takes seconds there).
            wait_for 30 holder_up "$d/$n/holder.pid" $upid && net_node "$d" $((i - 1)) "$(cat "$d/$n/holder.pid")" \
                || die "$n: no network namespace: $(cat "$d/$n/slurmd.out")"
            : >"$d/$n/net.ok"
            upids+=("$n:$upid")
        else
            wait $upid || die "slurmd $n failed: $(tail -5 "$d/$n/slurmd.log" 2>/dev/null; cat "$d/$n/slurmd.out")"
        fi
    done
    for n in "${upids[@]}"; do
        wait "${n#*:}" || die "slurmd ${n%%:*} failed: $(tail -5 "$d/${n%%:*}/slurmd.log" 2>/dev/null; cat "$d/${n%%:*}/slurmd.out")"
    done
    if ! wait_for $((30 + nnodes / 2)) lab_ready "$d"; then
        timeout 5 sinfo -N >&2 || true
        for f in "$d/slurmctld.log" "$d"/node*/slurmd.log; do
            [ -f "$f" ] && { echo "== $f" >&2; tail -n 5 "$f" >&2; }
        done
        return 1
    fi
    echo "$d"
}

# Every node idle; fails at once (instead of waiting) if a daemon died.
lab_ready() {
    local d=$1 f n states
    for f in "$d/slurmctld.pid" $(for n in $(lab_nodes "$d"); do echo "$d/$n/slurmd.pid"; done); do
        if [ -s "$f" ] && ! pid_alive "$(cat "$f")"; then
            echo "lab: the daemon of $f died" >&2
            return 2
        fi
    done
    states=$(timeout 5 sinfo -h -o '%t %D' 2>/dev/null) || return 1
    [ "$states" = "idle $(lab_nodes "$d" | wc -l)" ]
}

# Ports are picked at random and checked, but another process can take one
# before our daemon binds it: start again with new ports a few times.
cmd_up_retry() {
    local try d given=""
    for a in "$@"; do [ "$a" = --dir ] && given=1; done
    [ -z "$given" ] || { cmd_up "$@"; return; }
    for try in 1 2 3; do
        d=$(mktemp -d /tmp/dist-bind-lab.XXXXXX)
        if (cmd_up "$@" --dir "$d"); then return 0; fi
        echo "lab: start $try failed, retrying with new ports" >&2
        [ -f "$d/slurm.conf" ] && LAB_KEEP= cmd_down "$d"
        rm -rf "$d"
    done
    die "the lab did not start (see messages above)"
}

# --release R: the lab of another Slurm release, run inside its root
# (release.sh); DIR/release remembers it for `down`.
release_hook() {
    local cmd=$1 rel="" a args=(); shift
    local all=("$@")
    if [ "$cmd" = up ]; then
        while [ $# -gt 0 ]; do
            if [ "$1" = --release ]; then rel=${2:?--release RELEASE}; shift 2; else args+=("$1"); shift; fi
        done
    else
        args=("$@")
        [ -f "${1:-}/release" ] && rel=$(cat "$1/release")
    fi
    if [ -n "$rel" ] && [ "${DIST_BIND_IN_RELEASE:-}" != "$rel" ] && [ "$rel" != "$("$HERE/release.sh" native)" ]; then
        exec "$HERE/release.sh" run "$rel" "$HERE/lab.sh" "$cmd" "${all[@]}"
    fi
    if [ "$cmd" = up ]; then
        a=$(cmd_up_retry "${args[@]}") || exit 1
        printf '%s\n' "$a"
        [ -z "$rel" ] || echo "$rel" >"${a##*$'\n'}/release"
    else
        cmd_down "${args[@]}"
    fi
}
HERE=$(cd "$(dirname "$0")" && pwd)

case ${1:-} in
    up | down) release_hook "$@" ;;
    *) echo "usage: lab.sh up [--nodes N] [--cpus N] [--gpus N] [--plugin SO] [--dir DIR] [--resv-ports] [--cgroup] [--cli-filter LUA] [--tree-first NODE | --tree SWITCHES] [--gpu-uuids] [--gpu-types] [--stepmgr] [--oci] [--configless] [--release R] | lab.sh down DIR" >&2; exit 2 ;;
esac
