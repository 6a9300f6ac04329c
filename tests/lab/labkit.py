"""Helpers for tests on the lab: a real slurmctld, munged and two slurmd.

A test script does

    with Lab() as lab:
        base = lab.table("-N2 -n5 --gpus-per-task=1")
        fixed = lab.table("-N2 -n5 --gpus-per-task=1 --dist-bind")
        t.eq(...)
    t.done()

The lab is always torn down (by pid) when the block ends, also on failure.
Exit status: 0 pass, 1 fail, 77 skipped (no root or no Slurm here).
"""
import os
import shlex
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PLUGIN = os.environ.get("DIST_BIND_PLUGIN", os.path.join(ROOT, "build", "spank_dist_bind.so"))
PROBE = os.path.join(HERE, "probe.sh")
SAN_PLUGIN = os.path.join(ROOT, "build", "asan", "spank_dist_bind.so")
LIBDIR = "/usr/lib/x86_64-linux-gnu"

# The variables a task reports; see probe.sh.
FIELDS = [
    "SLURM_PROCID", "SLURM_LOCALID", "SLURMD_NODENAME", "SLURM_STEP_ID",
    "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "NODE_RANK", "GROUP_RANK",
    "GROUP_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "CUDA_VISIBLE_DEVICES",
    "GPU_DEVICE_ORDINAL", "ROCR_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "DIST_BIND_DEVICE",
    "DIST_BIND_GPUS", "DIST_BIND_MODE", "DIST_BIND_RANK0_ADDR", "HOSTNAME_",
]


def skip(why):
    print("SKIP: " + why)
    sys.exit(77)


def require_lab():
    if os.geteuid() != 0:
        skip("the lab needs root")
    for b in ("slurmctld", "slurmd", "srun", "munged"):
        if not shutil.which(b):
            skip(b + " not installed (make deps)")
    if not os.path.exists(PLUGIN):
        skip(PLUGIN + " not built")


class Test:
    """Collects failures; every check prints what it compared."""

    def __init__(self, name):
        self.name = name
        self.failures = 0
        self.checks = 0

    def ok(self, cond, what):
        self.checks += 1
        if cond:
            print("  ok   " + what)
        else:
            self.failures += 1
            print("  FAIL " + what)
        return cond

    def eq(self, got, want, what):
        return self.ok(got == want, "%s: got %r, want %r" % (what, got, want))

    def done(self):
        print("%s: %d checks, %d failed" % (self.name, self.checks, self.failures))
        if self.checks == 0:
            print("no checks ran")
            sys.exit(1)
        sys.exit(1 if self.failures else 0)


