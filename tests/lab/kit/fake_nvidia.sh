#!/usr/bin/env bash
# Inside one lab node's private mount namespace (lab.sh up --gpu-uuids):
# what Slurm's gpu/nvidia AutoDetect reads without NVML (25.11+), so that
# slurmd finds NGPUS NVIDIA GPUs with UUIDs and gres.conf's Flags=env_uuid
# can put them in the GPU lists:
#   /proc/driver/nvidia/gpus/BUS/information  ("Model:", "GPU UUID:", "Device Minor:")
#   /sys/bus/pci/drivers/nvidia/BUS/local_cpulist
#   /dev/nvidiaN                              (c 195 N, as the lab's other fake GPUs)
# Everything is mounted over in this namespace only; the machine's /dev,
# /proc and /sys are not written.  /dev becomes a tmpfs holding binds of the
# machine's basic devices, /dev/pts and /dev/shm, plus the fake GPUs.
#
#   fake_nvidia.sh NODEDIR NODE_NUMBER NGPUS
# UUIDs: GPU-0000000K-0000-4000-8000-00000000000N for node K, minor N.
set -euo pipefail
dir=$1 node=$2 n=$3
[ "$(readlink /proc/self/ns/mnt)" != "$(readlink /proc/1/ns/mnt)" ] || { echo "fake_nvidia: not in a private mount namespace" >&2; exit 1; }

host=$dir/hostdev
mkdir -p "$host"
mount --rbind /dev "$host" # with /dev/pts and /dev/shm, bound below
mount -t tmpfs -o mode=0755,size=64k dist-bind-lab-dev /dev
for f in null zero full random urandom tty ptmx; do
    : >"/dev/$f"
    mount --bind "$host/$f" "/dev/$f"
done
mkdir -p /dev/pts /dev/shm
mount --rbind "$host/pts" /dev/pts
mount --bind "$host/shm" /dev/shm
ln -s /proc/self/fd /dev/fd
ln -s /proc/self/fd/0 /dev/stdin
ln -s /proc/self/fd/1 /dev/stdout
ln -s /proc/self/fd/2 /dev/stderr

mount -t tmpfs -o mode=0755,size=64k dist-bind-lab-proc-driver /proc/driver
drivers=/sys/bus/pci/drivers
mount -t tmpfs -o mode=0755,size=64k dist-bind-lab-pci-drivers "$drivers"
for i in $(seq 0 $((n - 1))); do
    mknod -m 666 "/dev/nvidia$i" c 195 "$i"
    bus=$(printf '0000:%02x:00.0' $((16 + i)))
    mkdir -p "/proc/driver/nvidia/gpus/$bus" "$drivers/nvidia/$bus"
    printf 'Model: \t\t NVIDIA H100 80GB HBM3\nIRQ:   \t\t 100\nGPU UUID: \t GPU-%08d-0000-4000-8000-%012d\nVideo BIOS: \t ??.??.??.??.??\nBus Type: \t PCIe\nDMA Size: \t 52 bits\nDMA Mask: \t 0xfffffffffffff\nBus Location: \t %s\nDevice Minor: \t %d\n' \
        "$node" "$i" "$bus" "$i" >"/proc/driver/nvidia/gpus/$bus/information"
    echo 0-2 >"$drivers/nvidia/$bus/local_cpulist"
done
