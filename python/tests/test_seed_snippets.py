"""Every Python (and shell) snippet of the seeds, run as RAPIDS RMM's users run it, with
``import rmm_rs as rmm`` in place of ``import rmm`` (``from rmm.X`` becomes ``from rmm_rs.X``;
``librmm_cffi`` stays as it is): seed 001 (RMM's Python user guide), 002 (the 2019 README,
``librmm_cffi``) and 003 (the programming guide's Python tabs). Snippets are kept in
seed_snippets.txt (seed_snippets.py); each runs in a fresh Python in a folder of its own, with
a few lines of this file before it (what the seed's text takes as given: cuDF's kernels for 002)
and after it (checks that it did what the guide says). The doctest-style blocks of 001 run as
doctests: their printed values are compared, except addresses.

Snippets that need CuPy, Numba, PyTorch, NumPy or cuda-python are skipped, saying so, where
the module is missing, and those of the frameworks also on simulated devices: they run on the
GPU machine (scripts/gpu-python-api.sh). There, RMM_RS_REQUIRE="cupy numba torch numpy" turns
the skip of a missing module it names into a failure.

    python3 python/tests/test_seed_snippets.py [-v]    (or through python/test_rmm_rs.py)
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
import unittest
from typing import Dict, List, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _support import ON_GPU, have, run_child  # noqa: E402

import seed_snippets  # noqa: E402

SNIPPETS = seed_snippets.load()
SIM_DEVICES = "1:16GiB"  # the guides' pools (1 GiB up to 4 GiB) fit


def as_rmm_rs(code: str) -> str:
    """The snippet with rmm_rs in place of rmm, as a user of rmm-rs writes it."""
    code = re.sub(r"^(\s*(?:>>> )?)import rmm$", r"\1import rmm_rs as rmm", code, flags=re.M)
    code = re.sub(r"\bfrom rmm(\.| import)", r"from rmm_rs\1", code)
    return code.replace("NUMBA_CUDA_MEMORY_MANAGER=rmm.allocators.numba", "NUMBA_CUDA_MEMORY_MANAGER=rmm_rs.allocators.numba")


def key(snippet: seed_snippets.Snippet) -> str:
    return f"{snippet.seed[:3]}:{snippet.line}"


# --- what the seeds take as given, and what each snippet must have done --------------------------

# cuDF's groupby and fillna (002's examples) around the snippets: data, kernels and a check.
_GROUPBY_BEFORE = """
import numpy as np
from numba import cuda
from librmm_cffi import librmm as rmm

@cuda.jit
def group_mean(data, begins, out):
    i = cuda.grid(1)
    if i < out.size:
        end = begins[i + 1] if i + 1 < begins.size else data.size
        total = 0.0
        for j in range(begins[i], end):
            total += data[j]
        out[i] = total / (end - begins[i])

class _Series:
    def __init__(self, values):
        self.values = values
    def to_gpu_array(self):
        return rmm.to_device(self.values)

sr = _Series(np.array([1.0, 3.0, 10.0, 20.0, 30.0]))
begin = [0, 2]
size = len(begin)
values = {}
newk = "mean"
"""
_GROUPBY_AFTER = """
got = values[newk].copy_to_host()
assert list(got) == [2.0, 20.0], got
assert cuda.current_context().get_memory_info() is not None
print("group means", list(got))
"""
_FILLNA_BEFORE = """
import numpy as np
from numba import cuda
from librmm_cffi import librmm as rmm

@cuda.jit
def gpu_fill_masked(value, mask, out):
    i = cuda.grid(1)
    if i < out.size and not mask[i]:
        out[i] = value
"""
_FILLNA_AFTER = """
data = rmm.to_device(np.array([1.0, 2.0, 3.0, 4.0]))
mask = rmm.to_device(np.array([True, False, True, False]))
filled = fillna(data, mask, -1.0)
assert list(filled.copy_to_host()) == [1.0, -1.0, 3.0, -1.0], filled.copy_to_host()
print("filled", list(filled.copy_to_host()))
"""
_CHAIN = """
import rmm_rs
def chain():
    names, node = [], rmm_rs.Resource.of_device().snapshot()
    while isinstance(node, dict):
        names.append(node["resource"])
        node = node.get("upstream")
    return "/".join(names)
"""

BEFORE: Dict[str, str] = {
    "002:112": _GROUPBY_BEFORE,
    "002:125": _FILLNA_BEFORE,
    # cuDF's old internals, which 002's functions call: librmm's finalize and initialize.
    "002:165": """
import types
from librmm_cffi import librmm
def _finalize():
    if librmm.is_initialized():
        librmm.finalize()
    return 0
