#!/usr/bin/env bash
# The lab on another Slurm release: a Debian root that ships it, cached
# under build/, and the plugin, libdistbind and dist-bind-check built
# against that release's headers.
#
#   release.sh list                 the releases this script knows, one a line
#   release.sh native               the release installed on this machine (e.g. 22.05)
#   release.sh root RELEASE         make the root (or reuse the cached one); print its path
#   release.sh build RELEASE        root, then `make` inside it into build/slurm-RELEASE/
#   release.sh run RELEASE CMD...   run CMD inside the root (same working directory)
#
# A root is made once with mmdebstrap from the Debian mirror apt uses here
# and kept under build/roots/ with the list of packages it was made with;
# a changed list makes it again.  Nothing is mounted in this machine's own
# mount namespace: `run` enters a private one, mounts the root under a
# throw-away overlay (so it is a mount point of its own, which slurmd's
# `unshare --propagation private` needs, and what runs there never changes
# the cache), mounts /proc, binds /dev, /sys (recursively: slurmd 24.11
# needs the cgroup mounts), /tmp (the labs' directories), this checkout and
# /usr/local/cuda at their own paths, and pivot_roots into it (see
# inside()).  Everything mounted goes
# away with the command's last process.  Inside, DIST_BIND_IN_RELEASE is
# the release.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../../.." && pwd)
ROOTS=$REPO/build/roots

die() { echo "release: $*" >&2; exit 1; }

# RELEASE -> Debian suite whose archive ships it.
suite_of() {
    case $1 in
        24.11) echo trixie ;;
        26.05) echo sid ;;
        *) return 1 ;;
    esac
}

# What the root needs: Slurm's daemons, clients and headers; the build; the
# lab's tools; the PyTorch client; the packaging tools.
PACKAGES=(
    slurmd slurmctld slurm-client munge libslurm-dev libpmi2-0-dev libpmix-dev
    build-essential g++ make pkg-config hwloc libhwloc-dev libsodium-dev
    python3 python3-torch
    iproute2 mount procps util-linux
    dpkg-dev debhelper fakeroot lintian rpm man-db git
)

# What one suite's root adds: the launchers, MPI stacks, frameworks and
# container runtimes the lab runs on that release only (issues 18 and 19).
extra_packages() {
    case $1 in
        trixie) echo python3-mpi4py openmpi-bin libopenmpi-dev mpich libmpich-dev \
                crun runc ;;
        sid) echo python3-mpi4py openmpi-bin libopenmpi-dev mpich libmpich-dev \
                python3-accelerate python3-transformers \
                apptainer squashfs-tools crun runc ;;
    esac
}

