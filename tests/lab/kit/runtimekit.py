"""Lab helpers for libdistbind's tests: the exchange worker, dist-bind-check,
and the example program built the way a user builds it (make install into a
staging directory, then cc with pkg-config)."""
import os
import shutil
import subprocess
import tempfile

from labkit import BUILD, ROOT, skip

WORKER = os.path.join(BUILD, "rt-tests", "xchg_worker")
CHECK = os.environ.get("DIST_BIND_CHECK", os.path.join(BUILD, "dist-bind-check"))


def need(*paths):
    for p in paths:
        if not os.path.exists(p):
            skip(p + " not built (make check builds it)")


class Installed:
    """`make install DESTDIR=<tmp> PREFIX=/usr`, and the example built
    against it with pkg-config.  Removed when the block ends."""

    def __enter__(self):
        self.dir = tempfile.mkdtemp(prefix="dist-bind-install.")
        os.chmod(self.dir, 0o755)
        r = subprocess.run(["make", "--no-print-directory", "-C", ROOT, "install", "DESTDIR=" + self.dir,
                            "PREFIX=/usr", "B=" + os.path.relpath(BUILD, ROOT)],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if r.returncode != 0:
            raise RuntimeError("make install failed:\n" + r.stdout)
        libdirs = [os.path.join(d, "pkgconfig") for d, _, files in os.walk(self.dir) if "libdistbind.so" in files]
        if not libdirs:
            raise RuntimeError("make install put no libdistbind.so under " + self.dir)
        self.pc_dir = libdirs[0]
        self.libdir = os.path.dirname(self.pc_dir)
        env = dict(os.environ, PKG_CONFIG_PATH=self.pc_dir, PKG_CONFIG_SYSROOT_DIR=self.dir)
        flags = subprocess.run(["pkg-config", "--cflags", "--libs", "distbind"], env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
        if flags.returncode != 0:
            raise RuntimeError("pkg-config distbind: " + flags.stderr)
        self.pkg_flags = flags.stdout.split()
        self.example = os.path.join(self.dir, "example")
        cc = subprocess.run(["cc", "-Wall", "-Wextra", "-Werror", os.path.join(ROOT, "lib", "runtime", "example.c"),
                             "-o", self.example] + self.pkg_flags, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
        if cc.returncode != 0:
            raise RuntimeError("building the example failed:\n" + cc.stdout)
        return self

    def __exit__(self, *exc):
        shutil.rmtree(self.dir, ignore_errors=True)
        return False


def worker_results(stdout, prefix="OK "):
    """The workers' "PREFIX rank=R key=value ..." lines (the exchange
    worker's "OK ...") as {rank: {key: value}}."""
    out = {}
    for line in stdout.splitlines():
        f = dict(kv.partition("=")[::2] for kv in line.split()[1:] if "=" in kv)
        if line.startswith(prefix) and "rank" in f:
            out[int(f["rank"])] = f
    return out


def check_rows(stdout):
    """dist-bind-check's table as {rank: {column: value}}."""
    rows, header = {}, None
    for line in stdout.splitlines():
        cols = line.split()
        if cols[:2] == ["rank", "host"]:
            header = ["rank", "host", "node", "local", "device", "gpu", "bus", "gpu_numa", "cpu_numa", "flags"]
            continue
        if header and cols and cols[0].isdigit() and len(cols) >= len(header) - 1:
            # "bus id" and "gpu numa" are two-word headers: map by position.
            rows[int(cols[0])] = dict(zip(header, cols))
    return rows
