"""The PEP 517 build backend of the rmm_rs package (pyproject.toml names it).

The package is pure Python (``rmm_rs.py`` and ``rmm_rs_dask.py``, which is ``rmm_rs.dask``), so
the backend writes the wheel itself: pip then needs no build dependency, and installs it with
no network (GPU machines often have none).

With the config setting ``bundle-library=PATH`` (``pip install -C bundle-library=PATH``), or
``$RMM_RS_BUNDLE_LIBRARY``, the wheel also ships that ``librmm.so`` beside the module, where
``rmm_rs`` looks first after ``$RMM_RS_LIBRARY``; the wheel is then tagged for this platform.

With ``torch-backend=1`` (``pip install --no-build-isolation -C torch-backend=1``, so that the
build sees the installed PyTorch), or ``$RMM_RS_BUILD_TORCH_BACKEND=1``, the wheel also ships
the PyTorch backend built against that PyTorch (``rmm_rs.build_torch_backend``); without it,
``rmm_rs.use_for_torch()`` builds it on first use. The backend's source ships either way.
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
_MODULE = "rmm_rs.py"
# rmm_rs.dask: a module of its own beside rmm_rs.py (rmm_rs imports it on first access).
_DASK_MODULE = "rmm_rs_dask.py"
_TORCH_SOURCE = "rmm_rs_torch.cpp"


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
    import importlib.util
    import tempfile

    spec = importlib.util.spec_from_file_location("_rmm_rs_for_build", os.path.join(_HERE, _MODULE))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with tempfile.TemporaryDirectory() as folder:
        path = module.build_torch_backend(folder)
        with open(path, "rb") as f:
            return os.path.basename(path), f.read()


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
        for name in (_MODULE, _DASK_MODULE, _TORCH_SOURCE):
            with open(os.path.join(_HERE, name), "rb") as f:
                files.append((name, f.read()))
    if backend:
        files.append(backend)
    if library:
        with open(library, "rb") as f:
            files.append(("librmm.so", f.read()))
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
        for file in ("pyproject.toml", os.path.basename(__file__), _MODULE, _DASK_MODULE, _TORCH_SOURCE):
            sdist.add(os.path.join(_HERE, file), arcname="%s/%s" % (stem, file))
        info = tarfile.TarInfo("%s/PKG-INFO" % stem)
        data = _metadata(project)
        info.size = len(data)
        sdist.addfile(info, io.BytesIO(data))
    return name
