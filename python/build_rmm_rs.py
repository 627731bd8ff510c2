"""The PEP 517 build backend of the rmm_rs package (pyproject.toml names it).

The package is pure Python (the folder ``rmm_rs/``, and ``librmm_cffi.py``, the name of RMM's
2019 interface, ``rmm_rs.legacy``), so the backend writes the wheel itself: pip then needs no
build dependency, and installs it with no network (GPU machines often have none).

With the config setting ``bundle-library=PATH`` (``pip install -C bundle-library=PATH``), or
``$RMM_RS_BUNDLE_LIBRARY``, the wheel also ships that ``librmm.so`` in the package's folder,
where ``rmm_rs`` looks first after ``$RMM_RS_LIBRARY``; the wheel is then tagged for this
platform.

With ``torch-backend=1`` (``pip install --no-build-isolation -C torch-backend=1``, so that the
build sees the installed PyTorch), or ``$RMM_RS_BUILD_TORCH_BACKEND=1``, the wheel also ships
the PyTorch backend built against that PyTorch (``rmm_rs.build_torch_backend``); without it,
``rmm_rs.use_for_torch()`` builds it on first use. The backend's source ships either way.

With ``as-rmm=1`` (``pip install -C as-rmm=1 python/``) the wheel also installs ``rmm``, the
name RAPIDS RMM's package is imported by, as rmm_rs (python/as_rmm; docs/src/python.md).
"""

import base64
import hashlib
import io
import os
import re
import sysconfig
import tarfile
import zipfile

_HERE = os.path.dirname(os.path.abspath(__file__))
_PACKAGE = "rmm_rs"
# Top-level modules beside the package.
_MODULES = ("librmm_cffi.py",)
# The PyTorch backend's source: python/rmm_rs_torch.cpp here, rmm_rs/rmm_rs_torch.cpp installed.
_TORCH_SOURCE = "rmm_rs_torch.cpp"


def _as_rmm(config_settings):
    """With ``-C as-rmm=1`` (or ``$RMM_RS_AS_RMM=1``) the wheel also installs the package
    ``rmm`` (python/as_rmm/rmm), which makes ``import rmm`` rmm_rs: for code written for RAPIDS
    RMM, on an environment without RAPIDS' rmm."""
    wanted = (config_settings or {}).get("as-rmm") or os.environ.get("RMM_RS_AS_RMM")
    return wanted in ("1", "true", "yes")


def _package_files():
    """(path in the wheel, path here) of every file of the package and the modules beside it."""
    files = []
    root = os.path.join(_HERE, _PACKAGE)
    for folder, subfolders, names in os.walk(root):
        subfolders[:] = sorted(d for d in subfolders if d != "__pycache__")
        for name in sorted(names):
            if name.endswith(".py") or name == "py.typed":
                path = os.path.join(folder, name)
                files.append((os.path.relpath(path, _HERE).replace(os.sep, "/"), path))
    files += [(name, os.path.join(_HERE, name)) for name in _MODULES]
    files.append(("%s/%s" % (_PACKAGE, _TORCH_SOURCE), os.path.join(_HERE, _TORCH_SOURCE)))
    return files


def _project():
    with open(os.path.join(_HERE, "pyproject.toml"), encoding="utf-8") as f:
        text = f.read()
    try:
        import tomllib
    except ImportError:  # Python < 3.11: the [project] table's plain string fields
        table = text.split("[project]", 1)[1].split("\n[", 1)[0]
        fields = dict(re.findall(r'^([\w-]+)\s*=\s*"([^"]*)"', table, re.M))
        licence = re.search(r'^license\s*=\s*\{\s*text\s*=\s*"([^"]*)"', table, re.M)
        fields["license"] = {"text": licence.group(1)} if licence else {}
        return fields
    return tomllib.loads(text)["project"]


def _names():
    project = _project()
    distribution = re.sub(r"[-_.]+", "_", project["name"]).lower()
    return project, distribution, "%s-%s" % (distribution, project["version"])


def _metadata(project):
    lines = [
        "Metadata-Version: 2.1",
        "Name: " + project["name"],
        "Version: " + project["version"],
        "Summary: " + project.get("description", ""),
        "License: " + project.get("license", {}).get("text", ""),
        "Requires-Python: " + project.get("requires-python", ">=3"),
    ]
    return ("\n".join(lines) + "\n").encode()


def _bundled_library(config_settings):
    path = (config_settings or {}).get("bundle-library") or os.environ.get("RMM_RS_BUNDLE_LIBRARY")
    if not path:
        return None
    if not os.path.isfile(path):
        raise FileNotFoundError("bundle-library: no file at %r" % path)
    return path


