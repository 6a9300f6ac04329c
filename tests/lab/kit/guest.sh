#!/usr/bin/env bash
# The cgroup v2 guest: a virtual machine (qemu, TCG) with its own Debian
# kernel, booted with cgroup v1 switched off, in which the lab runs on a
# pure cgroup v2 hierarchy (this machine's kernel mounts v1 controllers,
# and every Slurm release refuses cgroup/v2 beside them: "Hybrid mode is not
# supported").
#
#   guest.sh list                   the Slurm releases with a guest, one a line
#   guest.sh check                  exit 0 if a guest can run here; else print
#                                   why and exit 77
#   guest.sh image RELEASE          make the guest's files (or reuse them); print their folder
#   guest.sh run RELEASE [--timeout S] CMD...
#                                   boot the guest, run CMD in it (as root, in
#                                   this checkout at its own path), print its
#                                   output, power the guest off; exit with
#                                   CMD's status (77: no guest can run here,
#                                   or it did not boot within
#                                   DIST_BIND_GUEST_BOOT_LIMIT s, default 300:
#                                   TCG too slow)
#
# Made once per Debian suite (22.05: bookworm, 24.11: trixie, 26.05: sid) and
# kept under build/guest/SUITE/ with the key it was made with (the package
# list and this recipe; a changed key makes it again):
#   root/      mmdebstrap: the suite's kernel, initramfs-tools (sid's kernel
#              would pull dracut), Slurm, munge, python3, the lab's tools and
#              the libraries dist-bind links; nothing else (no compiler: the
#              project is built on this machine, against the same release,
#              into build/ or build/slurm-RELEASE/)
#   vmlinux    the kernel, decompressed from /boot/vmlinuz-* (zstd or xz):
#              qemu boots it directly (PVH), without decompressing it in TCG
#   initrd     initramfs-tools with MODULES=list (virtio, ext4, 9p)
#   disk.img   mke2fs -d root/ with tests/lab/kit/guest-init.sh as /sbin/dist-bind-guest-init;
#              opened with snapshot=on, so it never changes
# `run` boots it with `cgroup_no_v1=all`, shares this checkout read-only,
# build/test-logs writable and a folder of its own (build/guest/run.*: the
# command, its output and status, qemu's temporary files, the console log)
# over 9p, with no network device; the guest powers itself off when the
# command ends, and qemu is killed by its pid if it outlives the timeout.
# Nothing is mounted on this machine and nothing is written outside build/.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../../.." && pwd)
GUESTS=$REPO/build/guest
QEMU=qemu-system-x86_64
# Part of the cache key: change it when the way the files are made changes.
RECIPE=1

die() { echo "guest: $*" >&2; exit 1; }
skip() { echo "guest: SKIP: $*" >&2; exit 77; }

suite_of() {
    case $1 in
        22.05) echo bookworm ;;
        24.11) echo trixie ;;
        26.05) echo sid ;;
        *) return 1 ;;
    esac
}

PACKAGES=(
    linux-image-amd64 initramfs-tools kmod
    slurmd slurmctld slurm-client munge
    python3 iproute2 util-linux procps mount hostname
)
# The libraries dist-bind's plugin and tools link or load (libsodium,
# hwloc, PMI2, PMIx): their names differ by suite.  Slurm's mpi/pmix
# plugin (22.05, 24.11) loads libpmix.so, which only libpmix-dev has.
suite_packages() {
    case $1 in
        bookworm) echo libsodium23 libhwloc15 libpmi2-0 libpmix2 libpmix-dev ;;
        trixie) echo libsodium23 libhwloc15 libpmi2-0t64 libpmix2t64 libpmix-dev ;;
        sid) echo libsodium26 libhwloc15 libpmi2-0t64 libpmix2t64 ;;
    esac
}
MODULES=(virtio_pci virtio_blk ext4 9pnet_virtio 9p)

root_key() {
    local suite=$1
    printf '%s\n' "$RECIPE" "$suite" "${PACKAGES[@]}" $(suite_packages "$suite") "${MODULES[@]}" | sha256sum | cut -c1-16
}
image_key() {
    { root_key "$1"; sha256sum <"$HERE/guest-init.sh"; } | sha256sum | cut -c1-16
}

# Whether a guest can run here at all (not whether it is fast).
cmd_check() {
    [ "$(id -u)" = 0 ] || skip "the guest needs root (its root file system is made with mmdebstrap)"
    command -v "$QEMU" >/dev/null || skip "$QEMU not found: install qemu-system-x86 (make deps)"
    command -v mmdebstrap >/dev/null || skip "mmdebstrap not found (make deps)"
    local b
    for b in mke2fs zstd xz; do command -v $b >/dev/null || skip "$b not found (make deps)"; done
    "$QEMU" -accel help 2>/dev/null | grep -x tcg >/dev/null || skip "$QEMU has no TCG accelerator"
    return 0
}