native() {
    local v
    v=$(dpkg-query -W -f='${Version}' libslurm-dev 2>/dev/null) || return 1
    v=${v#*:}
    echo "$v" | cut -d. -f1-2
}

root_dir() { echo "$ROOTS/$(suite_of "$1")"; }

# The cache key: the suite and the package list.
root_key() {
    local suite
    suite=$(suite_of "$1")
    printf '%s\n' "$suite" "${PACKAGES[@]}" $(extra_packages "$suite") | sha256sum | cut -c1-16
}

# Refuse to delete a root something still has mounted below (a command run
# outside this script's namespaces).
assert_unmounted() {
    if awk -v r="$1" '$5 == r || index($5, r "/") == 1 { found = 1 } END { exit !found }' /proc/self/mountinfo; then
        die "$1 has mounts in this namespace; unmount them first"
    fi
}

cmd_root() {
    local rel=$1 suite dir key tmp start
    suite=$(suite_of "$rel") || die "unknown release $rel (known: $(cmd_list | tr '\n' ' '))"
    dir=$(root_dir "$rel")
    key=$(root_key "$rel")
    mkdir -p "$ROOTS"
    exec 9>"$ROOTS/.lock"
    flock 9 # one maker at a time; the others then find it made
    if [ -f "$dir.ok" ] && [ "$(cat "$dir.ok")" = "$key" ] && [ -x "$dir/usr/sbin/slurmd" ]; then
        echo "$dir"
        return 0
    fi
    [ "$(id -u)" = 0 ] || die "making the $suite root needs root"
    command -v mmdebstrap >/dev/null || die "mmdebstrap not found (make deps)"
    rm -f "$dir.ok"
    for old in "$dir" "$dir.new"; do
        if [ -e "$old" ]; then assert_unmounted "$old"; rm -rf --one-file-system "$old"; fi
    done
    start=$SECONDS
    echo "release: making the Debian $suite root for Slurm $rel in $dir (minutes; cached afterwards)" >&2
    tmp=$dir.new
    # Recommends off, as for this machine's own packages.  The mirror is
    # the one apt uses here.
    # The archive snapshot these machines reach serves sid's Release file
    # past its Valid-Until: apt in that root is told not to check it (the
    # option stays in the root's apt configuration).
    local valid=()
    [ "$suite" = sid ] && valid=(--aptopt='Acquire::Check-Valid-Until "false"')
    mmdebstrap --mode=root --variant=apt --format=directory \
        --aptopt='APT::Install-Recommends "false"' "${valid[@]}" \
        --include="$(echo "${PACKAGES[@]}" $(extra_packages "$suite") | tr ' ' ,)" \
        "$suite" "$tmp" "deb http://deb.debian.org/debian $suite main" >"$ROOTS/$suite.log" 2>&1 \
        || { tail -n 30 "$ROOTS/$suite.log" >&2; die "mmdebstrap failed (log: $ROOTS/$suite.log)"; }
    mv "$tmp" "$dir"
    echo "$key" >"$dir.ok"
    echo "release: $suite root made in $((SECONDS - start)) s" >&2
    echo "$dir"
}

# Inside a private mount namespace: the root, under a throw-away layer, as
# a mount point of its own; the machine's /proc, /dev, /sys, /tmp, this
# checkout and CUDA at their own paths; then pivot_root.
inside() {
    local root=$1 cwd=$2 top scratch; shift 2
    top=$root.top scratch=$root.scratch
    mkdir -p "$top" "$scratch"
    # What a command writes into the root (a test's dpkg -i, logs, pid
    # files) lands in memory and is gone with the namespace: the cached
    # root itself never changes after it was made.
    mount -t tmpfs -o mode=0755 tmpfs "$scratch"
    mkdir "$scratch/upper" "$scratch/work"
    mount -t overlay overlay -o "lowerdir=$root,upperdir=$scratch/upper,workdir=$scratch/work" "$top"
    mount -t proc proc "$top/proc"
    mount --rbind /dev "$top/dev"
    mount --rbind /sys "$top/sys"
    mount --bind /tmp "$top/tmp"
    # This machine's name resolves as it does outside (slurmctld answers
    # srun at its host name).
    [ -e "$top/etc/hosts" ] || : >"$top/etc/hosts"
    mount --bind /etc/hosts "$top/etc/hosts"
    mkdir -p "$top$REPO"
    mount --bind "$REPO" "$top$REPO"
    if [ -d /usr/local/cuda/include ]; then
        mkdir -p "$top/usr/local/cuda"
        mount --bind /usr/local/cuda "$top/usr/local/cuda"
    fi
    # pivot_root, not chroot: Apptainer's starter aborts in a chroot (it
    # joins a mount namespace, finds another root there: "weak chrooted
    # environment"), and the kernel refuses a chrooted process a user
    # namespace.  The machine's root is then detached from this namespace.
    # Where pivot_root cannot be had (this script run inside a chroot
    # itself), chroot as before: only Apptainer's test notices.
    local enter=(chroot "$top")
    cd "$top"
    if pivot_root . . 2>/dev/null; then
        umount -l .
        enter=()
    fi
    exec "${enter[@]}" /usr/bin/env -C "$cwd" DIST_BIND_IN_RELEASE="$REL" \
        PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$@"
}

cmd_run() {
    local rel=${1:?release.sh run RELEASE CMD...} root; shift
    [ $# -gt 0 ] || die "run: no command"
    root=$(cmd_root "$rel")
    REL=$rel exec unshare --mount --propagation private -- "$HERE/release.sh" _inside "$root" "$PWD" "$@"
}

cmd_build() {
    local rel=${1:?release.sh build RELEASE}; shift
    cmd_run "$rel" make -C "$REPO" --no-print-directory -j2 B="build/slurm-$rel" "${@:-build-all}"
}

cmd_list() { printf '%s\n' 24.11 26.05; }

case ${1:-} in
    list) cmd_list ;;
    native) native ;;
    root) shift; cmd_root "${1:?release.sh root RELEASE}" ;;
    build) shift; cmd_build "$@" ;;
    run) shift; cmd_run "$@" ;;
    _inside) shift; inside "$@" ;;
    *) sed -n '2,/^set /p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