class Lab:
    def __init__(self, cpus=3, gpus=4, plugstack="", kind="required", resv_ports=False, sanitize_dir=None):
        """sanitize_dir: run slurmd/slurmstepd with ASan+UBSan preloaded and
        the sanitized plugin build, logging reports into that directory
        (srun keeps the plain build: its process is not sanitized)."""
        require_lab()
        self.cpus, self.gpus, self.resv_ports = cpus, gpus, resv_ports
        self.initial = (kind, plugstack)
        self.sanitize_dir = sanitize_dir
        self.dir = None

    def _slurmd_env(self):
        d = self.sanitize_dir
        supp = os.path.join(d, "lsan.supp")
        with open(supp, "w") as f:  # Slurm's own allocations, not ours
            f.write("leak:libslurmfull.so\nleak:slurmstepd\nleak:slurmd\n")
        # libstdc++ must be loaded before ASan intercepts __cxa_throw, or an
        # exception thrown in the dlopen'ed plugin trips ASan itself.
        return " ".join([
            "LD_PRELOAD=%s/libasan.so.8:%s/libubsan.so.1:%s/libstdc++.so.6" % (LIBDIR, LIBDIR, LIBDIR),
            "ASAN_OPTIONS=detect_leaks=1:log_path=%s/asan" % d,
            "LSAN_OPTIONS=suppressions=%s" % supp,
            "UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:log_path=%s/ubsan" % d,
        ])

    def __enter__(self):
        cmd = [os.path.join(HERE, "lab.sh"), "up", "--cpus", str(self.cpus), "--gpus", str(self.gpus)]
        if self.resv_ports:
            cmd.append("--resv-ports")
        env = dict(os.environ)
        if self.sanitize_dir:
            env["LAB_SLURMD_ENV"] = self._slurmd_env()
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        if r.returncode != 0:
            print(r.stderr)
            raise RuntimeError("lab did not start")
        self.dir = r.stdout.strip().splitlines()[-1]
        conf = os.path.join(self.dir, "slurm.conf")
        # A private copy: a running slurmd keeps its plugin open.
        self.plugin = os.path.join(self.dir, "spank_dist_bind.so")
        shutil.copy(PLUGIN, self.plugin)
        self.node_plugin = self.plugin
        if self.sanitize_dir:
            self.node_plugin = os.path.join(self.dir, "spank_dist_bind.asan.so")
            shutil.copy(SAN_PLUGIN, self.node_plugin)
            # Client commands read a copy of slurm.conf naming a plugstack
            # with the plain build; slurmd and slurmstepd read the original.
            client = os.path.join(self.dir, "slurm-client.conf")
            with open(conf) as f, open(client, "w") as g:
                for line in f:
                    if line.startswith("PlugStackConfig="):
                        line = "PlugStackConfig=%s\n" % os.path.join(self.dir, "plugstack-client.conf")
                    g.write(line)
            conf = client
        self.env = dict(os.environ, SLURM_CONF=conf)
        for k in list(self.env):
            if k.startswith(("SLURM_", "SPANK_", "MASTER_", "DIST_BIND_")) and k != "SLURM_CONF":
                del self.env[k]
        self.plugstack(self.initial[1], self.initial[0])
        return self

    def __exit__(self, *exc):
        if self.dir:
            subprocess.run([os.path.join(HERE, "lab.sh"), "down", self.dir])
        return False

    def plugstack(self, args="", kind="required", raw=None):
        """Rewrite plugstack.conf; srun and slurmstepd re-read it per job."""
        files = [("plugstack.conf", self.node_plugin)]
        if self.sanitize_dir:
            files.append(("plugstack-client.conf", self.plugin))
        for name, so in files:
            line = raw if raw is not None else "%s %s %s" % (kind, so, args)
            with open(os.path.join(self.dir, name), "w") as f:
                f.write(line.rstrip() + "\n")

    def run(self, argv, env=None, timeout=60, input=None):
        e = dict(self.env)
        if env:
            e.update(env)
        try:
            return subprocess.run(argv, env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  timeout=timeout, input=input, cwd=self.dir)
        except subprocess.TimeoutExpired as x:  # a hang is a failure, reported like one
            out = x.stdout.decode() if isinstance(x.stdout, bytes) else (x.stdout or "")
            err = x.stderr.decode() if isinstance(x.stderr, bytes) else (x.stderr or "")
            return subprocess.CompletedProcess(argv, 124, out, err + "\n(timed out after %ss)" % timeout)

    def srun(self, args, cmd, env=None, timeout=60):
        return self.run(["srun"] + shlex.split(args) + cmd, env=env, timeout=timeout)

    def table(self, args, env=None, expect_ok=True):
        """Run PROBE in every task; return {rank: {field: value}} (absent = None)."""
        r = self.srun(args, [PROBE], env=env)
        rows = parse_probe(r.stdout)
        if expect_ok and (r.returncode != 0 or not rows):
            print("srun %s failed (rc %d):\n%s%s" % (args, r.returncode, r.stdout, r.stderr))
        self.last = r
        return rows


def sanitizer_logs():
    """A directory for a Lab(sanitize_dir=...) run's reports (slurmstepd
    writes them as the job user); skips when the sanitized plugin is absent."""
    import tempfile
    if not os.path.exists(SAN_PLUGIN):
        skip(SAN_PLUGIN + " not built (make check builds it)")
    logs = tempfile.mkdtemp(prefix="dist-bind-san.")
    os.chmod(logs, 0o777)
    return logs


def check_sanitizer_reports(t, logs):
    """After a Lab(sanitize_dir=logs) is down: the sanitizers ran in
    slurmd/slurmstepd and reported nothing but Slurm's suppressed leaks."""
    import glob
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


def parse_probe(text):
    rows = {}
    for line in text.splitlines():
        if not line.startswith("PROBE\t"):
            continue
        fields = {}
        for kv in line.split("\t")[1:]:
            k, _, v = kv.partition("=")
            fields[k] = None if v == "\x01" else v
        rows[int(fields["SLURM_PROCID"])] = fields
    return rows


def own_gpus(row):
    """The GPUs device DIST_BIND_DEVICE (and the next k-1) resolve to."""
    vis = row["CUDA_VISIBLE_DEVICES"].split(",")
    k = len(row["DIST_BIND_GPUS"].split(","))
    d = int(row["DIST_BIND_DEVICE"])
    return vis[d:d + k]


def resolve(row, ordinal):
    """The GPU that CUDA device `ordinal` is for this task (None if absent)."""
    vis = (row.get("CUDA_VISIBLE_DEVICES") or "").split(",")
    return vis[ordinal] if 0 <= ordinal < len(vis) and vis[ordinal] != "" else None


