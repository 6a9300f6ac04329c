#!/usr/bin/env bash
# The plugin exports only what Slurm looks up (plugin_*, slurm_spank_*),
# and exports all the entry points it needs; libdistbind.so only distbind_*.
set -euo pipefail
so=${DIST_BIND_PLUGIN:-$(dirname "$0")/../../build/spank_dist_bind.so}
[ -f "$so" ] || { echo "not built: $so"; exit 1; }
exports=$(nm -D --defined-only "$so" | awk '$2 ~ /^[TDRBVW]$/ {print $3}' | sort)
echo "exported:"; echo "$exports" | sed 's/^/  /'
bad=$(echo "$exports" | grep -v -E '^(plugin_(name|type|version)|slurm_spank_[a-z_]+)$' || true)
if [ -n "$bad" ]; then echo "FAIL: unexpected exports: $bad"; exit 1; fi
for want in plugin_name plugin_type plugin_version slurm_spank_init slurm_spank_init_post_opt \
            slurm_spank_local_user_init slurm_spank_user_init slurm_spank_task_init slurm_spank_exit; do
    grep -qx "$want" <<<"$exports" || { echo "FAIL: $want not exported"; exit 1; }
done
name=$(strings -a "$so" | grep -x dist_bind | head -1)
[ "$name" = dist_bind ] || { echo "FAIL: plugin_name is not dist_bind"; exit 1; }
echo "ok: only plugin_* and slurm_spank_* exported"

# libdistbind.so exports the public C API only: distbind_* (version script
# lib/runtime/distbind.map), nothing C++ and none of lib/common.
lib=${DIST_BIND_LIB:-$(dirname "$0")/../../build/libdistbind.so}
[ -f "$lib" ] || { echo "not built: $lib"; exit 1; }
lexports=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TDRBVWiu]$/ {print $3}' | sed 's/@.*//' | sort -u)
[ -n "$lexports" ] || { echo "FAIL: libdistbind.so exports nothing"; exit 1; }
bad=$(echo "$lexports" | grep -v -E '^distbind_[a-z0-9_]+$' || true)
if [ -n "$bad" ]; then echo "FAIL: libdistbind.so exports more than distbind_*: $bad"; exit 1; fi
for want in distbind_create distbind_destroy distbind_version distbind_status_name; do
    grep -qx "$want" <<<"$lexports" || { echo "FAIL: libdistbind.so does not export $want"; exit 1; }
done
echo "ok: libdistbind.so exports only distbind_* ($(echo "$lexports" | wc -l) symbols)"
