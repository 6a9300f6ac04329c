#!/usr/bin/python3
"""`make rpm` (Debian's rpmbuild) builds the RPMs; `rpm -qlp` lists the
expected files under %{_libdir}/slurm, the Release carries the Slurm
version and Requires pins it."""
import glob, os, subprocess, sys
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "lab", "kit"))
from labkit import BUILD, Test, skip

if subprocess.run(["which", "rpmbuild"], capture_output=True).returncode != 0:
    skip("rpmbuild not installed (make deps)")
t = Test("rpm")
r = subprocess.run(["make", "-s", "rpm", "B=" + os.path.relpath(BUILD, ROOT)], cwd=ROOT, capture_output=True,
                   text=True)
t.eq(r.returncode, 0, "make rpm")
if r.returncode:
    print(r.stdout[-3000:], r.stderr[-3000:])
slurm = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "libslurm-dev"], capture_output=True,
                       text=True).stdout.split("-")[0]
main = glob.glob(os.path.join(BUILD, "rpm", "RPMS", "*", "dist-bind-0*.rpm"))
devel = glob.glob(os.path.join(BUILD, "rpm", "RPMS", "*", "dist-bind-devel-*.rpm"))
t.eq((len(main), len(devel)), (1, 1), "dist-bind and dist-bind-devel RPMs built")
if main and devel:
    q = lambda *a: subprocess.run(["rpm"] + list(a), capture_output=True, text=True).stdout
    files = q("-qlp", main[0]).split()
    dfiles = q("-qlp", devel[0]).split()
    print("\n".join(files + dfiles))
    libdir = "/usr/lib64" if any(f.startswith("/usr/lib64/") for f in files) else "/usr/lib"
    for f in ("%s/slurm/spank_dist_bind.so" % libdir, "%s/libdistbind.so.1" % libdir, "/usr/bin/dist-bind-check",
              "/etc/slurm/plugstack.conf.d/zz-dist-bind.conf", "/usr/share/man/man8/dist-bind.8",
              "/usr/share/man/man1/dist-bind-check.1"):
        t.ok(any(x.startswith(f) for x in files), "dist-bind RPM lists " + f)
    for f in ("/usr/include/distbind.h", "/usr/include/distbind_version.h", "%s/pkgconfig/distbind.pc" % libdir, "%s/libdistbind.so" % libdir,
              "/usr/share/man/man3/distbind.3"):
        t.ok(any(x.startswith(f) for x in dfiles), "dist-bind-devel RPM lists " + f)
    release = q("-qp", "--qf", "%{RELEASE}", main[0])
    t.ok(("slurm" + slurm) in release, "Release %s carries Slurm %s" % (release, slurm))
    reqs = q("-qpR", main[0])
    t.ok("slurm >= %s" % slurm in reqs, "Requires pins Slurm: %s" % [l for l in reqs.splitlines() if "slurm" in l])
    t.ok("/usr/lib64/slurm" in subprocess.run(["rpm", "-qp", "--qf", "[%{FILENAMES}\n]", main[0]],
                                              capture_output=True, text=True).stdout,
         "%{_libdir}/slurm is /usr/lib64/slurm")
t.done()
