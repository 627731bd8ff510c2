"""rmm_rs.frameworks.torch: rmm-rs as PyTorch's CUDA allocator (:func:`use_for_torch`, the
backend ``rmm_rs_torch.cpp`` built against the installed PyTorch by :func:`build_torch_backend`),
and PyTorch's memory history as an RMM log (:func:`write_torch_history_log`). Importing it does
not import PyTorch; RAPIDS' name, ``rmm_rs.allocators.torch.rmm_torch_allocator``, is over it."""

from __future__ import annotations

import ctypes
import os
import sys
from typing import Any, Dict, List, Optional, Union

from .. import _core
from .._bindings import _lock, library_path

__all__ = ["use_for_torch", "build_torch_backend", "write_torch_history_log", "TORCH_DEFAULT_SPEC"]

TORCH_DEFAULT_SPEC = _core.TORCH_DEFAULT_SPEC

_torch_allocator: Any = None

# The PyTorch backend's source: in the installed package's folder (the wheel ships it there), or
# in the repository beside the package (python/rmm_rs_torch.cpp). Built against the installed
# PyTorch into a library whose name carries PyTorch's version, in the package's folder.
_TORCH_BACKEND_SOURCE = "rmm_rs_torch.cpp"
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _torch_backend_source() -> str:
    for folder in (_PACKAGE, os.path.dirname(_PACKAGE)):
        path = os.path.join(folder, _TORCH_BACKEND_SOURCE)
        if os.path.isfile(path):
            return path
    return os.path.join(_PACKAGE, _TORCH_BACKEND_SOURCE)


def _torch_backend_cache() -> str:
    """Where the backend is built when the module's own folder is not writable."""
    return os.path.join(os.path.expanduser("~"), ".cache", "rmm_rs")


def _torch_backend_name(torch_version: str) -> str:
    return "rmm_rs_torch-%s.so" % "".join(c if c.isalnum() else "_" for c in torch_version)


def _torch_cuda_includes(torch: Any) -> List[str]:
    """Folders that hold cuda_runtime_api.h for building against `torch`: the CUDA toolkit
    PyTorch finds (CUDA_HOME), then the CUDA runtime wheels PyTorch depends on."""
    folders = []
    try:
        from torch.utils import cpp_extension

        if cpp_extension.CUDA_HOME:
            folders.append(os.path.join(cpp_extension.CUDA_HOME, "include"))
    except Exception:  # noqa: BLE001 - an unusable cpp_extension only removes one candidate
        pass
    for root in sys.path:
        nvidia = os.path.join(root, "nvidia")
        if os.path.isdir(nvidia):
            for sub in sorted(os.listdir(nvidia)):
                for candidate in (os.path.join(nvidia, sub, "include"), os.path.join(nvidia, sub, "cuda_runtime", "include")):
                    folders.append(candidate)
    return [f for f in folders if os.path.isfile(os.path.join(f, "cuda_runtime_api.h"))]


