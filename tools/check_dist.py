"""Check gpuscan's release artefacts: an sdist holds every file it should, a wheel is complete,
tagged manylinux and links nothing outside the manylinux set.

    python3 tools/check_dist.py dist/gpuscan-0.1.0.tar.gz wheelhouse/gpuscan-*.whl [--cuda]

sdist: every file git tracks is in it, but those of the CI script (.ci/) and .gitignore; no build
product (.so, .o); its PKG-INFO has the license, requires-python and extras.  wheel: the package
with its extension, stubs, py.typed and LICENSE; the same metadata; a manylinux platform tag;
the extension's DT_NEEDED libraries all in the manylinux set (the CUDA runtime is linked
statically, so libcudart is not one of them) and nothing grafted by auditwheel (gpuscan.libs/);
with --cuda, the extension carries CUDA kernels (an .nv_fatbin section).  Prints one line per
check and exits 1 if any fails.  Needs git (the sdist's file list) and readelf (binutils).
"""
import argparse
import email.parser
import os
import subprocess
import sys
import tarfile
import tempfile
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Tracked files an sdist leaves out: CI's own script, and git's.
NOT_SHIPPED = (".ci/", ".gitignore")
# The libraries a manylinux wheel may link against (PEP 599/600's policy for x86_64).
MANYLINUX_LIBS = {"libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2", "librt.so.1",
                  "libstdc++.so.6", "libgcc_s.so.1", "libutil.so.1", "libresolv.so.2",
                  "libnsl.so.1", "libcrypt.so.1", "ld-linux-x86-64.so.2"}
PACKAGE_FILES = ["__init__.py", "__main__.py", "trace.py", "_slow.py", "_timing.py", "_gpuscan.pyi",
                 "py.typed"]
EXTRAS = {"test", "notebooks", "dask"}


class Checks:
    def __init__(self):
        self.failed = 0

    def check(self, ok, what, detail=""):
        self.failed += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {what}" + (f": {detail}" if detail and not ok else ""))


def check_metadata(c, text, where):
    meta = email.parser.Parser().parsestr(text)
    c.check(meta.get("License-Expression") == "MIT", f"{where}: License-Expression MIT",
            meta.get("License-Expression"))
    c.check("LICENSE" in meta.get_all("License-File", []), f"{where}: License-File LICENSE")
    c.check(meta.get("Requires-Python") == ">=3.10", f"{where}: Requires-Python >=3.10",
            meta.get("Requires-Python"))
    extras = set(meta.get_all("Provides-Extra", []))
    c.check(EXTRAS <= extras, f"{where}: extras {', '.join(sorted(EXTRAS))}", sorted(extras))
    c.check(bool(meta.get("Author")), f"{where}: Author")
    c.check(bool(meta.get_all("Classifier")), f"{where}: classifiers")


def check_sdist(c, path):
    with tarfile.open(path) as tar:
        names = [m.name for m in tar.getmembers() if m.isfile()]
        top = os.path.commonpath(names)
        shipped = {os.path.relpath(n, top) for n in names}
        pkg_info = tar.extractfile(f"{top}/PKG-INFO").read().decode()
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout.split()
    want = {f for f in tracked if not f.startswith(NOT_SHIPPED)}
    missing = sorted(want - shipped)
    c.check(not missing, f"sdist: the {len(want)} tracked files (but .ci/, .gitignore)",
            f"missing {missing[:20]}")
    products = sorted(n for n in shipped if n.endswith((".so", ".o", ".pyc")))
    c.check(not products, "sdist: no build products", products[:20])
    check_metadata(c, pkg_info, "sdist")


def elf_needed_and_sections(so_path):
    dyn = subprocess.run(["readelf", "-d", so_path], capture_output=True, text=True,
                         check=True).stdout
    needed = {line.split("[", 1)[1].split("]", 1)[0] for line in dyn.splitlines()
              if "(NEEDED)" in line}
    sections = subprocess.run(["readelf", "-S", "-W", so_path], capture_output=True, text=True,
                              check=True).stdout
    return needed, sections


def check_wheel(c, path, cuda):
    name = os.path.basename(path)
    c.check("-manylinux" in name, "wheel: a manylinux platform tag", name)
    with zipfile.ZipFile(path) as whl:
        names = whl.namelist()
        info = [n for n in names if n.endswith(".dist-info/METADATA")]
        tags = [n for n in names if n.endswith(".dist-info/WHEEL")]
        for f in PACKAGE_FILES:
            c.check(f"gpuscan/{f}" in names, f"wheel: gpuscan/{f}")
        c.check(any(n.endswith(".dist-info/licenses/LICENSE") for n in names), "wheel: LICENSE")
        grafted = sorted(n for n in names if n.startswith("gpuscan.libs/"))
        c.check(not grafted, "wheel: no library grafted by auditwheel", grafted)
        exts = [n for n in names if n.startswith("gpuscan/_gpuscan") and n.endswith(".so")]
        c.check(len(exts) == 1, "wheel: one extension module", exts)
        check_metadata(c, whl.read(info[0]).decode(), "wheel")
        wheel_tags = [ln for ln in whl.read(tags[0]).decode().splitlines()
                      if ln.startswith("Tag:")]
        c.check(bool(wheel_tags) and all("manylinux" in t for t in wheel_tags),
                "wheel: WHEEL's tags are manylinux", wheel_tags)
        if len(exts) != 1:
            return
        with tempfile.TemporaryDirectory() as tmp:
            so_path = whl.extract(exts[0], tmp)
            needed, sections = elf_needed_and_sections(so_path)
    outside = sorted(needed - MANYLINUX_LIBS)
    c.check(not outside, f"wheel: links only manylinux libraries ({', '.join(sorted(needed))})",
            f"also {outside}")
    if cuda:
        c.check(".nv_fatbin" in sections, "wheel: the extension carries CUDA kernels")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("artefacts", nargs="+", help="sdist (.tar.gz) and wheel (.whl) paths")
    parser.add_argument("--cuda", action="store_true",
                        help="the wheel must carry CUDA kernels (built with GPUSCAN_CUDA_ARCHS)")
    args = parser.parse_args(argv)
    c = Checks()
    for path in args.artefacts:
        print(f"{path}:")
        if path.endswith(".tar.gz"):
            check_sdist(c, path)
        elif path.endswith(".whl"):
            check_wheel(c, path, args.cuda)
        else:
            c.check(False, "a .tar.gz or .whl", path)
    if c.failed:
        print(f"check_dist: {c.failed} check(s) FAILED", file=sys.stderr)
    return 1 if c.failed else 0


if __name__ == "__main__":
    sys.exit(main())