def check_mapping(t, base, fixed, mode, own, node_gpus, master=None):
    """Assert the dist-bind promise for every task.

    base/fixed: tables of the same job without and with --dist-bind.
    own(rank) -> the GPUs Slurm gave that task (as Slurm numbered them).
    node_gpus(host) -> the step's GPUs on that node (any order).
    """
    t.eq(sorted(fixed), sorted(base), "same ranks with and without --dist-bind")
    hosts = sorted({b["SLURMD_NODENAME"] for b in base.values()})
    n = len(base)
    ports = {f["MASTER_PORT"] for f in fixed.values()}
    t.eq(len(ports), 1, "one MASTER_PORT in the whole step %s" % sorted(ports, key=str))
    for r in sorted(base):
        b, f = base[r], fixed.get(r)
        if f is None:
            continue
        host = b["SLURMD_NODENAME"]
        local = int(b["SLURM_LOCALID"])
        pre = "rank %d (%s/%d): " % (r, host, local)
        t.eq(f["SLURMD_NODENAME"], host, pre + "same node as without --dist-bind")
        t.eq(f["SLURM_LOCALID"], b["SLURM_LOCALID"], pre + "same SLURM_LOCALID")
        t.eq(f["RANK"], str(r), pre + "RANK")
        t.eq(f["WORLD_SIZE"], str(n), pre + "WORLD_SIZE")
        t.eq(f["LOCAL_RANK"], str(local), pre + "LOCAL_RANK")
        lws = sum(1 for x in base.values() if x["SLURMD_NODENAME"] == host)
        t.eq(f["LOCAL_WORLD_SIZE"], str(lws), pre + "LOCAL_WORLD_SIZE")
        t.eq(f["NODE_RANK"], str(hosts.index(host)), pre + "NODE_RANK")
        t.eq(f["GROUP_RANK"], f["NODE_RANK"], pre + "GROUP_RANK")
        t.eq(f["GROUP_WORLD_SIZE"], str(len(hosts)), pre + "GROUP_WORLD_SIZE")
        want_master = master if master is not None else base[0]["SLURMD_NODENAME"]
        t.eq(f["MASTER_ADDR"], want_master, pre + "MASTER_ADDR is rank 0's host")
        t.eq(f["DIST_BIND_MODE"], mode, pre + "DIST_BIND_MODE")
        t.eq(f["DIST_BIND_RANK0_ADDR"], None, pre + "srun's hint is not left in the task")
        mine = own(r)
        if mine is None:  # no GPUs in this job
            for v in ("CUDA_VISIBLE_DEVICES", "DIST_BIND_DEVICE", "DIST_BIND_GPUS", "CUDA_DEVICE_ORDER"):
                t.eq(f[v], None, pre + v + " not set without GPUs")
            continue
        k = len(mine)
        vis = f["CUDA_VISIBLE_DEVICES"].split(",")
        t.eq(f["DIST_BIND_GPUS"], ",".join(mine), pre + "DIST_BIND_GPUS = the GPUs Slurm gave it")
        t.eq(f["CUDA_DEVICE_ORDER"], "PCI_BUS_ID", pre + "CUDA_DEVICE_ORDER")
        if mode in ("rank", "closest"):
            t.eq(f["DIST_BIND_DEVICE"], str(local * k), pre + "DIST_BIND_DEVICE = LOCAL_RANK*k")
            t.eq(vis[local * k:local * k + k], mine, pre + "device LOCAL_RANK*k.. is its own GPU")
            t.eq(sorted(vis), sorted(node_gpus(host)), pre + "visible = the step's GPUs on the node")
        elif mode == "isolate":
            t.eq(f["DIST_BIND_DEVICE"], "0", pre + "DIST_BIND_DEVICE")
            t.eq(vis, mine, pre + "only its own GPU(s) visible")
        elif mode == "env":
            t.eq(f["CUDA_VISIBLE_DEVICES"], b["CUDA_VISIBLE_DEVICES"], pre + "GPU visibility untouched")
            t.eq(resolve(f, int(f["DIST_BIND_DEVICE"])), mine[0], pre + "DIST_BIND_DEVICE is its own GPU")
        for other in ("GPU_DEVICE_ORDINAL", "ROCR_VISIBLE_DEVICES"):
            if b[other] is not None and mode != "env":
                t.eq(f[other], f["CUDA_VISIBLE_DEVICES"], pre + other + " rewritten to match")


def bound_own(base):
    """Own GPUs when Slurm bound every task: what it saw without dist-bind."""
    return lambda r: base[r]["CUDA_VISIBLE_DEVICES"].split(",")


def union_gpus(base):
    """The step's GPUs per node when Slurm bound every task."""
    per = {}
    for b in base.values():
        per.setdefault(b["SLURMD_NODENAME"], set()).update(b["CUDA_VISIBLE_DEVICES"].split(","))
    return lambda host: sorted(per[host])