pygdf = types.SimpleNamespace(_gdf=types.SimpleNamespace(rmm_finalize=_finalize, rmm_initialize=librmm.initialize))
""",
}

AFTER: Dict[str, str] = {
    "001:87": "assert isinstance(rmm.mr.get_current_device_resource(), rmm.mr.ManagedMemoryResource)",
    "001:104": "assert rmm.mr.get_current_device_resource() is pool and pool.pool_size() >= 2**30",
    "001:116": "assert rmm.mr.get_current_device_resource() is pool and pool.pool_size() >= 2**30\n"
               "assert isinstance(pool.get_upstream(), rmm.mr.ManagedMemoryResource)",
    "001:151": "import cupy\na = cupy.arange(10)\nassert type(a.data.mem).__name__ == 'UnownedMemory', type(a.data.mem)\n"
               "print('cupy sum', int(a.sum()))",
    "001:172": "import numpy as np\nd = cuda.to_device(np.arange(10))\n"
               "print('manager', type(cuda.current_context().memory_manager).__name__, int(d.copy_to_host().sum()))",
    "001:185": "t = torch.arange(10, device='cuda')\nprint('torch sum', int(t.sum()), torch.cuda.get_allocator_backend())",
    "002:112": _GROUPBY_AFTER,
    "002:125": _FILLNA_AFTER,
    "002:148": _CHAIN + """
from librmm_cffi import librmm
if librmm.is_initialized():
    librmm.finalize()
librmm.initialize()
assert librmm.is_initialized()
assert chain() == "pool/cuda", chain()
import rmm_rs
ptr = rmm_rs.alloc(1000)
rmm_rs.free(ptr)
assert "Alloc" in librmm.csv_log() or librmm.csv_log().count("\\n") >= 2, librmm.csv_log()
librmm.finalize()
print("legacy stack", "pool/cuda")
""",
    "002:165": _CHAIN + """
initialize_rmm_pool()
assert chain() == "pool/cuda", chain()
initialize_rmm_no_pool()
assert chain() == "cuda", chain()
finalize_rmm()
print("pool and no pool")
""",
    "003:29": "assert isinstance(rmm.mr.get_current_device_resource(), rmm.mr.CudaAsyncMemoryResource)",
    "003:63": "assert rmm.mr.get_current_device_resource() is async_mr\nassert isinstance(mr, rmm.mr.DeviceMemoryResource)",
    "003:108": "assert pool_mr.pool_size() >= 2**30\nassert isinstance(managed_mr, rmm.mr.ManagedMemoryResource)",
    "003:146": "assert rmm.mr.get_per_device_resource(0) is async_mr",
    "003:185": "assert buffer.size == 2048 and buffer2.size == 2048 and buffer2.ptr != buffer.ptr and ptr and size == 1024",
    "003:281": "import rmm_rs\nassert stats.current_bytes == 1024 and rmm_rs.statistics().current_bytes == 1024",
    "003:314": """
log_mr.flush()
rows = open(log_mr.get_file_name()).read().splitlines()
assert rows[0] == "Thread,Time,Action,Pointer,Size,Stream", rows
assert any(",allocate," in row and ",1024," in row for row in rows[1:]), rows
print("logged to", log_mr.get_file_name().rsplit("/", 1)[-1])
""",
    "003:352": """
buffer = rmm.DeviceBuffer(size=4096)
assert stats_mr.allocation_counts.current_bytes == 4096
del buffer
log_mr.flush()
assert ",free," in open(log_mr.get_file_name()).read()
assert pool_mr.pool_size() >= 2**30
""",
    "003:405": "assert type(array.data.mem).__name__ == 'UnownedMemory', type(array.data.mem)  # not CuPy's pool\n"
               "print('cupy zeros', float(array.sum()))",
    "003:423": "import numpy as np\nd = cuda.device_array(100)\n"
               "print('manager', type(cuda.current_context().memory_manager).__name__, d.size)",
    "003:444": "print('torch zeros', float(tensor.sum()), torch.cuda.get_allocator_backend())",
    "003:492": "assert buffer.size == 1024\nassert len(resources) == num_devices",
}

# Printed lines a snippet must show (besides its checks above).
PRINTS: Dict[str, str] = {
    "003:29": "Allocated 1024 bytes at 0x",
    "003:281": "Current bytes: 1024",
    "001:172": "manager RMMNumbaManager",
    "003:423": "manager RMMNumbaManager",
}

# The shell snippets (NUMBA_CUDA_MEMORY_MANAGER=rmm.allocators.numba python ...): the program run
# under the variable they set.
_NUMBA_ENV_PROGRAM = """
import numpy as np
from numba import cuda
d = cuda.to_device(np.arange(10))
print("manager", type(cuda.current_context().memory_manager).__name__, int(d.copy_to_host().sum()))
"""


def needs(snippet: seed_snippets.Snippet) -> List[Tuple[str, str, bool]]:
    """(module, what it is, whether it needs the real GPU too) the snippet and its checks need."""
    code = snippet.code + BEFORE.get(key(snippet), "") + AFTER.get(key(snippet), "")
    found = []
    if "cupy" in code:
        found.append(("cupy", "CuPy", True))
    if "numba" in code or "NUMBA" in code:
        found.append(("numba", "Numba (numba-cuda)", True))
    if "torch" in code:
        found.append(("torch", "PyTorch", True))
    if re.search(r"\bnp\.|numpy", code):
        found.append(("numpy", "NumPy", False))
    if "from cuda import cuda" in code:
        # cuda-python 13 keeps the `cuda` namespace but moved `cuda.cuda` to cuda.bindings.driver.
        found.append(("cuda.cuda", "cuda-python's cuda.cuda (cuda-python 12)", False))
    return found


def _doctest_session(snippet: seed_snippets.Snippet) -> List[seed_snippets.Snippet]:
    """A doctest-style block with the blocks before it that it continues (001's blocks share
    their names until one starts again with an import)."""
    index = SNIPPETS.index(snippet)
    session = [snippet]
    while not re.match(r">>> (import|from) ", session[0].code) and index > 0:
        index -= 1
        earlier = SNIPPETS[index]
        if earlier.seed != snippet.seed or not earlier.code.startswith(">>>"):
            break
        session.insert(0, earlier)
    return session


_DOCTEST_RUNNER = r"""
import doctest, io, contextlib, re, sys
blocks = {blocks!r}
namespace = {{"__name__": "__main__"}}
for block in blocks:
    for example in doctest.DocTestParser().get_examples(block):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(example.source, "<seed>", "single"), namespace)
        got, want = out.getvalue().strip(), example.want.strip()
        if want and example.source.strip().endswith(".ptr"):
            assert re.fullmatch(r"\d+", got) and int(got) > 0, (example.source, got)
        elif want:
            assert got == want, (example.source, got, want)
        print(">>>", example.source.strip(), "->", got or "(nothing)")
