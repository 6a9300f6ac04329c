#!/usr/bin/python3
"""t_closest's scenario with the plugin under AddressSanitizer, LeakSanitizer
and UBSan inside real slurmd/slurmstepd: the spool's cached XML, a real
machine's topology, the NVIDIA driver's view, a broken cache and live
discovery all run in slurmstepd's user_init, and no report may name
anything but Slurm's own (suppressed) leaks."""
import glob
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from labkit import Lab, Test, SAN_PLUGIN, skip
from t_closest import scenario

if not os.path.exists(SAN_PLUGIN):
    skip(SAN_PLUGIN + " not built (make check builds it)")

t = Test("closest sanitized")
logs = tempfile.mkdtemp(prefix="dist-bind-san.")
os.chmod(logs, 0o777)
with Lab(sanitize_dir=logs) as lab:
    scenario(t, lab)
# The lab is down: every slurmstepd has exited and written its report.
reports = sorted(glob.glob(os.path.join(logs, "asan.*")) + glob.glob(os.path.join(logs, "ubsan.*")))
t.ok(len(reports) > 0, "the sanitizers ran in slurmd/slurmstepd (%d report files)" % len(reports))
for path in reports:
    text = open(path).read()
    bad = [l for l in text.splitlines() if "ERROR:" in l or "runtime error" in l or "Direct leak" in l
           or "Indirect leak" in l or "CHECK failed" in l]
    t.ok(not bad, "%s: no sanitizer error %s" % (os.path.basename(path), bad[:3]))
    if bad:
        print(text[:4000])
shutil.rmtree(logs, ignore_errors=True)
t.done()
