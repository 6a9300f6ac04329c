#!/usr/bin/env bash
# Install the Debian packages dist-bind needs to build and test, if missing.
# As root only; otherwise list what is missing and carry on.
set -euo pipefail
# Inside a release's root (tests/lab/kit/release.sh) its package list applies.
[ -z "${DIST_BIND_IN_RELEASE:-}" ] || exit 0
pkgs=(
  g++ make pkg-config check            # build, unit tests
  libslurm-dev libpmi2-0-dev libpmix-dev  # spank.h, slurm.h, PMI2, PMIx
  slurmctld slurmd slurm-client munge  # the lab
  hwloc libhwloc-dev                   # topology (closest)
  python3-torch                        # the real client
  iproute2 util-linux                  # ss, unshare
  dpkg-dev debhelper lintian rpm man-db   # make deb / make rpm, their tests
  libsodium-dev                        # the TCP bootstrap's HMAC-SHA256
  clang-14 libclang-rt-14-dev          # make fuzz (libFuzzer)
  clang-format-14                      # make format-check
  mmdebstrap                           # the Debian roots of the 24.11 and 26.05 labs and of the guests
  python3-mpi4py openmpi-bin libopenmpi-dev mpich libmpich-dev  # MPI under --dist-bind
  crun                                 # Slurm's --container (OCI)
  qemu-system-x86 zstd xz-utils e2fsprogs  # the cgroup v2 guest (tests/lab/kit/guest.sh)
)
missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep "install ok installed" >/dev/null || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ]; then
    echo "deps: missing Debian packages (install as root): ${missing[*]}" >&2
    exit 0
fi
echo "deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# Another apt/dpkg run (unattended upgrades, a parallel build) may hold the
# lock: wait for it instead of failing.
apt-get -o DPkg::Lock::Timeout=600 update -qq
apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
