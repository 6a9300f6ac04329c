#!/usr/bin/python3
"""t_closest's scenario with the plugin under AddressSanitizer, LeakSanitizer
and UBSan inside real slurmd/slurmstepd: the spool's cached XML, a real
machine's topology, the NVIDIA driver's view, a broken cache and live
discovery all run in slurmstepd's user_init, and no report may name
anything but Slurm's own (suppressed) leaks."""
# lab-configs: plain cgroup
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "kit"))
from labkit import Lab, Test, check_sanitizer_reports, sanitizer_logs
from t_closest import scenario

t = Test("closest sanitized")
logs = sanitizer_logs()
with Lab(sanitize_dir=logs) as lab:
    scenario(t, lab)
# The lab is down: every slurmstepd has exited and written its report.
check_sanitizer_reports(t, logs)
t.done()
# lab-releases: native (the sanitizer runtimes are this machine's)
