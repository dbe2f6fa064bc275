"""PEP 517 build backend for the spmvc Python package, on the standard library alone (the
package is pure Python over a shared library, so a wheel is a zip of python/spmvc/ plus
libspmvc.so; nothing needs to be downloaded to install it).

The library bundled as spmvc/_native/libspmvc.so is taken from, in order: $SPMVC_LIBRARY;
build/release/capi/libspmvc.so; build/ci/capi/libspmvc.so; else it is built first with
`cmake --preset release`. SPMVC_LIBRARY=none bundles nothing: the package then loads the library
named by $SPMVC_LIBRARY at run time, or libspmvc.so from the loader's path.
"""

import base64
import hashlib
import os
import pathlib
import re
import subprocess
import sys
import tarfile
import zipfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "python" / "spmvc"
NAME = "spmvc"
SUMMARY = ("A compiler for sparse matrix-vector multiply on NVIDIA GPUs: SciPy, CuPy and "
           "PyTorch matrices in, specialised kernels out")
DEPENDENCIES = ["numpy"]
EXTRAS = {"scipy": ["scipy"], "cupy": ["cupy"], "torch": ["torch"]}


def _version():
    text = (PACKAGE / "__init__.py").read_text()
    return re.search(r'^__version__ = "([^"]+)"', text, re.M).group(1)


def _library():
    env = os.environ.get("SPMVC_LIBRARY")
    if env == "none":
        return None
    if env:
        path = pathlib.Path(env)
        if not path.is_file():
            raise FileNotFoundError(f"SPMVC_LIBRARY={env}: no such file")
        return path
    for preset in ("release", "ci"):
        path = ROOT / "build" / preset / "capi" / "libspmvc.so"
        if path.is_file():
            return path
    print("spmvc: no libspmvc.so built yet; building it (cmake --preset release)",
          file=sys.stderr)
    subprocess.run(["cmake", "--preset", "release"], cwd=ROOT, check=True)
    subprocess.run(["cmake", "--build", "--preset", "release", "--target", "spmvc_shared"],
                   cwd=ROOT, check=True)
    return ROOT / "build" / "release" / "capi" / "libspmvc.so"


def _metadata():
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {NAME}",
        f"Version: {_version()}",
        f"Summary: {SUMMARY}",
        "Requires-Python: >=3.9",
    ]
    lines += [f"Requires-Dist: {d}" for d in DEPENDENCIES]
    for extra, deps in EXTRAS.items():
        lines.append(f"Provides-Extra: {extra}")
        lines += [f'Requires-Dist: {d}; extra == "{extra}"' for d in deps]
    readme = ROOT / "python" / "README.md"
    body = readme.read_text() if readme.exists() else ""
    return "\n".join(lines + ["Description-Content-Type: text/markdown", "", body])


def _digest(data):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def _dist_info():
    return f"{NAME}-{_version()}.dist-info"


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    d = pathlib.Path(metadata_directory) / _dist_info()
    d.mkdir(parents=True, exist_ok=True)
    (d / "METADATA").write_text(_metadata())
    return d.name


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    files = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        files[f"spmvc/{path.relative_to(PACKAGE).as_posix()}"] = path.read_bytes()
    library = _library()
    # A wheel with a native library is tied to the platform, not to the Python version.
    tag = "py3-none-any"
    if library is not None:
        files["spmvc/_native/libspmvc.so"] = library.resolve().read_bytes()
        tag = "py3-none-linux_x86_64"
    info = _dist_info()
    files[f"{info}/METADATA"] = _metadata().encode()
    files[f"{info}/WHEEL"] = (f"Wheel-Version: 1.0\nGenerator: spmvc_build\n"
                              f"Root-Is-Purelib: {'true' if library is None else 'false'}\n"
                              f"Tag: {tag}\n").encode()
    record = [f"{name},{_digest(data)},{len(data)}" for name, data in files.items()]
    record.append(f"{info}/RECORD,,")
    files[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()
    wheel = f"{NAME}-{_version()}-{tag}.whl"
    with zipfile.ZipFile(pathlib.Path(wheel_directory) / wheel, "w",
                         zipfile.ZIP_DEFLATED) as z:
        for name, data in files.items():
            mode = 0o755 if name.endswith(".so") else 0o644
            zi = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
            zi.external_attr = (0o100000 | mode) << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(zi, data)
    return wheel


def build_sdist(sdist_directory, config_settings=None):
    """The Python package's sources with this backend (the library is built from the whole
    repository, not from the sdist)."""
    base = f"{NAME}-{_version()}"
    sdist = f"{base}.tar.gz"
    with tarfile.open(pathlib.Path(sdist_directory) / sdist, "w:gz") as tar:
        for rel in ("pyproject.toml", "python/README.md"):
            if (ROOT / rel).exists():
                tar.add(ROOT / rel, f"{base}/{rel}")
        for folder in ("python/spmvc", "python/build_backend"):
            for path in sorted((ROOT / folder).rglob("*.py")):
                tar.add(path, f"{base}/{path.relative_to(ROOT).as_posix()}")
    return sdist
