"""Helpers for tests on the lab: a real slurmctld, munged and two slurmd
(or N: Lab(nodes=16)).

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
import re
import shlex
import shutil
import subprocess
import sys

import releasekit

# tests/lab/kit: the lab's scripts and these kits; tests/lab/probes: what
# the tests run in the lab's tasks; the tests themselves in tests/lab.
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import devmodel  # noqa: E402
PROBES = os.path.join(os.path.dirname(HERE), "probes")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
# build/, or build/slurm-RELEASE/ inside another release's root (releasekit).
BUILD = os.environ.get("DIST_BIND_BUILD", os.path.join(ROOT, "build"))
# DIST_BIND_PLUGIN_BUILD=test: the test build of the plugin (reads the test
# knobs), of the release the test runs on.
PLUGIN = os.environ.get("DIST_BIND_PLUGIN") or os.path.join(
    BUILD, "test" if os.environ.get("DIST_BIND_PLUGIN_BUILD") == "test" else "", "spank_dist_bind.so")
PROBE = os.path.join(PROBES, "probe.sh")
SAN_PLUGIN = os.path.join(BUILD, "asan", "spank_dist_bind.so")
CLI_FILTER = os.path.join(ROOT, "packaging", "cli_filter", "cli_filter.lua")
LIBDIR = "/usr/lib/x86_64-linux-gnu"

# srun's words to the nodes (db_core.h), which no task may keep, also under
# their carried names (SLURM_ + the name, where srun's --export drops them).
SRUN_WORDS = ("DIST_BIND_RANK0_ADDR", "DIST_BIND_NODE_RANKS", "DIST_BIND_SRUN_DEVICES", "DIST_BIND_SRUN_VERSION")
CARRIED_WORDS = tuple("SLURM_" + w for w in SRUN_WORDS) + ("SLURM_DIST_BIND_SECRET",)

# The variables a task reports; see probe.sh.
FIELDS = [
    "SLURM_PROCID", "SLURM_LOCALID", "SLURMD_NODENAME", "SLURM_STEP_ID",
    "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "NODE_RANK", "GROUP_RANK",
    "GROUP_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "CUDA_VISIBLE_DEVICES",
    "GPU_DEVICE_ORDINAL", "ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ZE_AFFINITY_MASK", "CUDA_DEVICE_ORDER",
    "DIST_BIND_DEVICE", "DIST_BIND_GPUS", "DIST_BIND_MODE", "DIST_BIND_RANK0_ADDR", "DIST_BIND_NODE_RANKS",
    "DIST_BIND_SRUN_DEVICES", "DIST_BIND_SRUN_VERSION",
    "HOSTNAME_", "OPEN_", "ALLOC_",
] + list(CARRIED_WORDS)


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


def lab_config():
    """The lab configuration this run is for (tests/run.sh sets
    DIST_BIND_LAB_CONFIG from the test's "# lab-configs:" line): a set of
    words, "plain", "cgroup" (task/cgroup, ConstrainDevices=yes, cgroup
    v1) or "cgroup2" (the same on cgroup v2, in the guest of
    tests/lab/kit/guest.sh), and a Slurm release such as "24.11" (releasekit)."""
    words = set(os.environ.get("DIST_BIND_LAB_CONFIG", "plain").replace(",", " ").split())
    unknown = {w for w in words - {"plain", "cgroup", "cgroup2"} if not releasekit.RELEASE_WORD.match(w)}
    if unknown:
        raise SystemExit("DIST_BIND_LAB_CONFIG: unknown words %s" % sorted(unknown))
    if {"cgroup", "cgroup2"} <= words:
        raise SystemExit("DIST_BIND_LAB_CONFIG: cgroup or cgroup2, not both")
    return words


def lab_sh_args():
    """lab.sh up's arguments for this configuration, for a test that starts
    a lab by hand: --cgroup2 in the cgroup v2 guest (a lab there needs
    cgroup/v2 without systemd); none otherwise.  In the guest, a lab the
    previous test left is taken down first (one --cgroup2 lab at a time)."""
    drop_kept_lab()
    return ["--cgroup2"] if "cgroup2" in lab_config() else []


# In the cgroup v2 guest (a machine of its own that runs one test at a time
# and is thrown away after), a test's lab is left running when the test
# ends without an exception, and the next test that asks for the same lab
# gets it back once no job is left on it and every node is idle: a lab
# takes 20 to 30 s to start and stop there.  Any other lab first stops it.
# KEPT names the lab that runs in the guest, from its start.
KEPT = "/run/dist-bind-lab.kept"


def record_lab(key, labdir):
    """In the guest: this is the lab that runs (until it is taken down)."""
    import json
    if os.environ.get("DIST_BIND_IN_GUEST"):
        with open(KEPT, "w") as f:
            json.dump({"key": key, "dir": labdir}, f)


def forget_lab(labdir):
    import json
    if os.environ.get("DIST_BIND_IN_GUEST") and os.path.exists(KEPT):
        with open(KEPT) as f:
            if json.load(f)["dir"] == labdir:
                os.unlink(KEPT)


def drop_kept_lab():
    """Take down the lab a previous test left in the guest, if any."""
    import json
    if not os.environ.get("DIST_BIND_IN_GUEST") or not os.path.exists(KEPT):
        return
    with open(KEPT) as f:
        labdir = json.load(f)["dir"]
    os.unlink(KEPT)
    if os.path.exists(os.path.join(labdir, "slurm.conf")):
        subprocess.run([os.path.join(HERE, "lab.sh"), "down", labdir])


def reuse_kept_lab(key):
    """The kept lab's folder when it is the lab `key` asks for and it is
    idle (its jobs cancelled); else None, the kept lab taken down."""
    import json
    import time
    if not os.environ.get("DIST_BIND_IN_GUEST") or not os.path.exists(KEPT):
        return None
    with open(KEPT) as f:
        kept = json.load(f)
    if kept["key"] != key:
        drop_kept_lab()
        return None
    env = dict(os.environ, SLURM_CONF=os.path.join(kept["dir"], "slurm.conf"))
    subprocess.run(["scancel", "--quiet", "--user=root"], env=env, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        jobs = subprocess.run(["squeue", "-h"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        nodes = subprocess.run(["sinfo", "-h", "-N", "-o", "%t"], env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
        states = nodes.stdout.split()
        if jobs.returncode == 0 and not jobs.stdout.strip() and states and all(x == "idle" for x in states):
            return kept["dir"]
        time.sleep(0.5)
    drop_kept_lab()
    return None


class Lab:
    def __init__(self, cpus=3, gpus=4, plugstack="", kind="required", resv_ports=False, sanitize_dir=None,
                 cli_filter=None, tree_first=None, slurmd_debug=None, gpu_uuids=False, gpu_types=False,
                 stepmgr=False, oci=False, nodes=2, tree=None, configless=False, cgroup=None, srun_plugin=None,
                 node_plugin=None):
        """sanitize_dir: run slurmd/slurmstepd with ASan+UBSan preloaded and
        the sanitized plugin build, logging reports into that directory
        (srun keeps the plain build: its process is not sanitized).
        The lab configuration comes from lab_config(); cli_filter: a Lua
        script for cli_filter/lua, None for the default (the packaged
        dist-bind filter in the cgroup configuration, as the README tells
        sites with device cgroups to install it; none otherwise), False for
        none.  nodes: slurmds node1 .. nodeN (lab.sh --nodes); tree: leaf
        switches in order, each a hostlist, ';' between them (lab.sh
        --tree); configless: slurmd and every client command fetch their
        configuration from slurmctld (lab.sh --configless): run() runs
        clients as a login node without slurm.conf.  cgroup: True or False
        for device cgroups whatever the configuration says (None: as it
        says).  srun_plugin, node_plugin: another build of the plugin for
        the client commands (srun, sbatch, salloc: a login node) or for
        slurmd and slurmstepd (the nodes), e.g. another release's."""
        require_lab()
        self.config = lab_config()
        # Device cgroups (ConstrainDevices=yes), on cgroup v1 or v2.
        self.cgroup_v2 = "cgroup2" in self.config
        self.cgroup = ("cgroup" in self.config or self.cgroup_v2) if cgroup is None else cgroup
        if cli_filter is None:
            cli_filter = CLI_FILTER if self.cgroup else False
        self.cli_filter = cli_filter
        self.tree_first = tree_first  # topology/tree with this node's leaf switch first
        self.tree = tree  # topology/tree with these leaf switches, in order
        self.nodes = nodes
        self.configless = configless
        self.slurmd_debug = slurmd_debug  # SlurmdDebug (default info)
        self.gpu_uuids = gpu_uuids  # GPUs by gpu/nvidia AutoDetect, listed by UUID (lab.sh --gpu-uuids)
        self.gpu_types = gpu_types  # half the GPUs a100, half v100 (lab.sh --gpu-types)
        self.stepmgr = stepmgr  # SlurmctldParameters=enable_stepmgr (srun --async needs it)
        self.oci = oci  # oci.conf with crun: srun --container (lab.sh --oci)
        self.cpus, self.gpus, self.resv_ports = cpus, gpus, resv_ports
        self.initial = (kind, plugstack)
        self.sanitize_dir = sanitize_dir
        self.srun_plugin, self.other_node_plugin = srun_plugin, node_plugin
        self.runtime_deadlocks = 0
        self.dir = None

    def _slurmd_env(self):
        d = self.sanitize_dir
        # symbolize=0: a slurmstepd symbolizing Slurm's leaks at exit took
        # tens of seconds on a busy machine and held up the next srun.
        # Reports name module+offset; check_sanitizer_reports attributes
        # leaks by module (no suppressions: any frame matching one would
        # hide a leak of ours too) and symbolizes our frames afterwards.
        # libstdc++ must be loaded before ASan intercepts __cxa_throw, or an
        # exception thrown in the dlopen'ed plugin trips ASan itself.
        return " ".join([
            "LD_PRELOAD=%s/libasan.so.8:%s/libubsan.so.1:%s/libstdc++.so.6" % (LIBDIR, LIBDIR, LIBDIR),
            "ASAN_OPTIONS=detect_leaks=1:symbolize=0:log_path=%s/asan" % d,
            "LSAN_OPTIONS=exitcode=0",
            "UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:symbolize=0:log_path=%s/ubsan" % d,
        ])

    def __enter__(self):
        cmd = [os.path.join(HERE, "lab.sh"), "up", "--nodes", str(self.nodes), "--cpus", str(self.cpus),
               "--gpus", str(self.gpus)]
        if self.tree:
            cmd += ["--tree", self.tree]
        if self.configless:
            cmd.append("--configless")
        if self.resv_ports:
            cmd.append("--resv-ports")
        if self.cgroup:
            cmd.append("--cgroup2" if self.cgroup_v2 else "--cgroup")
        if self.cli_filter:
            cmd += ["--cli-filter", self.cli_filter]
        if self.tree_first:
            cmd += ["--tree-first", self.tree_first]
        if self.gpu_uuids:
            cmd.append("--gpu-uuids")
        if self.gpu_types:
            cmd.append("--gpu-types")
        if self.stepmgr:
            cmd.append("--stepmgr")
        if self.oci:
            cmd.append("--oci")
        words = set(self.config) - {"plain", "cgroup"}
        if not self.cgroup_v2:
            words.add("cgroup" if self.cgroup else "plain")
        print("(lab: %s%s%s%s)" % (" ".join(sorted(words)), ", %d nodes" % self.nodes if self.nodes != 2 else "",
                                   ", configless" if self.configless else "", ", cli_filter" if self.cli_filter else ""))
        env = dict(os.environ)
        if self.sanitize_dir:
            env["LAB_SLURMD_ENV"] = self._slurmd_env()
        if self.slurmd_debug:
            env["LAB_SLURMD_DEBUG"] = self.slurmd_debug
        self.key = [cmd, env.get("LAB_SLURMD_ENV"), env.get("LAB_SLURMD_DEBUG"), PLUGIN]
        self.dir = reuse_kept_lab(self.key)
        if self.dir:
            print("(lab: the one the previous test left, %s)" % self.dir)
        else:
            r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
            if r.returncode != 0:
                print(r.stderr)
                raise RuntimeError("lab did not start")
            self.dir = r.stdout.strip().splitlines()[-1]
        record_lab(self.key, self.dir)
        conf = os.path.join(self.dir, "slurm.conf")
        # A private copy: a running slurmd keeps its plugin open (replaced
        # by a rename, never written over).
        def private(src, name):
            path = os.path.join(self.dir, name)
            shutil.copy(src, path + ".new")
            os.replace(path + ".new", path)
            return path

        self.plugin = private(self.srun_plugin or PLUGIN, "spank_dist_bind.so")
        self.node_plugin = self.plugin
        if self.sanitize_dir:
            self.node_plugin = private(SAN_PLUGIN, "spank_dist_bind.asan.so")
        elif self.srun_plugin or self.other_node_plugin:
            self.node_plugin = private(self.other_node_plugin or PLUGIN, "spank_dist_bind.node.so")
        if self.node_plugin != self.plugin:
            # Client commands read a copy of slurm.conf naming a plugstack
            # with the client commands' plugin; slurmd and slurmstepd read the original.
            conf = self._conf_naming("client")
        # Jobs' temporary files (torchrun's, the probes') go in the lab's
        # own tmp, which goes with the lab.
        self.env = dict(os.environ, SLURM_CONF=conf, TMPDIR=os.path.join(self.dir, "tmp"))
        for k in list(self.env):
            if k.startswith(("SLURM_", "SPANK_", "MASTER_", "DIST_BIND_")) and k != "SLURM_CONF":
                del self.env[k]
        self.node_names = open(os.path.join(self.dir, "nodes")).read().split()
        # A configless lab's clients run as a login node without slurm.conf
        # (DIR/client); lab.sh itself still finds the file.
        self.client = [os.path.join(self.dir, "client")] if self.configless else []
        self.plugstack(self.initial[1], self.initial[0])
        return self

    def __exit__(self, *exc):
        if self.dir and exc[0] is None and os.environ.get("DIST_BIND_IN_GUEST"):
            print("(lab kept for the next test in this guest)")
            return False
        if self.dir:
            import time
            forget_lab(self.dir)
            start = time.monotonic()
            subprocess.run([os.path.join(HERE, "lab.sh"), "down", self.dir])
            print("(lab down in %.1f s)" % (time.monotonic() - start))
        return False

    def _conf_naming(self, name):
        """DIR/slurm-NAME.conf: the lab's slurm.conf with PlugStackConfig
        DIR/plugstack-NAME.conf (its path)."""
        path = os.path.join(self.dir, "slurm-%s.conf" % name)
        with open(os.path.join(self.dir, "slurm.conf")) as f, open(path, "w") as g:
            for line in f:
                if line.startswith("PlugStackConfig="):
                    line = "PlugStackConfig=%s\n" % os.path.join(self.dir, "plugstack-%s.conf" % name)
                g.write(line)
        return path

    def client_conf(self, name, plugstack):
        """A slurm.conf for client commands only (pass it as SLURM_CONF):
        its plugstack holds `plugstack`; slurmd and slurmstepd keep the
        lab's.  Its path."""
        with open(os.path.join(self.dir, "plugstack-%s.conf" % name), "w") as f:
            f.write(plugstack)
        return self._conf_naming(name)

    def plugstack(self, args="", kind="required", raw=None):
        """Rewrite plugstack.conf; srun and slurmstepd re-read it per job."""
        files = [("plugstack.conf", self.node_plugin)]
        if self.node_plugin != self.plugin:
            files.append(("plugstack-client.conf", self.plugin))
        for name, so in files:
            line = raw if raw is not None else "%s %s %s" % (kind, so, args)
            with open(os.path.join(self.dir, name), "w") as f:
                f.write(line.rstrip() + "\n")
        if self.configless:
            self._push_config("plugstack.conf")

    def _push_config(self, name):
        """Configless: slurmctld sends its files to the nodes when told to
        reconfigure (srun fetches them itself); wait until every node has
        this one."""
        import time
        with open(os.path.join(self.dir, name)) as f:
            want = f.read()
        self.run(["scontrol", "reconfigure"])
        deadline = time.monotonic() + 60
        for n in self.node_names:
            path = os.path.join(self.dir, n, "spool", "conf-cache", name)
            while True:
                try:
                    with open(path) as f:
                        if f.read() == want:
                            break
                except OSError:
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError("configless lab: %s did not get the new %s" % (n, name))
                time.sleep(0.2)

    def run(self, argv, env=None, timeout=60, input=None):
        e = dict(self.env)
        if env:
            e.update(env)
        argv = self.client + list(argv)
        import time
        start = time.monotonic()
        p = subprocess.Popen(argv, env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             stdin=subprocess.PIPE if input is not None else None, cwd=self.dir)
        try:
            out, err = p.communicate(input=input, timeout=timeout)
        except subprocess.TimeoutExpired:  # a hang is a failure, reported like one
            kill_tree(p.pid)
            out, err = p.communicate()
            return subprocess.CompletedProcess(argv, 124, out, err + "\n(timed out after %ss)" % timeout)
        took = time.monotonic() - start
        if took > 10:  # for the log: where a slow run spent its time
            print("  (%s took %.1f s)" % (" ".join(argv[:6]), took))
        return subprocess.CompletedProcess(argv, p.returncode, out, err)

    def nodes_settled(self, timeout=30):
        """Waits until every node is idle again (a step that just ended may
        leave its node completing for a moment), at most timeout seconds,
        and stops at once on a drained, down or failing node.  Returns
        (whether every node is idle and none was drained or down, sinfo's
        "NODE STATE" lines)."""
        import time
        deadline = time.monotonic() + timeout
        while True:
            r = self.run(["sinfo", "-h", "-N", "-o", "%N %t %E"])
            states = sorted(r.stdout.strip().splitlines())
            bad = [x for x in states if any(w in x.split()[1] for w in ("drain", "drng", "down", "fail"))]
            idle = len(states) == len(self.node_names) and all(x.split()[1] == "idle" for x in states)
            if bad or idle or time.monotonic() > deadline:
                return not bad and idle, states
            time.sleep(0.5)

    def wait_no_jobs(self, timeout=30):
        """Waits until slurmctld holds no pending, running or completing job;
        RuntimeError after timeout seconds.  A job's nodes stay
        completing for a moment after its srun exits, and a job started then
        waits for them ("queued and waiting for resources"): 0.3 to 0.7 s more
        on a 64-node lab, a wait that belongs to the job before.  The bench
        times each srun from here."""
        import time
        deadline = time.monotonic() + timeout
        while True:
            r = self.run(["squeue", "-h", "-o", "%i"])
            if r.returncode == 0 and not r.stdout.strip():
                return
            if time.monotonic() > deadline:
                raise RuntimeError("squeue failed %d s on: %s" % (timeout, r.stderr.strip()[-300:]) if r.returncode
                                   else "slurmctld still holds jobs %s %d s on" % (r.stdout.split()[:5], timeout))
            time.sleep(0.02)

    def srun(self, args, cmd, env=None, timeout=60):
        argv = ["srun"] + shlex.split(args) + cmd
        if not self.sanitize_dir:
            return self.run(argv, env=env, timeout=timeout)
        # GCC 12's ASan runtime (Debian 12) does not lock its allocator
        # around fork(): when another slurmstepd thread is inside it at the
        # moment slurmstepd forks a task, the task blocks for ever on the
        # allocator's lock before it execs (about one srun in twenty here).
        # That hang, and only that one (a forked, not yet exec'd task
        # blocked in a futex inside the sanitizer runtime), is cancelled and
        # the job run again; any other hang or failure counts.
        for attempt in range(3):
            r = self._run_watching(argv, env, timeout)
            if r is not None:
                return r
            self.runtime_deadlocks += 1
            print("  (%s: a task deadlocked inside the ASan runtime after fork; job cancelled, run again)"
                  % " ".join(argv[:8]))
        return subprocess.CompletedProcess(argv, 124, "", "ASan runtime fork deadlock 3 times in a row")

    def _run_watching(self, argv, env, timeout):
        import time
        e = dict(self.env)
        if env:
            e.update(env)
        p = subprocess.Popen(self.client + list(argv), env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, cwd=self.dir)
        deadline = time.monotonic() + timeout
        while True:
            try:
                out, err = p.communicate(timeout=5)
                return subprocess.CompletedProcess(argv, p.returncode, out, err)
            except subprocess.TimeoutExpired:
                pass
            jobs = runtime_deadlocked_jobs(self.dir)
            if jobs or time.monotonic() > deadline:
                for j in jobs:
                    subprocess.run(self.client + ["scancel", j], env=self.env, stderr=subprocess.DEVNULL)
                kill_tree(p.pid)
                out, err = p.communicate()
                if jobs:
                    time.sleep(1)  # let the cancelled step end before the next one
                    return None
                return subprocess.CompletedProcess(argv, 124, out, err + "\n(timed out after %ss)" % timeout)

    def srun_rpcs(self, args, runs=3, user=65534):
        """slurmctld's RPCs per srun of `args` running `true`, as sdiag
        counts them by user: srun runs as `user` (nobody), so that what
        slurmd and slurmstepd send (as root) is not counted.  Returns (RPCs
        per srun, {RPC type: count over the runs}, the failed srun's
        CompletedProcess or None); deterministic, no timing."""
        import re
        self.run(["sdiag", "--reset"])
        argv = ["setpriv", "--reuid=%d" % user, "--regid=%d" % user, "--clear-groups", "srun"]
        for _ in range(runs):
            r = self.run(argv + shlex.split(args) + ["true"])
            if r.returncode != 0:
                return None, {}, r
        def counts():
            out = self.run(["sdiag"]).stdout
            by_type, by_user = out.split("by user")[0], out.split("by user")[-1]
            users = {int(m.group(1)): int(m.group(2))
                     for m in re.finditer(r"\(\s*(\d+)\)\s+count:(\d+)", by_user)}
            types = {m.group(1): int(m.group(2))
                     for m in re.finditer(r"^\s+([A-Z_]+)\s+\(\s*\d+\)\s+count:(\d+)", by_type, re.M)}
            return users.get(user, 0), types

        # slurmctld records an RPC in its statistics after it has answered
        # it: an srun that has exited may not be counted yet (seen once in
        # 26.05, 11 RPCs for 3 sruns of 4).  Read until two reads agree on
        # srun's user's count (sdiag's own RPC is root's).
        import time
        seen = counts()
        for _ in range(20):
            time.sleep(0.3)
            now = counts()
            if now[0] == seen[0]:
                break
            seen = now
        return now[0] / runs, now[1], None

    def mpi_types(self):
        """The MPI plugin types this lab's srun offers (`srun --mpi=list`)."""
        if not hasattr(self, "_mpi_types"):
            r = self.run(["srun", "--mpi=list"])
            words = re.findall(r"[a-z0-9_]+", (r.stdout + r.stderr).replace("MPI plugin types are", ""))
            self._mpi_types = {w.split("_v")[0] if w.startswith("pmix_") else w for w in words}
        return self._mpi_types

    def bootstraps(self):
        """(--mpi value, the bootstrap libdistbind picks under it) for each
        of pmix, pmi2, none this Slurm has.  Debian's 26.05 ships no
        mpi/pmix plugin: that is said once here, never skipped silently."""
        out = [(m, b) for m, b in (("pmix", "pmix"), ("pmi2", "pmi2"), ("none", "tcp")) if m in self.mpi_types()]
        if "pmix" not in self.mpi_types() and not getattr(self, "_said_no_pmix", False):
            self._said_no_pmix = True
            print("  NOTE this Slurm has no mpi/pmix plugin (srun --mpi=list: %s): the --mpi=pmix cases do not run"
                  % " ".join(sorted(self.mpi_types())))
        return out

    def pmi(self):
        """--mpi=pmix where this Slurm has it, else pmi2 (see bootstraps)."""
        return self.bootstraps()[0][0]

    def table(self, args, env=None, expect_ok=True):
        """Run PROBE in every task; return {rank: {field: value}} (absent = None)."""
        r = self.srun(args, [PROBE], env=env)
        rows = parse_probe(r.stdout)
        if expect_ok and (r.returncode != 0 or not rows):
            print("srun %s failed (rc %d):\n%s%s" % (args, r.returncode, r.stdout, r.stderr))
        self.last = r
        return rows


def descendants(pid):
    """The pids of every process below pid (from /proc), children first."""
    children = {}
    for d in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/stat" % d) as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(d))
    out, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def kill_tree(pid):
    """SIGKILLs pid and everything it started (a timed-out salloc and its
    srun: killing salloc alone would leave srun to hold the job)."""
    import signal
    for v in descendants(pid) + [pid]:
        try:
            os.kill(v, signal.SIGKILL)
        except OSError:
            pass


def runtime_deadlocked_jobs(labdir):
    """Job ids whose slurmstepd (on this lab's nodes) has a forked task that
    never exec'd and is blocked in a futex inside the ASan runtime (see
    Lab.srun)."""
    jobs, nss = set(), set()
    for n in open(os.path.join(labdir, "nodes")).read().split():
        try:
            nss.add(open(os.path.join(labdir, n, "mntns")).read().strip())
        except OSError:
            pass
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            if os.readlink("/proc/%s/ns/mnt" % pid) not in nss:
                continue
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                cmd = f.read().split(b"\0")[0].decode(errors="replace")
            if not cmd.startswith("slurmstepd: ["):
                continue
            with open("/proc/%s/stat" % pid) as f:
                ppid = f.read().rsplit(") ", 1)[1].split()[1]
            with open("/proc/%s/cmdline" % ppid, "rb") as f:
                if not f.read().startswith(b"slurmstepd: ["):
                    continue  # the step's own slurmstepd, not a forked task
            with open("/proc/%s/syscall" % pid) as f:
                sc = f.read().split()
            if not sc or sc[0] != "202":  # futex
                continue
            ip = int(sc[-1], 16)
            with open("/proc/%s/maps" % pid) as f:
                for line in f:
                    parts = line.split()
                    lo, hi = (int(x, 16) for x in parts[0].split("-"))
                    if lo <= ip < hi and "x" in parts[1] and "libasan" in line:
                        jobs.add(cmd[len("slurmstepd: ["):].split(".")[0])
        except (OSError, IndexError, ValueError):
            continue
    return sorted(jobs)


def sanitizer_logs():
    """A directory for a Lab(sanitize_dir=...) run's reports (slurmstepd
    writes them as the job user); skips when the sanitized plugin is absent."""
    import tempfile
    if not os.path.exists(SAN_PLUGIN):
        skip(SAN_PLUGIN + " not built (make check builds it)")
    logs = tempfile.mkdtemp(prefix="dist-bind-san.")
    os.chmod(logs, 0o777)
    return logs


def _report_blocks(text):
    """Split a sanitizer log into its reports: a leak record ("Direct leak
    of ...", "Indirect leak of ...") with its stack, or an error with its."""
    blocks, cur = [], None
    for line in text.splitlines():
        if line.startswith(("Direct leak", "Indirect leak")) or "ERROR:" in line or "runtime error" in line:
            cur = [line]
            blocks.append(cur)
        elif cur is not None and line.strip():
            cur.append(line)
        else:
            cur = None
    return blocks


def _symbolize(block, module):
    """Our frames of a report (module+offset, as symbolize=0 prints them),
    resolved with addr2line."""
    import re
    out = []
    for line in block:
        m = re.search(r"\((\S*%s)\+(0x[0-9a-f]+)\)" % re.escape(os.path.basename(module)), line)
        if not m:
            continue
        r = subprocess.run(["addr2line", "-f", "-C", "-i", "-e", SAN_PLUGIN, m.group(2)],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        out.append("%s: %s" % (m.group(2), " <- ".join(r.stdout.split("\n")[::2]).strip(" <-")))
    return out


def check_sanitizer_reports(t, logs, module="spank_dist_bind.asan.so"):
    """After a Lab(sanitize_dir=logs) is down: the sanitizers ran in
    slurmd/slurmstepd; no error was reported, and no leaked allocation has
    a frame in our plugin (Slurm's own leaks, whose stacks do not pass
    through it, are allowed)."""
    import glob
    reports = sorted(glob.glob(os.path.join(logs, "asan.*")) + glob.glob(os.path.join(logs, "ubsan.*")))
    t.ok(len(reports) > 0, "the sanitizers ran in slurmd/slurmstepd (%d report files)" % len(reports))
    leaks_seen = 0
    for path in reports:
        bad = []
        for block in _report_blocks(open(path).read()):
            head = block[0]
            if head.startswith(("Direct leak", "Indirect leak")):
                leaks_seen += 1
                if any(module in l for l in block):
                    bad.append(block)
            elif "LeakSanitizer: detected memory leaks" not in head:
                bad.append(block)
        t.ok(not bad, "%s: no sanitizer error and no leak of ours %s" % (os.path.basename(path),
                                                                        [b[0] for b in bad[:3]]))
        for block in bad[:5]:
            print("\n".join(block[:40]))
            print("  our frames: %s" % _symbolize(block, module))
    print("(%d leak records of Slurm's own, not through %s)" % (leaks_seen, module))
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


def device_of(row, ordinal):
    """The GPU (global index) CUDA device `ordinal` is for this task, or None."""
    seen = devmodel.cuda_view(row, devmodel.expand(row.get("OPEN_")))
    return seen[ordinal] if 0 <= ordinal < len(seen) else None


def check_mapping(t, base, fixed, mode, own=None, master=None, share=False):
    """Assert the dist-bind promise for every task.

    base/fixed: tables of the same job without and with --dist-bind.
    own(rank) -> the GPUs the task owns (global indices; default: what
    Slurm bound it to in `base`), None for a job without GPUs.  The step's
    GPUs per node come from slurmctld (the probe's ALLOC_); which GPUs a
    task can open from the task itself (OPEN_), so this holds with and
    without device cgroups (see devmodel)."""
    own = own or bound_own(base)
    t.eq(sorted(fixed), sorted(base), "same ranks with and without --dist-bind")
    hosts = node_order(base)
    n = len(base)
    ports = {f["MASTER_PORT"] for f in fixed.values()}
    t.eq(len(ports), 1, "one MASTER_PORT in the whole step %s" % sorted(ports, key=str))
    alloc = devmodel.node_alloc(fixed) or devmodel.node_alloc(base)
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
        for hint in SRUN_WORDS + CARRIED_WORDS:
            t.eq(f[hint], None, pre + "srun's %s is not left in the task" % hint)
        mine = own(r)
        if mine is None:  # no GPUs in this job
            for v in ("CUDA_VISIBLE_DEVICES", "DIST_BIND_DEVICE", "DIST_BIND_GPUS", "CUDA_DEVICE_ORDER"):
                t.eq(f[v], None, pre + v + " not set without GPUs")
            continue
        seen = devmodel.cuda_view(f, devmodel.expand(f["OPEN_"]))
        # Bound per task inside a device cgroup, a task can open only its
        # own GPUs, which Slurm names inside the cgroup.
        confined = set(devmodel.expand(f["OPEN_"])) < set(alloc[host])
        if (f["CUDA_VISIBLE_DEVICES"] or "").startswith("GPU-"):
            # Lists by UUID (26.05 Flags=env_uuid): the own GPUs by UUID.
            want_names = ",".join(devmodel.lab_uuid(host, g) for g in mine)
        else:
            want_names = f["CUDA_VISIBLE_DEVICES"] if confined else ",".join(str(g) for g in mine)
        t.eq(f["DIST_BIND_GPUS"], want_names, pre + "DIST_BIND_GPUS = the GPUs Slurm gave it, as Slurm names them")
        t.eq(f["CUDA_DEVICE_ORDER"], "PCI_BUS_ID", pre + "CUDA_DEVICE_ORDER")
        if mode in ("rank", "closest") and not share:
            t.eq(sorted(seen), sorted(alloc[host]), pre + "CUDA sees the step's GPUs on the node")
        elif mode == "isolate":
            t.eq(seen, mine, pre + "CUDA sees only its own GPU(s)")
        elif mode == "env":
            t.eq(f["CUDA_VISIBLE_DEVICES"], b["CUDA_VISIBLE_DEVICES"], pre + "GPU visibility untouched")
    bad = devmodel.violations(fixed, own, lambda host: alloc[host], mode, share)
    t.ok(not bad, "the device invariant holds for every task (%d violations) %s" % (len(bad), bad[:3]))
    if lab_config() & {"cgroup", "cgroup2"}:
        check_opens(t, base, fixed, mode, alloc)


def opens(row):
    """{GPU: what open() said} from the probe's ERRNO_ ("0:ENXIO,1:EPERM")."""
    return {int(g): how for g, _, how in (e.partition(":") for e in (row.get("ERRNO_") or "").split(",") if e)}


def check_opens(t, base, fixed, mode, alloc):
    """Under device cgroups, what each task of `fixed` can open, as it
    tried it (ENXIO: the device cgroup lets it through to the driverless
    device; EPERM: the cgroup refuses it): every GPU it is shown and none
    outside the step's GPUs on its node.  In rank and closest exactly the
    step's GPUs on the node (every one is shown); in isolate and env
    exactly what the same task of the job without dist-bind could open
    (dist-bind changes no confinement).  So a list that names a GPU the
    cgroup (v1's devices.list, v2's eBPF program) refuses, or a cgroup that
    lets a task open a GPU it should not, fails here."""
    for r in sorted(fixed):
        f, b = fixed[r], base.get(r, {})
        host = f["SLURMD_NODENAME"]
        pre = "rank %d (%s/%s): " % (r, host, f["SLURM_LOCALID"])
        said = opens(f)
        t.ok(said and set(said.values()) <= {"ENXIO", "EPERM"},
             pre + "open() of every fake GPU says ENXIO or EPERM: %s" % f.get("ERRNO_"))
        can = sorted(g for g, how in said.items() if how == "ENXIO")
        shown = devmodel.cuda_view(f, can)
        step = sorted(alloc[host])
        if mode in ("rank", "closest"):
            want = step
        else:
            want = sorted(g for g, how in opens(b).items() if how == "ENXIO") if b else step
        t.eq(can, want, pre + "opens GPUs %s and is refused %s (shown %s; the step's on %s: %s)"
             % (can, sorted(g for g, how in said.items() if how == "EPERM"), shown, host, step))
        t.ok(set(shown) <= set(can) and set(can) <= set(step),
             pre + "every GPU it is shown opens, and none outside the step's GPUs on its node does")


def node_order(table):
    """The step's nodes in the order of the lowest rank each runs: the
    NODE_RANK order (rank 0's node first)."""
    first = {}
    for r, row in table.items():
        host = row["SLURMD_NODENAME"]
        first[host] = min(r, first.get(host, r))
    return sorted(first, key=first.get)


def bound_own(base):
    """Own GPUs when Slurm bound every task: what it gave them without dist-bind."""
    return lambda r: devmodel.own_from_slurm(base[r])


def unbound_own(base):
    """Without per-task binding, local task i owns the i-th step GPU, and a
    node's only task all of them."""
    alloc = devmodel.node_alloc(base)

    def own(r):
        host = base[r]["SLURMD_NODENAME"]
        if sum(1 for b in base.values() if b["SLURMD_NODENAME"] == host) == 1:
            return alloc[host]
        return [alloc[host][int(base[r]["SLURM_LOCALID"])]]
    return own



def slurm_at_least(release):
    """Whether the lab's Slurm (this machine's, or the root's the test runs
    in) is `release` ("23.11") or later."""
    def key(r):
        return tuple(int(x) for x in r.split("."))
    return key(releasekit.native()) >= key(release)


def nobind_lists(base, cgroup):
    """What Slurm itself sets in CUDA_VISIBLE_DEVICES under --gpu-bind=none,
    per rank: nothing on 22.05; from 23.11 (Slurm commit 657efad356) the
    step's GPUs on the task's node, numbered inside the task's cgroup under
    ConstrainDevices (the step's cgroup holds them all)."""
    if not slurm_at_least("23.11"):
        return [None] * len(base)
    alloc = devmodel.node_alloc(base)
    out = []
    for _, row in sorted(base.items()):
        gpus = alloc[row["SLURMD_NODENAME"]]
        out.append(",".join(str(i) for i in (range(len(gpus)) if cgroup else gpus)))
    return out

# A configuration naming another Slurm release runs this test in its root.
releasekit.enter(lab_config())