def build_torch_backend(directory: Optional[str] = None, compiler: Optional[str] = None) -> str:
    """Builds the PyTorch backend (``rmm_rs_torch.cpp``) against the installed PyTorch, as
    PyTorch's C++ extensions are built, into `directory` (None: in the package's folder when it is
    writable, else ``~/.cache/rmm_rs``), and returns the library's path. `compiler`: the C++
    compiler (None: ``$CXX``, else ``c++``). Needs PyTorch's headers (every CUDA wheel has them)
    and the CUDA runtime's (a CUDA toolkit or the nvidia-cuda-runtime wheel). Raises
    RuntimeError saying what is missing or what the compiler printed."""
    import subprocess

    import torch

    here = _PACKAGE
    source = _torch_backend_source()
    if not os.path.isfile(source):
        raise RuntimeError(f"the PyTorch backend's source {source} is missing")
    if torch.version.cuda is None:
        raise RuntimeError(f"PyTorch {torch.__version__} is not a CUDA build")
    if directory is None:
        directory = here if os.access(here, os.W_OK) else _torch_backend_cache()
    os.makedirs(directory, exist_ok=True)
    output = os.path.join(directory, _torch_backend_name(torch.__version__))
    torch_root = os.path.dirname(os.path.abspath(torch.__file__))
    includes = [os.path.join(torch_root, "include"), os.path.join(torch_root, "include", "torch", "csrc", "api", "include")]
    cuda = _torch_cuda_includes(torch)
    if not cuda:
        raise RuntimeError("no CUDA runtime headers (cuda_runtime_api.h): install the CUDA toolkit or set CUDA_HOME")
    library = os.path.join(torch_root, "lib")
    abi = int(getattr(torch._C, "_GLIBCXX_USE_CXX11_ABI", True))
    command = [compiler or os.environ.get("CXX", "c++"), "-std=c++17", "-O2", "-fPIC", "-shared",
               "-D_GLIBCXX_USE_CXX11_ABI=%d" % abi]
    for folder in includes + cuda[:1]:
        command += ["-isystem", folder]
    temporary = "%s.%d.tmp" % (output, os.getpid())
    command += [source, "-L" + library, "-lc10", "-lc10_cuda", "-ltorch_cuda", "-ldl",
                "-Wl,-rpath," + library, "-o", temporary]
    try:
        result = subprocess.run(command, capture_output=True, text=True)
    except OSError as error:
        raise RuntimeError(f"cannot run the C++ compiler {command[0]!r}: {error}") from error
    if result.returncode != 0:
        raise RuntimeError("building the PyTorch backend failed:\n" + " ".join(command) + "\n" + result.stderr[-4000:])
    os.replace(temporary, output)
    return output


def _torch_backend_library(torch: Any) -> str:
    """The backend library built for the installed PyTorch: the one pip installed beside this
    module, one built earlier in ``~/.cache/rmm_rs``, or one built now."""
    name = _torch_backend_name(torch.__version__)
    for folder in (_PACKAGE, _torch_backend_cache()):
        path = os.path.join(folder, name)
        if os.path.isfile(path) and os.path.getmtime(path) >= os.path.getmtime(_torch_backend_source()):
            return path
    return build_torch_backend()


def _install_torch_backend(torch: Any) -> None:
    path = _torch_backend_library(torch)
    backend = ctypes.CDLL(path)
    backend.rmm_rs_torch_install.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
    backend.rmm_rs_torch_install.restype = ctypes.c_int
    message = ctypes.create_string_buffer(1024)
    if backend.rmm_rs_torch_install(os.fsencode(library_path()), message, len(message)) != 0:
        raise RuntimeError(message.value.decode(errors="replace"))


