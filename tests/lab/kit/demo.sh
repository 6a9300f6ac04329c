#!/usr/bin/env bash
# make demo: bring up the lab, run the seed job without and with
# --dist-bind, print both tables, tear down (also on failure).
set -euo pipefail
cd "$(dirname "$0")"
[ "$(id -u)" = 0 ] || { echo "make demo needs root (it starts munged, slurmctld and two slurmd)" >&2; exit 1; }
exec /usr/bin/python3 demo.py
