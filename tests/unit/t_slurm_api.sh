#!/usr/bin/env bash
# The plugin finds Slurm's API by name (db_slurm_api, dlsym): a name the
# process does not have gives NULL at run time, silently.  Every name
# looked up must be public (declared in slurm/slurm.h) on every release the
# plugin supports; where a release renamed a function, the new name comes
# first and the old one second.  Checked against each slurm.h at hand (this
# machine's, and the lab's release roots under build/roots/), and against
# the renames read from newer releases' headers:
#   26.05: slurm_free_ctl_conf -> slurm_free_conf (no alias)
# What Slurm holds in memory (its configuration) is libslurm's own, looked
# up with db_slurm_internal: only the names listed in INTERNAL (whose
# signatures spank/slurm_api.c names, read from each release's source), and
# each exported by every release's libslurmfull at hand.
set -euo pipefail
cd "$(dirname "$0")/../.."
RENAMES=("slurm_free_ctl_conf slurm_free_conf 26.05")
INTERNAL=(slurm_conf cgroup_get_conf_list slurm_conf_get_nodeaddr get_extra_conf_path slurm_xfree)
fail=0

# Every dlsym of the plugin goes through db_slurm_api or db_slurm_internal.
direct=$(grep -n 'dlsym *([A-Z]' spank/*.c | grep -v 'spank/slurm_api.c:.*dlsym(RTLD_DEFAULT, \(name\|older\))' || true)
if [ -n "$direct" ]; then echo "FAIL: dlsym outside db_slurm_api: $direct"; fail=1; fi

# NAME OLDER pairs ("-" for none) of every lookup: any call with a Slurm
# function's name as its first argument.
internal=$(grep -hoE 'db_slurm_internal\("[a-z_]+"\)' spank/*.c | sed -E 's/.*\("([a-z_]+)"\)/\1/' | sort -u)
echo "libslurm's own, looked up: $(echo $internal)"
for n in $internal; do
    printf '%s\n' "${INTERNAL[@]}" | grep -x "$n" >/dev/null || { echo "FAIL: $n is looked up but not listed in INTERNAL"; fail=1; }
done
libs=(/usr/lib/x86_64-linux-gnu/slurm-wlm/libslurmfull.so)
for l in build/roots/*/usr/lib/x86_64-linux-gnu/slurm-wlm/libslurmfull.so; do [ -f "$l" ] && libs+=("$l"); done
for l in "${libs[@]}"; do
    [ -f "$l" ] || { echo "FAIL: no $l"; fail=1; continue; }
    exported=$(nm -D --defined-only "$l" | awk '{print $3}')
    for n in $internal; do
        grep -qx "$n" <<<"$exported" || { echo "FAIL: $l does not export $n"; fail=1; }
    done
    echo "ok: $l exports every one"
done

lookups=$(grep -hoE 'db_slurm_api\("slurm_[a-z_]+"(, *("slurm_[a-z_]+"|NULL))?\)' spank/*.c |
          sed -E 's/^[a-z_]+\("([a-z_]+)"(, *"?([a-z_]+|NULL)"?)?\)$/\1 \3/; s/ (NULL)?$/ -/' | sort -u)
[ -n "$lookups" ] || { echo "FAIL: no db_slurm_api lookups found in spank/"; exit 1; }
echo "looked up (name, older name):"; sed 's/^/  /' <<<"$lookups"

declared() { grep -Eq "^extern[^;(]*[ *]$1 *\(" "$2"; }

headers=(/usr/include/slurm/slurm.h)
for h in build/roots/*/usr/include/slurm/slurm.h; do [ -f "$h" ] && headers+=("$h"); done
for h in "${headers[@]}"; do
    [ -f "$h" ] || { echo "FAIL: no $h (libslurm-dev)"; fail=1; continue; }
    missing=0
    while read -r name older; do
        if declared "$name" "$h" || { [ "$older" != - ] && declared "$older" "$h"; }; then
            continue
        fi
        echo "FAIL: $h declares neither $name nor $older"
        missing=1
    done <<<"$lookups"
    if [ "$missing" = 0 ]; then echo "ok: every lookup is public in $h"; else fail=1; fi
done

# A renamed function is looked up by its new name, then its old one.
for r in "${RENAMES[@]}"; do
    read -r old new release <<<"$r"
    if grep -q " $old\$\|^$old " <<<"$lookups" && ! grep -qx "$new $old" <<<"$lookups"; then
        echo "FAIL: $old is looked up, but not as the older name of $new (renamed in $release)"
        fail=1
    fi
done
# Nothing internal: every name is declared in this machine's slurm.h or is
# a rename's new name.
while read -r name older; do
    for n in $name $older; do
        [ "$n" = - ] && continue
        declared "$n" /usr/include/slurm/slurm.h && continue
        printf '%s\n' "${RENAMES[@]}" | awk '{print $2}' | grep -x "$n" >/dev/null && continue
        echo "FAIL: $n is not in Slurm's public API (slurm/slurm.h)"
        fail=1
    done
done <<<"$lookups"
[ "$fail" = 0 ] && echo "ok: srun looks up public names only, renames new name first"
exit "$fail"
