#!/bin/bash
# PID 1 of the cgroup v2 guest (tests/lab/kit/guest.sh puts it in the image as
# /sbin/dist-bind-guest-init).  No systemd: it mounts what the lab needs,
# with the cgroup v2 hierarchy alone at /sys/fs/cgroup (the kernel runs with
# cgroup_no_v1=all), mounts the host's shares, runs the command the host
# wrote, writes its exit status to the share and powers the guest off.
#
# Shares (9p, virtio): "guest" (the run's folder on the host: env, cmd, and
# out and rc written back), "repo" (the checkout, read-only, at its host
# path), "logs" (the checkout's build/test-logs, writable, over the same
# path in the read-only checkout).
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export LC_ALL=C.UTF-8 HOME=/root

say() { echo "guest-init: $*" >/dev/console; }

off() {
    sync
    echo o >/proc/sysrq-trigger
    sleep 60
}

mnt() { mountpoint -q "$2" || mount -t "$1" "${@:3}" "$1" "$2"; }
mnt proc /proc
mnt sysfs /sys
mnt devtmpfs /dev
mkdir -p /dev/pts /dev/shm
mnt devpts /dev/pts
mnt tmpfs /dev/shm -o mode=1777
mnt tmpfs /run -o mode=0755
mnt tmpfs /tmp -o mode=1777
mnt cgroup2 /sys/fs/cgroup -o nsdelegate

P9=(-t 9p -o trans=virtio,version=9p2000.L,msize=512000)
mkdir -p /mnt/guest
if ! mount "${P9[@]}" guest /mnt/guest; then
    say "cannot mount the host's share"
    off
fi
# REPO (the checkout's path), RELEASE.
. /mnt/guest/env
mkdir -p "$REPO"
mount "${P9[@]},ro,cache=loose" repo "$REPO" || { say "cannot mount the checkout"; echo 125 >/mnt/guest/rc; off; }
if [ -d "$REPO/build/test-logs" ]; then
    mount "${P9[@]}" logs "$REPO/build/test-logs" || { say "cannot mount the test logs"; echo 125 >/mnt/guest/rc; off; }
fi
hostname guest
# mmdebstrap makes no /etc/hosts; the lab binds its own over it per node.
[ -e /etc/hosts ] || echo "127.0.0.1 localhost" >/etc/hosts
ip link set lo up
say "up; running the command"
# The host gives up on a guest that does not get here in time (TCG too slow).
: >/mnt/guest/booted

cd "$REPO"
bash /mnt/guest/cmd </dev/null >/mnt/guest/out 2>&1
echo $? >/mnt/guest/rc.new
mv /mnt/guest/rc.new /mnt/guest/rc
say "done (exit status $(cat /mnt/guest/rc))"
umount "$REPO/build/test-logs" 2>/dev/null
umount "$REPO" 2>/dev/null
umount /mnt/guest 2>/dev/null
off
