"""Checks on the built artifacts that CI can run on this Linux machine.

    python .ci/check_dist.py artifacts DIST    sdist + wheel in DIST: LICENSE in both,
                                               only git-tracked files (or products
                                               of tracked sources), every tracked
                                               module installed, one version
    python .ci/check_dist.py auditwheel WHEEL [--serial]
                                               `auditwheel show`: the policy tag
                                               (see POLICY below)
    python .ci/check_dist.py identifiers       `cibuildwheel --print-build-identifiers`
                                               per platform == the platforms we ship

Exits non-zero with a message naming the offending file or tag.
"""

import argparse
import re
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path, PurePosixPath

ROOT = Path(__file__).resolve().parents[1]

# manylinux_2_28: what numpy and scipy ship, and the oldest image that
# cibuildwheel's defaults still maintain.
POLICY = (2, 28)

PYTHONS = ["cp310", "cp311", "cp312", "cp313", "cp314", "cp314t"]
EXPECTED_IDENTIFIERS = {
    "linux": {f"{py}-{plat}" for py in PYTHONS
              for plat in ("manylinux_x86_64", "manylinux_aarch64", "musllinux_x86_64")},
    "macos": {f"{py}-{plat}" for py in PYTHONS for plat in ("macosx_x86_64", "macosx_arm64")},
    "windows": {f"{py}-win_amd64" for py in PYTHONS},
}


def fail(msg):
    sys.exit(f"check_dist: FAIL: {msg}")


def tracked_files():
    out = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z"], check=True,
                         capture_output=True, text=True).stdout
    return {f for f in out.split("\0") if f}


def project_version():
    text = (ROOT / "meson.build").read_text()
    m = re.search(r"project\(.*?version\s*:\s*'([^']+)'", text, flags=re.S)
    if not m:
        fail("no version in meson.build's project() call")
    return m.group(1)


def one(paths, what):
    paths = list(paths)
    if len(paths) != 1:
        fail(f"expected one {what}, found {[p.name for p in paths]}")
    return paths[0]


def check_sdist(sdist, tracked, version):
    prefix = f"metriclust-{version}/"
    with tarfile.open(sdist) as tar:
        members = [m for m in tar.getmembers() if m.isfile()]
        names = [m.name for m in members]
        pkg_info = tar.extractfile(prefix + "PKG-INFO").read().decode()
    for name in names:
        if not name.startswith(prefix):
            fail(f"sdist member outside {prefix}: {name}")
    files = {n[len(prefix):] for n in names}
    generated = {"PKG-INFO"}
    untracked = sorted(files - tracked - generated)
    if untracked:
        fail(f"sdist has files git does not track: {untracked}")
    missing = sorted(f for f in tracked - files
                     if f.startswith(("src/", "csrc/")) or f in {"LICENSE", "meson.build",
                                                                   "meson.options", "pyproject.toml"})
    if missing:
        fail(f"sdist lacks tracked build inputs: {missing}")
    check_metadata(pkg_info, version, "sdist PKG-INFO")
    print(f"sdist ok: {sdist.name}, {len(files)} files, all tracked; LICENSE included")
    return files


def check_metadata(text, version, where):
    fields = {}
    for line in text.split("\n\n", 1)[0].splitlines():
        key, _, value = line.partition(": ")
        fields.setdefault(key, []).append(value)
    if fields.get("Version") != [version]:
        fail(f"{where}: Version {fields.get('Version')} != meson.build's {version}")
    if fields.get("License-Expression") != ["BSD-3-Clause"]:
        fail(f"{where}: License-Expression is {fields.get('License-Expression')}")
    if fields.get("License-File") != ["LICENSE"]:
        fail(f"{where}: License-File is {fields.get('License-File')}")