def use_for_torch(*, apply_default: bool = True) -> Any:
    """Makes rmm-rs PyTorch's CUDA allocator. Each allocation comes from the device's rmm-rs
    resource, on PyTorch's current stream, and is freed in that stream's order.

    The allocator is rmm-rs's PyTorch backend (``rmm_rs_torch.cpp``), which implements
    PyTorch's own allocator interface: ``torch.cuda.memory_allocated()`` and the other
    statistics, ``cudnn.benchmark``, CUDA graphs and ``torch.cuda.MemPool``, memory snapshots,
    ``torch.OutOfMemoryError`` and CUDA IPC behave as under PyTorch's allocator
    (docs/src/torch.md lists what differs). It is built against the installed PyTorch when the
    package is installed with ``-C torch-backend=1``, else on first use into
    ``~/.cache/rmm_rs``. If it cannot be built (no C++ compiler, no CUDA headers), this warns
    why and falls back to ``CUDAPluggableAllocator(librmm.so, "rmmTorchAllocate",
    "rmmTorchDeallocate")``, which lacks those features. ``RMM_RS_TORCH_BACKEND=shim`` asks for
    that fallback.

    Must run before PyTorch initializes CUDA (before the first tensor on the GPU,
    ``torch.cuda.init()`` or ``torch.cuda.set_device()``, which every ``torch.distributed``
    script calls): afterwards PyTorch cannot swap its allocator and this raises RuntimeError.
    Without :func:`configure` first, ``$RMM_ALLOC_CONF`` applies (unset:
    :data:`TORCH_DEFAULT_SPEC`, the expandable resource with statistics on each device, or
    where the driver lacks the virtual-memory API, :data:`DEFAULT_SPEC`); with
    ``apply_default=False`` (what RAPIDS' ``rmm_torch_allocator`` does) nothing is configured
    here, and each device allocates from its current resource, as RAPIDS RMM's allocator does.
    Returns PyTorch's allocator object.
    """
    global _torch_allocator
    import torch

    with _lock:
        if _torch_allocator is not None:
            return _torch_allocator
        if torch.cuda.is_initialized():
            raise RuntimeError(
                "rmm_rs.use_for_torch() must be called before PyTorch initializes CUDA "
                "(before the first CUDA tensor, torch.cuda.init() or torch.cuda.set_device()); "
                "PyTorch's own caching allocator is already in use in this process"
            )
        if apply_default:
            _core._ensure_configured(TORCH_DEFAULT_SPEC)
        why = "RMM_RS_TORCH_BACKEND=shim" if os.environ.get("RMM_RS_TORCH_BACKEND") == "shim" else None
        if why is None:
            try:
                _install_torch_backend(torch)
                _torch_allocator = torch.cuda.memory._get_current_allocator()
                return _torch_allocator
            except Exception as error:  # noqa: BLE001 - any failure falls back, with its reason
                if torch.cuda.is_initialized():
                    raise RuntimeError(f"rmm_rs.use_for_torch(): PyTorch refused to change its allocator ({error})") from error
                lines = str(error).strip().splitlines()
                import warnings

                warnings.warn(
                    "rmm_rs.use_for_torch(): the PyTorch backend is not available (%s); using "
                    "CUDAPluggableAllocator instead, which lacks memory statistics, "
                    "cudnn.benchmark, CUDA graphs, MemPool, snapshots, a typed out-of-memory error "
                    "and IPC" % (lines[-1] if lines else type(error).__name__),
                    RuntimeWarning, stacklevel=2)
        allocator = torch.cuda.memory.CUDAPluggableAllocator(library_path(), "rmmTorchAllocate", "rmmTorchDeallocate")
        try:
            torch.cuda.memory.change_current_allocator(allocator)
        except RuntimeError as error:
            raise RuntimeError(
                f"rmm_rs.use_for_torch(): PyTorch refused to change its allocator ({error}); "
                "call it before anything uses CUDA in PyTorch (torch.cuda.init(), "
                "torch.cuda.set_device(), the first CUDA tensor)"
            ) from error
        _torch_allocator = allocator
        return allocator


def write_torch_history_log(snapshot: Dict[str, Any], path: Union[str, "os.PathLike[str]"], device: int = 0) -> int:
    """Writes the allocation history of a PyTorch memory snapshot (``torch.cuda.memory._snapshot()``
    after ``torch.cuda.memory._record_memory_history()``) as an RMM log at `path`
    (``Thread,Time,Action,Pointer,Size,Stream``): ``alloc`` is ``allocate``, ``free_completed``
    is ``free``, ``oom`` is ``allocate failure``. ``rmm-replay report -o page.html LOG`` then
    draws rmm-rs's memory timeline from the same history that ``torch.cuda._memory_viz`` draws,
    and ``rmm-replay`` replays it against other stacks. Returns the number of events written."""
    import datetime

    traces = snapshot.get("device_traces") or []
    if device >= len(traces):
        raise ValueError(f"the snapshot has no history for device {device} ({len(traces)} devices)")
    actions = {"alloc": "allocate", "free_completed": "free", "oom": "allocate failure"}
    lines = ["Thread,Time,Action,Pointer,Size,Stream"]
    for entry in traces[device]:
        action = actions.get(entry.get("action"))
        if action is None:
            continue
        when = datetime.datetime.fromtimestamp(entry.get("time_us", 0) / 1e6).strftime("%H:%M:%S.%f")
        pointer = "(nil)" if action == "allocate failure" else "0x%x" % entry["addr"]
        lines.append("0,%s,%s,%s,%d,0x%x" % (when, action, pointer, entry["size"], entry.get("stream", 0)))
    with open(os.fspath(path), "w", encoding="utf-8") as log:
        log.write("\n".join(lines) + "\n")
    return len(lines) - 1