# The kernel inside a bzImage: the payload after the first zstd or xz
# magic, decompressed, an ELF file.
extract_kernel() {
    local img=$1 out=$2 off
    for magic in '\x28\xb5\x2f\xfd:zstd' '\xfd\x37\x7a\x58\x5a\x00:xz'; do
        off=$(LC_ALL=C grep -obUaP "${magic%%:*}" "$img" | head -1 | cut -d: -f1) || true
        [ -n "$off" ] || continue
        tail -c +$((off + 1)) "$img" | "${magic##*:}" -dc >"$out" 2>/dev/null || true
        if [ "$(head -c 4 "$out" | od -An -c | tr -d ' ')" = '177ELF' ]; then return 0; fi
    done
    return 1
}

cmd_image() {
    local rel=${1:?guest.sh image RELEASE} suite dir key ikey start kver
    suite=$(suite_of "$rel") || die "no guest for Slurm $rel (known: $(cmd_list | tr '\n' ' '))"
    cmd_check >/dev/null
    dir=$GUESTS/$suite
    key=$(root_key "$suite")
    ikey=$(image_key "$suite")
    mkdir -p "$dir"
    exec 8>"$dir/.lock"
    flock 8 # one maker at a time; the others then find it made
    if [ "$(cat "$dir/image.ok" 2>/dev/null)" = "$ikey" ] && [ -f "$dir/disk.img" ]; then
        echo "$dir"
        return 0
    fi
    rm -f "$dir/image.ok"
    if [ "$(cat "$dir/root.ok" 2>/dev/null)" != "$key" ] || [ ! -d "$dir/root/boot" ]; then
        start=$SECONDS
        echo "guest: making the Debian $suite root for the Slurm $rel guest (minutes; cached in $dir)" >&2
        rm -f "$dir/root.ok"
        rm -rf --one-file-system "$dir/root" "$dir/root.new"
        # Recommends off.  initramfs-tools is told before the kernel is
        # installed to make a small initrd (only the modules listed); the
        # archive snapshot these machines reach serves sid's Release file
        # past its Valid-Until.
        local valid=()
        [ "$suite" = sid ] && valid=(--aptopt='Acquire::Check-Valid-Until "false"')
        mmdebstrap --mode=root --variant=apt --format=directory \
            --aptopt='APT::Install-Recommends "false"' "${valid[@]}" \
            --essential-hook='mkdir -p "$1/etc/initramfs-tools/conf.d" "$1/usr/share/initramfs-tools/modules.d"' \
            --essential-hook='printf "MODULES=list\nCOMPRESS=gzip\n" >"$1/etc/initramfs-tools/conf.d/dist-bind-guest.conf"' \
            --essential-hook="printf '%s\n' ${MODULES[*]} >\"\$1/usr/share/initramfs-tools/modules.d/dist-bind-guest\"" \
            --include="$(echo "${PACKAGES[@]}" $(suite_packages "$suite") | tr ' ' ,)" \
            "$suite" "$dir/root.new" "deb http://deb.debian.org/debian $suite main" >"$dir/root.log" 2>&1 \
            || { tail -n 30 "$dir/root.log" >&2; die "mmdebstrap failed (log: $dir/root.log)"; }
        mv "$dir/root.new" "$dir/root"
        echo "$key" >"$dir/root.ok"
        echo "guest: $suite root made in $((SECONDS - start)) s" >&2
    fi
    start=$SECONDS
    kver=$(cd "$dir/root/boot" && ls vmlinuz-* | head -1) || die "no kernel in $dir/root/boot"
    kver=${kver#vmlinuz-}
    [ -f "$dir/root/boot/initrd.img-$kver" ] || die "no initrd for $kver in $dir/root/boot"
    extract_kernel "$dir/root/boot/vmlinuz-$kver" "$dir/vmlinux.new" || die "could not decompress the kernel $dir/root/boot/vmlinuz-$kver"
    mv "$dir/vmlinux.new" "$dir/vmlinux"
    cp "$dir/root/boot/initrd.img-$kver" "$dir/initrd"
    install -m 0755 "$HERE/guest-init.sh" "$dir/root/sbin/dist-bind-guest-init"
    rm -f "$dir/disk.img.new"
    mke2fs -q -t ext4 -L dist-bind-guest -d "$dir/root" "$dir/disk.img.new" 2G >/dev/null || die "mke2fs failed"
    mv "$dir/disk.img.new" "$dir/disk.img"
    echo "$ikey" >"$dir/image.ok"
    echo "guest: $suite image made in $((SECONDS - start)) s" >&2
    echo "$dir"
}

cmd_run() {
    local rel=${1:?guest.sh run RELEASE [--timeout S] CMD...} timeout=3600 dir run qpid rc=0 start
    shift
    if [ "${1:-}" = --timeout ]; then timeout=$2; shift 2; fi
    [ $# -gt 0 ] || die "run: no command"
    cmd_check
    suite_of "$rel" >/dev/null || die "no guest for Slurm $rel (known: $(cmd_list | tr '\n' ' '))"
    # The project as built against the guest's release: this machine's own
    # build, or the one made in that release's root (release.sh).
    local native build
    native=$("$HERE/release.sh" native 2>/dev/null || true)
    if [ "$rel" = "$native" ]; then
        build=$REPO/build
    elif "$HERE/release.sh" list | grep -x "$rel" >/dev/null; then  # not -q: under pipefail, a grep that quits at the first line leaves release.sh to die of SIGPIPE
        build=$REPO/build/slurm-$rel
    else
        skip "no build against Slurm $rel here (this machine runs ${native:-no Slurm}; release.sh builds $("$HERE/release.sh" list | tr '\n' ' '))"
    fi
    [ -f "$build/spank_dist_bind.so" ] || die "$build/spank_dist_bind.so is not built (make; or tests/lab/kit/release.sh build $rel lab-bins)"
    dir=$(cmd_image "$rel")
    mkdir -p "$GUESTS"
    run=$(mktemp -d "$GUESTS/run.XXXXXX")
    mkdir -p "$run/tmp"
    printf 'REPO=%q\nRELEASE=%q\n' "$REPO" "$rel" >"$run/env"
    # The command, with the release named for the lab inside.
    {
        printf 'export DIST_BIND_IN_GUEST=%q DIST_BIND_IN_RELEASE=%q DIST_BIND_BUILD=%q\n' "$rel" "$rel" "$build"
        printf 'exec'
        printf ' %q' "$@"
        printf '\n'
    } >"$run/cmd"
    mkdir -p "$REPO/build/test-logs"
    : >"$run/out"
    start=$SECONDS
    # qemu's own temporary files (the snapshot's overlay) go into the run's folder.
    # One vCPU and mitigations=off: under TCG each process start costs
    # tens of milliseconds, less with one vCPU (no cross-CPU TLB
    # shootdowns) and without the kernel's Spectre mitigations (measured
    # with 100 runs of /bin/true: 10.2 s with 2 vCPUs and mitigations, 7.4
    # s without them, 5.0 s with one vCPU); and one vCPU leaves this
    # machine's other core to the tests that run beside the guest.
    TMPDIR=$run/tmp "$QEMU" -accel tcg,tb-size=256 -cpu max -smp 1 -m 3072 \
        -nodefaults -no-user-config -display none -no-reboot -nic none \
        -kernel "$dir/vmlinux" -initrd "$dir/initrd" \
        -append "console=ttyS0 root=/dev/vda rw init=/sbin/dist-bind-guest-init cgroup_no_v1=all panic=-1 quiet mitigations=off" \
        -drive "file=$dir/disk.img,format=raw,if=virtio,snapshot=on" \
        -virtfs "local,path=$run,mount_tag=guest,security_model=passthrough" \
        -virtfs "local,path=$REPO,mount_tag=repo,security_model=passthrough,readonly=on" \
        -virtfs "local,path=$REPO/build/test-logs,mount_tag=logs,security_model=passthrough" \
        -serial "file:$run/console.log" </dev/null >"$run/qemu.out" 2>&1 &
    qpid=$!
    # The command's output as it comes; qemu is waited for, and killed by
    # its pid past the timeout.
    tail -n +1 -f --pid=$qpid "$run/out" &
    local tpid=$!
    local deadline=$((SECONDS + timeout)) boot_limit=${DIST_BIND_GUEST_BOOT_LIMIT:-300} slow=""
    while kill -0 $qpid 2>/dev/null; do
        if [ ! -e "$run/booted" ] && [ $((SECONDS - start)) -ge "$boot_limit" ]; then
            # It boots in 20-40 s here; this machine's TCG is too slow for the lab.
            echo "guest: $rel: not booted after ${boot_limit} s; killing qemu ($qpid)" >&2
            kill -KILL $qpid 2>/dev/null || true
            slow=1
            break
        fi
        if [ $SECONDS -ge $deadline ]; then
            echo "guest: $rel: no end after ${timeout} s; killing qemu ($qpid)" >&2
            kill -TERM $qpid 2>/dev/null || true
            sleep 2
            kill -KILL $qpid 2>/dev/null || true
            break
        fi
        sleep 1
    done
    wait $qpid 2>/dev/null || true
    wait $tpid 2>/dev/null || true
    if [ -n "$slow" ]; then
        [ -n "${GUEST_KEEP:-}" ] || rm -rf "$run"
        skip "qemu's TCG is too slow here: the guest did not boot within ${boot_limit} s (20-40 s on a 2-core VM; DIST_BIND_GUEST_BOOT_LIMIT)"
    fi
    if [ -s "$run/rc" ]; then
        rc=$(cat "$run/rc")
        echo "guest: $rel: exit status $rc, $((SECONDS - start)) s from boot to power-off" >&2
    else
        echo "guest: $rel: the guest ended without the command's exit status; its console:" >&2
        tail -n 30 "$run/console.log" >&2 || true
        tail -n 5 "$run/qemu.out" >&2 || true
        rc=1
    fi
    [ -n "${GUEST_KEEP:-}" ] || rm -rf "$run"
    return "$rc"
}

cmd_list() { printf '%s\n' 22.05 24.11 26.05; }

case ${1:-} in
    list) cmd_list ;;
    check) cmd_check ;;
    image) shift; cmd_image "$@" ;;
    run) shift; cmd_run "$@" ;;
    *) sed -n '2,/^set /p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