def check_wheel(wheel, tracked, version):
    dist_info = f"metriclust-{version}.dist-info/"
    with zipfile.ZipFile(wheel) as zf:
        names = [n for n in zf.namelist() if not n.endswith("/")]
        if dist_info + "licenses/LICENSE" not in names:
            fail(f"the wheel has no {dist_info}licenses/LICENSE")
        metadata = zf.read(dist_info + "METADATA").decode()
        license_text = zf.read(dist_info + "licenses/LICENSE")
    if license_text != (ROOT / "LICENSE").read_bytes():
        fail("the wheel's LICENSE differs from the repository's")
    check_metadata(metadata, version, "wheel METADATA")

    tracked_pyx = {PurePosixPath(f).stem for f in tracked
                   if f.startswith("src/metriclust/_kernels/") and f.endswith(".pyx")}
    allowed_dist_info = {"METADATA", "WHEEL", "RECORD", "entry_points.txt", "licenses/LICENSE"}
    installed_py = set()
    extensions = set()
    for name in names:
        if name.startswith(dist_info):
            if name[len(dist_info):] not in allowed_dist_info:
                fail(f"unexpected file in the wheel's dist-info: {name}")
            continue
        path = PurePosixPath(name)
        if path.parts[0] != "metriclust":
            fail(f"wheel file outside the package: {name}")
        if name == "metriclust/_version.py":
            if "src/metriclust/_version.py.in" not in tracked:
                fail("_version.py installed but its template is not tracked")
            continue
        if path.suffix in (".so", ".pyd"):
            stem = path.name.split(".")[0]
            if path.parent != PurePosixPath("metriclust/_kernels") or stem not in tracked_pyx:
                fail(f"extension module without a tracked .pyx: {name}")
            extensions.add(stem)
            continue
        if f"src/{name}" not in tracked:
            fail(f"wheel has a file git does not track: {name}")
        if path.suffix != ".py":
            fail(f"wheel has a build input or data file: {name}")
        if path.suffix == ".py":
            installed_py.add(name)
    tracked_py = {f[len("src/"):] for f in tracked
                  if f.startswith("src/metriclust/") and f.endswith(".py")}
    if tracked_py - installed_py:
        fail(f"tracked modules missing from the wheel (add them to meson.build): "
             f"{sorted(tracked_py - installed_py)}")
    if tracked_pyx - extensions:
        fail(f"bridges missing from the wheel: {sorted(tracked_pyx - extensions)}")
    print(f"wheel ok: {wheel.name}, {len(names)} files: {len(installed_py)} modules, "
          f"{len(extensions)} extensions, LICENSE, all from tracked sources")


def cmd_artifacts(args):
    dist = Path(args.dist)
    tracked = tracked_files()
    for required in ("LICENSE", "meson.options"):
        if required not in tracked:
            fail(f"{required} is not tracked by git")
    version = project_version()
    sdist = one(dist.glob("metriclust-*.tar.gz"), "sdist")
    wheel = one(dist.glob("metriclust-*.whl"), "wheel")
    if sdist.name != f"metriclust-{version}.tar.gz":
        fail(f"sdist name {sdist.name} does not carry version {version}")
    if not wheel.name.startswith(f"metriclust-{version}-"):
        fail(f"wheel name {wheel.name} does not carry version {version}")
    check_sdist(sdist, tracked, version)
    check_wheel(wheel, tracked, version)


def glibc_needs(path):
    """Highest GLIBC_x.y symbol version an ELF file references, as a tuple."""
    from elftools.elf.elffile import ELFFile  # auditwheel's dependency

    best = (0, 0)
    with open(path, "rb") as fh:
        elf = ELFFile(fh)
        section = elf.get_section_by_name(".gnu.version_r")
        if section is None:
            return best
        for _verneed, auxiliaries in section.iter_versions():
            for aux in auxiliaries:
                m = re.fullmatch(r"GLIBC_(\d+)\.(\d+)(?:\.\d+)?", aux.name)
                if m:
                    best = max(best, (int(m.group(1)), int(m.group(2))))
    return best


