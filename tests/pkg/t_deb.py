#!/usr/bin/python3
"""The Debian packages, as an admin uses them: `make deb`, lintian without
errors, `dpkg -i` on this machine, `man dist-bind`, then the seed job, the
PyTorch job, dist-bind-check and a program built with pkg-config against
the installed -dev package, on the lab, with the installed files (not the
build tree).  Packages this test installed are removed again at the end."""
import glob, os, shutil, subprocess, sys, tempfile
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "lab", "kit"))
from labkit import BUILD, Test, skip

if os.geteuid() != 0:
    skip("installing packages needs root")
for tool in ("dpkg-buildpackage", "dh", "lintian"):
    if subprocess.run(["which", tool], capture_output=True).returncode != 0:
        skip(tool + " not installed (make deps)")

PKGS = ["libdistbind1", "libdistbind-dev", "slurm-spank-dist-bind"]
MULTIARCH = subprocess.run(["dpkg-architecture", "-qDEB_HOST_MULTIARCH"], capture_output=True,
                           text=True).stdout.strip()
PLUGIN = "/usr/lib/%s/slurm-wlm/spank_dist_bind.so" % MULTIARCH
t = Test("deb")


def run(cmd, **kw):
    print("$ " + (cmd if isinstance(cmd, str) else " ".join(cmd)))
    r = subprocess.run(cmd, shell=isinstance(cmd, str), capture_output=True, text=True, **kw)
    if r.returncode != 0:
        print(r.stdout[-3000:], r.stderr[-3000:])
    return r


def installed(pkg):
    r = subprocess.run(["dpkg-query", "-W", "-f=${Status}", pkg], capture_output=True, text=True)
    return "install ok installed" in r.stdout


r = run(["make", "-s", "deb", "B=" + os.path.relpath(BUILD, ROOT)], cwd=ROOT)
t.eq(r.returncode, 0, "make deb")
debs = {p: glob.glob(os.path.join(BUILD, "deb", "%s_*.deb" % p)) for p in PKGS}
t.ok(all(len(v) == 1 for v in debs.values()), "one .deb per package: %s" % debs)
if not all(len(v) == 1 for v in debs.values()):
    t.done()

contents = {p: run(["dpkg-deb", "-c", debs[p][0]]).stdout for p in PKGS}
for pkg, path in (("slurm-spank-dist-bind", "." + PLUGIN), ("slurm-spank-dist-bind", "./usr/bin/dist-bind-check"),
                  ("slurm-spank-dist-bind", "./etc/slurm/plugstack.conf.d/zz-dist-bind.conf"),
                  ("slurm-spank-dist-bind", "./usr/share/man/man8/dist-bind.8.gz"),
                  ("slurm-spank-dist-bind", "./usr/share/man/man1/dist-bind-check.1.gz"),
                  ("libdistbind1", "./usr/lib/%s/libdistbind.so.1" % MULTIARCH),
                  ("libdistbind-dev", "./usr/include/distbind.h"),
                  ("libdistbind-dev", "./usr/include/distbind_version.h"),
                  ("libdistbind-dev", "./usr/lib/%s/pkgconfig/distbind.pc" % MULTIARCH),
                  ("libdistbind-dev", "./usr/share/man/man3/distbind.3.gz")):
    t.ok(path in contents[pkg], "%s contains %s" % (pkg, path))
deps = run(["dpkg-deb", "-f", debs["slurm-spank-dist-bind"][0], "Depends"]).stdout
slurm = run(["dpkg-query", "-W", "-f=${Version}", "libslurm-dev"]).stdout.split("-")[0]
t.ok("slurm-wlm-basic-plugins (>= %s)" % slurm in deps and "slurm-wlm-basic-plugins (<< " in deps,
     "Depends pinned to Slurm %s: %s" % (slurm, deps.strip()))
for p in PKGS:
    version = run(["dpkg-deb", "-f", debs[p][0], "Version"]).stdout.strip()
    t.ok(version.endswith("+slurm" + slurm), "%s's version %s carries Slurm %s" % (p, version, slurm))

