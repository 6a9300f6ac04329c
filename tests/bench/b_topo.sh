#!/usr/bin/env bash
# Topology cost of --dist-bind=closest: cached XML against live discovery
# per node, and the per-task plan (see tests/bench/b_topo.cc).
set -euo pipefail
cd "$(dirname "$0")/../.."
exec build/bench/b_topo