def cmd_auditwheel(args):
    import tempfile

    wheel = Path(args.wheel)
    out = subprocess.run(["auditwheel", "show", str(wheel)], capture_output=True, text=True)
    report = " ".join((out.stdout + out.stderr).split())
    print(report)
    if out.returncode != 0:
        fail(f"auditwheel show failed on {wheel.name}")
    m = re.search(r'constrains the platform tag to "manylinux_(\d+)_(\d+)_', report)
    if m is None:
        m = re.search(r'consistent with the following platform tag: "manylinux_(\d+)_(\d+)_', report)
    if m is None:
        fail("no manylinux tag in auditwheel's report")
    tag = (int(m.group(1)), int(m.group(2)))

    # Our own extension modules must not need a glibc newer than the policy
    # (the C core uses no versioned libm symbol newer than 2.28, for example).
    with tempfile.TemporaryDirectory() as tmp:
        with zipfile.ZipFile(wheel) as zf:
            zf.extractall(tmp)
        for so in sorted(Path(tmp).rglob("*.so")):
            need = glibc_needs(so)
            print(f"  {so.name}: GLIBC {need[0]}.{need[1]}")
            if need > POLICY:
                fail(f"{so.name} needs GLIBC {need} > policy {POLICY}")
    if args.serial:
        # Without OpenMP the wheel depends on libc alone: auditwheel's own tag
        # must meet the policy here as it will in the manylinux_2_28 image.
        if "libgomp" in report:
            fail("the serial wheel links libgomp")
        if tag > POLICY:
            fail(f"serial wheel tagged manylinux_{tag[0]}_{tag[1]} > policy {POLICY}")
        print(f"auditwheel ok (serial): manylinux_{tag[0]}_{tag[1]} <= "
              f"manylinux_{POLICY[0]}_{POLICY[1]}")
        return
    # The OpenMP wheel's tag is set by the libgomp that repair would vendor:
    # here the build machine's (its glibc symbol versions), in cibuildwheel
    # the manylinux_2_28 image's, built against glibc 2.28.
    if "libgomp.so.1" not in report:
        fail("the OpenMP wheel does not link libgomp: was OpenMP found?")
    ldconfig = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True).stdout
    hit = re.search(r"libgomp\.so\.1 \([^)]*\) => (\S+)", ldconfig)
    gomp_need = glibc_needs(hit.group(1)) if hit else None
    print(f"  system libgomp {hit.group(1) if hit else '(not found)'}: GLIBC {gomp_need}")
    if tag > POLICY and (gomp_need is None or gomp_need < tag):
        fail(f"tag manylinux_{tag[0]}_{tag[1]} is not explained by the system libgomp")
    print(f"auditwheel ok (OpenMP): own modules <= GLIBC {POLICY[0]}.{POLICY[1]}; local tag "
          f"manylinux_{tag[0]}_{tag[1]} comes from this machine's libgomp "
          f"(the manylinux_2_28 image vendors its own)")


def cmd_identifiers(args):
    for platform, expected in EXPECTED_IDENTIFIERS.items():
        out = subprocess.run(["cibuildwheel", "--print-build-identifiers", "--platform",
                              platform, str(ROOT)], capture_output=True, text=True)
        if out.returncode != 0:
            fail(f"cibuildwheel --print-build-identifiers --platform {platform}: {out.stderr}")
        got = set(out.stdout.split())
        if got != expected:
            fail(f"{platform}: configured {sorted(got)}; missing {sorted(expected - got)}, "
                 f"extra {sorted(got - expected)}")
        print(f"cibuildwheel {platform}: {len(got)} builds: {' '.join(sorted(got))}")


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("artifacts")
    p.add_argument("dist")
    p.set_defaults(func=cmd_artifacts)
    p = sub.add_parser("auditwheel")
    p.add_argument("wheel")
    p.add_argument("--serial", action="store_true", help="the -Dopenmp=disabled build")
    p.set_defaults(func=cmd_auditwheel)
    p = sub.add_parser("identifiers")
    p.set_defaults(func=cmd_identifiers)
    args = parser.parse_args()
    args.func(args)


if __name__ == "__main__":
    main()