changes = glob.glob(os.path.join(BUILD, "deb", "*.changes"))
# lintian leaves its ELF caches (mldbm-elf-*) in TMPDIR: a directory of ours.
with tempfile.TemporaryDirectory(prefix="dist-bind-lintian.") as lintian_tmp:
    r = run(["lintian", "--fail-on", "error"] + changes, env=dict(os.environ, TMPDIR=lintian_tmp))
t.eq(r.returncode, 0, "lintian reports no errors")
t.ok(" E: " not in r.stdout and not r.stdout.startswith("E:"), "no E: lines from lintian")

before = {p: installed(p) for p in PKGS}
tmp = None
try:
    r = run(["dpkg", "-i"] + [debs[p][0] for p in PKGS])
    t.eq(r.returncode, 0, "dpkg -i installs the three packages")
    t.ok(os.path.exists(PLUGIN), "plugin installed at " + PLUGIN)

    r = run("man -w dist-bind && man dist-bind | head -20")
    t.ok(r.returncode == 0 and "SPANK" in r.stdout, "man dist-bind works")
    for page in ("dist-bind-check", "3 distbind"):
        t.eq(run("man -w " + page).returncode, 0, "man " + page)

    r = run(["readelf", "-d", "/usr/bin/dist-bind-check"])
    t.ok("RPATH" not in r.stdout and "RUNPATH" not in r.stdout, "installed dist-bind-check has no RPATH")

    # The lab tests, pointed at the installed files.
    env = dict(os.environ, DIST_BIND_PLUGIN=PLUGIN, DIST_BIND_CHECK="/usr/bin/dist-bind-check",
               PYTHONUNBUFFERED="1")
    for test in ("t_seed.py", "t_pytorch.py", "t_check_seed.py"):
        r = run(["/usr/bin/python3", os.path.join(ROOT, "tests", "lab", test)], env=env, timeout=600)
        t.eq(r.returncode, 0, "lab test %s against the installed package" % test)
        print("\n".join(r.stdout.splitlines()[-3:]))

    # A program built against the installed -dev package.
    tmp = tempfile.mkdtemp(prefix="dist-bind-pkg.")
    os.chmod(tmp, 0o755)
    exe = os.path.join(tmp, "example")
    r = run("cc %s -o %s $(pkg-config --cflags --libs distbind)" % (os.path.join(ROOT, "lib", "runtime", "example.c"),
                                                                      exe))
    t.eq(r.returncode, 0, "example builds with pkg-config distbind")
    r = run(["ldd", exe])
    found = [l.split("=>")[1].split()[0] for l in r.stdout.splitlines() if "libdistbind" in l and "=>" in l]
    want = os.path.realpath("/usr/lib/%s/libdistbind.so.1" % MULTIARCH)
    t.eq([os.path.realpath(f) for f in found], [want], "it uses the installed libdistbind.so.1")
    sys.path.insert(0, os.path.join(ROOT, "tests", "lab", "kit"))
    os.environ["DIST_BIND_PLUGIN"] = PLUGIN
    import labkit
    labkit.PLUGIN = PLUGIN
    with labkit.Lab() as lab:
        pmi = lab.pmi()
        r = lab.srun("-N2 -n5 --gpus-per-task=1 --dist-bind --mpi=" + pmi, [exe])
        lines = [l for l in r.stdout.splitlines() if l.startswith("rank ") and "place from dist-bind" in l]
        t.eq(len(lines), 5, "the example runs on 5 ranks with the installed library (rc %d)" % r.returncode)
        t.ok(all("exchange over " + pmi in l for l in lines), "over " + pmi.upper())
finally:
    if tmp:
        shutil.rmtree(tmp, ignore_errors=True)
    remove = [p for p in reversed(PKGS) if not before[p] and installed(p)]
    if remove:
        run(["dpkg", "-P"] + remove)
t.done()
