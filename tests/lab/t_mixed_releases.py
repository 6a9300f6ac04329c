#!/usr/bin/python3
"""The plugin of two releases in one step, as during a rolling upgrade
where the login nodes (srun) and the compute nodes are upgraded apart: the
previous release (0.1.0, built from this repository's history by
previouskit) on one side, this tree's on the other.

- srun of 0.1.0, nodes of this release: the seed layout and `-m arbitrary`
  (rank 0 on node2) run right: 0.1.0's srun passes the node ranks and rank
  0's node this release's nodes read.  Where a word the nodes need is
  missing, their message says srun's dist-bind is older than theirs and
  names their version (tests/unit/test_plan.c, "srun of 0.1.0" rows: on
  Slurm 22.05 no layout leaves 0.1.0's srun without one).
- srun of this release, nodes of 0.1.0: the seed layout runs as 0.1.0 ran
  it (the nodes read what they know; this srun's version word is one more
  variable they leave in the task)."""
# lab-releases: native
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "kit"))
from labkit import Lab, Test, check_mapping, bound_own, unbound_own, ROOT
from previouskit import PREV, build_previous

THIS = open(os.path.join(ROOT, "VERSION")).read().strip()
old = os.path.join(build_previous("build/spank_dist_bind.so"), "build", "spank_dist_bind.so")
t = Test("mixed-releases")
SEED = "-N2 -n5 --gpus-per-task=1"
ARB = "-n5 -m arbitrary -w node2,node1,node2,node1,node2 --gpus-per-node=4"

def releases(lab):
    """The releases of the plugins srun and the nodes load, from their files."""
    def version(path):
        data = open(path, "rb").read()
        return [v for v in (PREV, THIS) if (v + "\0").encode() in data]
    return version(lab.plugin), version(lab.node_plugin)


with Lab(srun_plugin=old) as lab:
    print("-- srun %s, nodes %s" % (PREV, THIS))
    t.eq(releases(lab), ([PREV], [THIS]), "the harness: srun loads %s, the nodes %s" % (PREV, THIS))
    base = lab.table(SEED)
    fixed = lab.table(SEED + " --dist-bind")
    check_mapping(t, base, fixed, "rank", bound_own(base))
    base = lab.table(ARB)
    check_mapping(t, base, lab.table(ARB + " --dist-bind"), "rank", unbound_own(base), master="node2")

with Lab(node_plugin=old) as lab:
    print("-- srun %s, nodes %s" % (THIS, PREV))
    t.eq(releases(lab), ([THIS], [PREV]), "the harness: srun loads %s, the nodes %s" % (THIS, PREV))
    base = lab.table(SEED)
    fixed = lab.table(SEED + " --dist-bind")
    t.eq({f["DIST_BIND_SRUN_VERSION"] for f in fixed.values()}, {THIS},
         "nodes of %s leave srun's version word in the task, as any variable they do not know" % PREV)
    for f in fixed.values():
        f["DIST_BIND_SRUN_VERSION"] = None
    check_mapping(t, base, fixed, "rank", bound_own(base))
    fixed = lab.table(ARB + " --dist-bind")
    for f in fixed.values():
        f["DIST_BIND_SRUN_VERSION"] = None
    base = lab.table(ARB)
    check_mapping(t, base, fixed, "rank", unbound_own(base), master="node2")
t.done()