"""


class SeedSnippetTest(unittest.TestCase):
    """One test per snippet (test_<seed>_line<N>_<section>)."""

    def run_snippet(self, snippet: seed_snippets.Snippet) -> None:
        required = os.environ.get("RMM_RS_REQUIRE", "").split()
        for module, what, gpu in needs(snippet):
            if not have(module) and module in required:
                self.fail(f"needs {what}, which is not installed (RMM_RS_REQUIRE names it)")
            if not have(module):
                self.skipTest(f"needs {what}, which is not installed here: it runs on the GPU machine "
                              "(scripts/gpu-python-api.sh)")
            if gpu and not ON_GPU:
                self.skipTest(f"needs {what} on a real GPU: it runs on the GPU machine (scripts/gpu-python-api.sh)")
        env = {} if ON_GPU else {"RMM_SIM_DEVICES": SIM_DEVICES}
        k = key(snippet)
        with tempfile.TemporaryDirectory() as folder:
            if snippet.lang == "bash":
                assignment = re.search(r"(\w+)=(\S+) python", as_rmm_rs(snippet.code))
                self.assertIsNotNone(assignment, snippet.code)
                env[assignment.group(1)] = assignment.group(2)
                done = run_child(_NUMBA_ENV_PROGRAM, env=env, cwd=folder, timeout=300)
                self.assertIn("manager RMMNumbaManager", done.stdout)
                return
            if snippet.code.startswith(">>>"):
                blocks = [as_rmm_rs(s.code) for s in _doctest_session(snippet)]
                program = _DOCTEST_RUNNER.format(blocks=blocks)
                if k in AFTER:
                    program += f"\nexec({AFTER[k]!r}, namespace)\n"
            else:
                program = BEFORE.get(k, "") + "\n" + as_rmm_rs(snippet.code) + "\n" + AFTER.get(k, "")
            done = run_child(program, env=env, cwd=folder, timeout=300)
        if k in PRINTS:
            self.assertIn(PRINTS[k], done.stdout)


def _make_test(snippet: seed_snippets.Snippet):
    def test(self: SeedSnippetTest) -> None:
        self.run_snippet(snippet)

    test.__doc__ = f"{snippet.seed} line {snippet.line} ({snippet.section}, {snippet.lang})"
    return test


for _snippet in SNIPPETS:
    setattr(SeedSnippetTest, "test_" + _snippet.name, _make_test(_snippet))


class SeedSnippetFileTest(unittest.TestCase):
    def test_every_snippet_is_kept_as_the_seeds_have_it(self):
        found = seed_snippets.from_seeds()
        if found is None:
            self.skipTest("RAPIDS RMM's guides that python/tests/seed_snippets.txt was copied from are not on this "
                          f"machine (looked in {os.path.normpath(seed_snippets.SEEDS)}): the copy is not compared "
                          "with them; every snippet still runs")
        self.assertEqual(seed_snippets.render(found), seed_snippets.render(SNIPPETS),
                         "python/tests/seed_snippets.txt differs from the seeds: run python3 python/tests/seed_snippets.py --write")

    def test_every_snippet_has_a_check_or_a_doctest(self):
        unchecked = [key(s) for s in SNIPPETS if s.lang == "python" and not s.code.startswith(">>>")
                     and key(s) not in AFTER]
        self.assertEqual(unchecked, [])
        self.assertEqual(len(SNIPPETS), 28)


if __name__ == "__main__":
    unittest.main()