def _torch_backend(config_settings):
    """With ``-C torch-backend=1`` (or ``$RMM_RS_BUILD_TORCH_BACKEND=1``): the PyTorch backend built
    now against the PyTorch this build sees (``pip install --no-build-isolation``), as
    (file name, bytes); else None, and rmm_rs builds it on first use."""
    wanted = (config_settings or {}).get("torch-backend") or os.environ.get("RMM_RS_BUILD_TORCH_BACKEND")
    if wanted not in ("1", "true", "yes", "build"):
        return None
    import importlib
    import sys
    import tempfile

    sys.path.insert(0, _HERE)
    try:
        module = importlib.import_module("rmm_rs.frameworks.torch")
    finally:
        sys.path.remove(_HERE)
    with tempfile.TemporaryDirectory() as folder:
        path = module.build_torch_backend(folder)
        with open(path, "rb") as f:
            return os.path.basename(path), f.read()


def _git_commit():
    """The commit the package is built from (``rmm_rs.__git_commit__``), or None outside a git
    work tree."""
    import subprocess

    try:
        done = subprocess.run(["git", "rev-parse", "HEAD"], cwd=_HERE, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    commit = done.stdout.strip()
    return commit if done.returncode == 0 and re.fullmatch(r"[0-9a-f]{40}", commit) else None


def _record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d" % (name, digest, len(data))


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def _write_wheel(wheel_directory, config_settings, editable):
    project, distribution, stem = _names()
    library = None if editable else _bundled_library(config_settings)
    backend = None if editable else _torch_backend(config_settings)
    native = library or backend
    tag = "py3-none-" + re.sub(r"[-.]", "_", sysconfig.get_platform()) if native else "py3-none-any"
    files = []
    if editable:  # a .pth that puts this folder on sys.path
        files.append(("%s.pth" % distribution, (_HERE + "\n").encode()))
    else:
        for name, path in _package_files():
            with open(path, "rb") as f:
                files.append((name, f.read()))
        if _as_rmm(config_settings):
            with open(os.path.join(_HERE, "as_rmm", "rmm", "__init__.py"), "rb") as f:
                files.append(("rmm/__init__.py", f.read()))
        commit = _git_commit()
        if commit:  # read by rmm_rs/_version.py
            files.append(("%s/GIT_COMMIT" % _PACKAGE, (commit + "\n").encode()))
    if backend:
        files.append(("%s/%s" % (_PACKAGE, backend[0]), backend[1]))
    if library:
        with open(library, "rb") as f:
            files.append(("%s/librmm.so" % _PACKAGE, f.read()))
    info = "%s.dist-info" % stem
    files.append((info + "/METADATA", _metadata(project)))
    wheel = "Wheel-Version: 1.0\nGenerator: build_rmm_rs\nRoot-Is-Purelib: %s\nTag: %s\n"
    files.append((info + "/WHEEL", (wheel % ("false" if native else "true", tag)).encode()))
    record = [_record_line(name, data) for name, data in files] + [info + "/RECORD,,"]
    files.append((info + "/RECORD", ("\n".join(record) + "\n").encode()))

    name = "%s-%s.whl" % (stem, tag)
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w", zipfile.ZIP_DEFLATED) as wheel_file:
        for path, data in files:
            entry = zipfile.ZipInfo(path, date_time=(1980, 1, 1, 0, 0, 0))
            # The bundled library must stay executable once unpacked.
            entry.external_attr = (0o755 if path.endswith(".so") else 0o644) << 16
            wheel_file.writestr(entry, data, zipfile.ZIP_DEFLATED)
    return name


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _write_wheel(wheel_directory, config_settings, editable=False)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    return _write_wheel(wheel_directory, config_settings, editable=True)


def build_sdist(sdist_directory, config_settings=None):
    project, _, stem = _names()
    name = stem + ".tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz") as sdist:
        for file in ("pyproject.toml", os.path.basename(__file__), _TORCH_SOURCE):
            sdist.add(os.path.join(_HERE, file), arcname="%s/%s" % (stem, file))
        for member, path in _package_files():
            if not member.endswith(_TORCH_SOURCE):
                sdist.add(path, arcname="%s/%s" % (stem, member))
        info = tarfile.TarInfo("%s/PKG-INFO" % stem)
        data = _metadata(project)
        info.size = len(data)
        sdist.addfile(info, io.BytesIO(data))
    return name
