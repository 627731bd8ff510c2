"""Tests of the rmm_rs package, python/rmm_rs/ (plain unittest, no pytest): this file's tests of
rmm_rs's own API, and those of python/tests/ (RAPIDS RMM's Python API, the seeds' snippets, the
legacy librmm_cffi), which it runs too.

    python3 python/test_rmm_rs.py            # simulated devices (RMM_SIM_DEVICES=1:1GiB),
                                             # unless RMM_SIM_DEVICES is set already
    RMM_RS_TEST_GPU=1 python3 python/test_rmm_rs.py   # the real GPU (scripts/gpu-frameworks.sh)
    python3 python/test_rmm_rs.py IpcTest    # some tests of this file only

The library is the one rmm_rs finds ($RMM_RS_LIBRARY, stage/lib/, target/release/, ...).
PyTorch, CuPy and Numba are optional: where one is installed and the devices are real, a
short check runs in a child process; where one is missing, its integration code runs
against a small stand-in module of that framework instead (the allocations are real rmm-rs
allocations, on simulated devices here).
"""

import contextlib
import ctypes
import gc
import importlib.util
import os
import subprocess
import sys
import tempfile
import textwrap
import types
import unittest
import warnings
import weakref
import zipfile
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.join(HERE, "tests")
sys.path.insert(0, TESTS)
from _support import ON_GPU  # noqa: E402  (sets the devices up: simulated unless on the GPU)

sys.path.insert(0, HERE)
import rmm_rs  # noqa: E402
import rmm_rs.frameworks.numba  # noqa: E402
import rmm_rs.frameworks.torch  # noqa: E402

MiB = 1 << 20


def have(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


HAVE_TORCH, HAVE_CUPY, HAVE_NUMBA = have("torch"), have("cupy"), have("numba")


def chain(snapshot):
    """The resource names of a snapshot, outermost first."""
    names = []
    while isinstance(snapshot, dict):
        names.append(snapshot["resource"])
        snapshot = snapshot.get("upstream")
    return names


def run_child(code: str, timeout: float = 120.0) -> str:
    """Runs `code` in a fresh Python (same environment, rmm_rs importable); returns stdout."""
    env = dict(os.environ)
    env["PYTHONPATH"] = HERE + os.pathsep + env.get("PYTHONPATH", "")
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True,
                          text=True, timeout=timeout)
    if done.returncode != 0:
        raise AssertionError(f"child failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return done.stdout


@contextlib.contextmanager
def fake_modules(modules):
    """Puts stand-in modules into sys.modules for the block, then restores what was there."""
    saved = {name: sys.modules.get(name) for name in modules}
    sys.modules.update(modules)
    try:
        yield
    finally:
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module


class LibraryTest(unittest.TestCase):
    def test_loads_and_reports_devices(self):
        path = rmm_rs.library_path()
        self.assertTrue(os.path.isfile(path), path)
        self.assertEqual(rmm_rs.is_simulated(), not ON_GPU)
        self.assertGreaterEqual(rmm_rs.device_count(), 1)
        self.assertGreaterEqual(rmm_rs.get_device(), 0)
        free_bytes, total = rmm_rs.memory_info()
        self.assertGreater(total, 0)
        self.assertLessEqual(free_bytes, total)

    def test_every_declared_function_has_a_signature(self):
        lib = rmm_rs.library()
        for name in rmm_rs._SIGNATURES:
            self.assertIsNotNone(getattr(lib, name).argtypes, name)

    def test_library_override(self):
        out = run_child("""
            import os
            os.environ["RMM_RS_LIBRARY"] = "/nonexistent/librmm.so"
            import rmm_rs
            try:
                rmm_rs.library()
            except OSError as error:
                print("OSError", "/nonexistent/librmm.so" in str(error))
        """)
        self.assertIn("OSError True", out)

    def test_stream_arguments(self):
        class CupyLike:
            ptr = 0x1234

        class TorchLike:
            cuda_stream = 0x5678

        class NumbaLike:
            handle = ctypes.c_void_p(0x9ABC)

        self.assertIsNone(rmm_rs._stream(None))
        self.assertIsNone(rmm_rs._stream(0))
        self.assertEqual(rmm_rs._stream(7), 7)
        self.assertEqual(rmm_rs._stream(CupyLike()), 0x1234)
        self.assertEqual(rmm_rs._stream(TorchLike()), 0x5678)
        self.assertEqual(rmm_rs._stream(NumbaLike()), 0x9ABC)

    def test_sizes(self):
        self.assertEqual(rmm_rs._size("4GiB", "x"), 4 << 30)
        self.assertEqual(rmm_rs._size("512 MiB", "x"), 512 * MiB)
        self.assertEqual(rmm_rs._size(12345, "x"), 12345)
        self.assertEqual(rmm_rs._size(None, "x"), 0)
        for bad in ("3 parsecs", "GiB", "-1", "1\0GiB"):
            with self.assertRaises(ValueError):
                rmm_rs._size(bad, "x")
        with self.assertRaises(ValueError):
            rmm_rs._size(-1, "x")

    def test_one_meaning_of_units(self):
        # SI units are powers of 1000 and binary units powers of 1024, in rmm_rs's own API
        # as in RAPIDS' parse_bytes and RMM_ALLOC_CONF: the library reads them all.
        from rmm_rs.pylibrmm.helper import parse_bytes

        for text, bytes_ in (("1GB", 10 ** 9), ("1GiB", 1 << 30), ("2 mb", 2 * 10 ** 6),
                             ("1.5KiB", 1536), ("2.01kb", 2010), ("1kB", 1000), ("7", 7)):
            self.assertEqual(rmm_rs._size(text, "x"), bytes_, text)
            self.assertEqual(parse_bytes(text), bytes_, text)
        with self.assertRaises(ValueError) as caught:
            rmm_rs._size("4G", "initial_pool_size")
        self.assertEqual(str(caught.exception), 'initial_pool_size: "4G" is not a size: 4G is '
                         'ambiguous: write 4GiB (4294967296 bytes) or 4GB (4000000000 bytes)')
        with self.assertRaises(ValueError) as caught:
            parse_bytes("4G")
        self.assertIn("Could not parse 4G as a byte specification", str(caught.exception))
        # A pool of "4MB" reserves 4,000,000 bytes, as RMM_ALLOC_CONF's pool:initial=4MB.
        pool = rmm_rs.Resource.pool(rmm_rs.Resource.cuda(), "4MB", "8MB")
        try:
            self.assertEqual(pool.pool_size(), 4 * 10 ** 6)
        finally:
            pool.close()

    def test_constants_are_rmm_hs(self):
        from rmm_rs import _bindings
        from rmm_rs.pylibrmm.logger import level_enum
        from rmm_rs.pylibrmm.stream import CudaStreamFlags

        self.assertEqual(_bindings.SIZE_MAX, (1 << (8 * ctypes.sizeof(ctypes.c_size_t))) - 1)
        self.assertEqual([level.value for level in level_enum],
                         [_bindings.LOG_LEVEL_TRACE, _bindings.LOG_LEVEL_DEBUG, _bindings.LOG_LEVEL_INFO,
                          _bindings.LOG_LEVEL_WARN, _bindings.LOG_LEVEL_ERROR,
                          _bindings.LOG_LEVEL_CRITICAL, _bindings.LOG_LEVEL_OFF])
        self.assertEqual((CudaStreamFlags.SYNC_DEFAULT, CudaStreamFlags.NON_BLOCKING),
                         (_bindings.STREAM_DEFAULT, _bindings.STREAM_NON_BLOCKING))
        self.assertEqual((rmm_rs.SLEEP_DISCARD, rmm_rs.SLEEP_KEEP), (_bindings.SLEEP_DISCARD, _bindings.SLEEP_KEEP))


class ConfigureTest(unittest.TestCase):
    def test_pool_stack_counts_allocations(self):
        tops = rmm_rs.configure("pool", initial_pool_size="16MiB", maximum_pool_size="64MiB")
        device = rmm_rs.get_device()
        self.assertEqual(list(tops), [device])
        with rmm_rs.Resource.of_device() as current:
            self.assertEqual(chain(current.snapshot()), ["statistics", "pool", "cuda"])
            self.assertEqual(current.device, device)
        self.assertEqual(rmm_rs.statistics(), rmm_rs.Statistics(0, 0, 0, 0, 0, 0))
        a = rmm_rs.alloc(1000)
        b = rmm_rs.alloc(3000)
        self.assertTrue(a and b)
        s = rmm_rs.statistics()
        self.assertEqual((s.current_bytes, s.current_count, s.total_bytes, s.total_count), (4000, 2, 4000, 2))
        rmm_rs.free(a)
        rmm_rs.free(b)
        s = rmm_rs.statistics(device)
        self.assertEqual((s.current_bytes, s.peak_bytes, s.total_bytes), (0, 4000, 4000))
        self.assertEqual((s.current_count, s.peak_count, s.total_count), (0, 2, 2))
        self.assertEqual(s.as_dict()["peak_bytes"], 4000)
        self.assertEqual(rmm_rs.alloc(0), 0)  # 0 bytes: NULL, success
        rmm_rs.free(0)

    def test_every_resource_kind(self):
        expected = {
            "pool": ["statistics", "pool", "cuda"],
            "arena": ["statistics", "arena", "pool", "cuda"],  # its global arena shows as a pool
            "binning": ["statistics", "binning", "pool", "cuda"],
            "cuda": ["statistics", "cuda"],
            "cuda_async": ["statistics", "cuda_async"],
            "managed": ["statistics", "managed"],
            "managed_pool": ["statistics", "pool", "managed"],
            "expandable": ["statistics", "expandable"],  # two parts: its snapshot's `small` and `large`
        }
        self.assertEqual(set(expected), set(rmm_rs.RESOURCES))
        stream = rmm_rs.stream_create()
        try:
            for kind, names in expected.items():
                with self.subTest(kind=kind):
                    initial = "8MiB" if kind in ("pool", "arena", "binning", "managed_pool") else None
                    rmm_rs.configure(kind, initial_pool_size=initial)
                    with rmm_rs.Resource.of_device() as current:
                        self.assertEqual(chain(current.snapshot()), names)
                    pointers = [rmm_rs.alloc(size, stream) for size in (100, 5000, 2 * MiB)]
                    self.assertEqual(rmm_rs.statistics().current_count, 3)
                    for ptr in pointers:
                        rmm_rs.free(ptr, stream)
                    rmm_rs.stream_synchronize(stream)
                    s = rmm_rs.statistics()
                    self.assertEqual((s.current_count, s.total_count, s.total_bytes), (0, 3, 100 + 5000 + 2 * MiB))
        finally:
            rmm_rs.stream_destroy(stream)

    def test_expandable_footprint_and_release_threshold(self):
        # Pages of the granularity, as on a small device (by default a page is 1/4096 of
        # the maximum, 20 MiB on an 80 GiB GPU).
        grows = rmm_rs.Resource.expandable(page_size="2MiB")
        releasing = rmm_rs.Resource.expandable(release_threshold="4MiB", page_size="2MiB")
        try:
            small = grows.allocate(MiB)
            large = grows.allocate(3 * MiB)
            self.assertEqual(large, small + MiB)  # in place, across the chunk's old end
            f = grows.footprint()
            self.assertEqual((f["reserved_bytes"], f["live_bytes"], f["fragmentation"]), (4 * MiB, 4 * MiB, 0.0))
            grows.deallocate(small, MiB)
            f = grows.footprint()
            self.assertEqual((f["live_bytes"], f["peak_live_bytes"]), (3 * MiB, 4 * MiB))
            self.assertAlmostEqual(f["fragmentation"], 0.25)
            grows.deallocate(large, 3 * MiB)
            blocks = [releasing.allocate(5 * MiB) for _ in range(4)]
            for block in blocks:
                releasing.deallocate(block, 5 * MiB)
            self.assertLessEqual(releasing.footprint()["reserved_bytes"], 4 * MiB)
            self.assertEqual(releasing.footprint()["peak_reserved_bytes"], 20 * MiB)
            with self.assertRaises(rmm_rs.RmmError) as refused:
                rmm_rs.Resource.expandable(page_size=3 * MiB)
            self.assertEqual(refused.exception.code, rmm_rs.ERROR_INVALID_ARGUMENT)
        finally:
            grows.close()
            releasing.close()

    def test_without_statistics(self):
        rmm_rs.configure("cuda", statistics=False)
        self.assertIsNone(rmm_rs.statistics())
        with self.assertRaises(LookupError):
            rmm_rs.push_statistics()

    def test_nested_statistics_scope(self):
        rmm_rs.configure("pool")
        outer = rmm_rs.alloc(100)
        rmm_rs.push_statistics()
        inner = rmm_rs.alloc(300)
        rmm_rs.free(inner)
        popped = rmm_rs.pop_statistics()
        self.assertEqual((popped.total_bytes, popped.total_count, popped.current_bytes), (300, 1, 0))
        self.assertEqual(rmm_rs.statistics().current_bytes, 100)
        rmm_rs.free(outer)

    def test_log(self):
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "rmm.csv")
            rmm_rs.configure("pool", log=path)
            stream = rmm_rs.stream_create()
            ptr = rmm_rs.alloc(4096, stream)
            rmm_rs.free(ptr, stream)
            rmm_rs.stream_destroy(stream)
            rmm_rs.flush_log()
            with open(path) as log:
                lines = log.read().splitlines()
            self.assertEqual(lines[0], "Thread,Time,Action,Pointer,Size,Stream")
            actions = [line.split(",") for line in lines[1:]]
            self.assertEqual([a[2] for a in actions], ["allocate", "free"])
            self.assertEqual({int(a[3], 16) for a in actions}, {ptr})
            self.assertEqual({int(a[5], 16) for a in actions}, {stream})
            self.assertEqual(rmm_rs.statistics().total_bytes, 4096)  # statistics below the log
            rmm_rs.configure("pool")  # closes the log's handle before the folder goes

    def test_alloc_with_nothing_configured_pools(self):
        # RMM_ALLOC_CONF unset: the library's default for a program that asks rmm-rs to manage
        # its memory and says nothing more (DEFAULT_SPEC, as the preload library gets it);
        # "cuda" turns pooling off.
        for conf, layers in ((None, "statistics/pool/cuda"), ("cuda", "cuda")):
            out = run_child(f"""
                import os
                os.environ.pop("RMM_ALLOC_CONF", None)
                if {conf!r} is not None:
                    os.environ["RMM_ALLOC_CONF"] = {conf!r}
                import rmm_rs
                ptr = rmm_rs.alloc(4096)
                names, node = [], rmm_rs.Resource.of_device(0).snapshot()
                while isinstance(node, dict):
                    names.append(node["resource"])
                    node = node.get("upstream")
                print("stack", "/".join(names), rmm_rs.DEFAULT_SPEC)
                rmm_rs.free(ptr)
            """)
            self.assertIn(f"stack {layers} statistics/pool", out)

    def test_alloc_before_configure_sets_up_from_the_environment(self):
        out = run_child("""
            import os
            os.environ["RMM_ALLOC_CONF"] = "resource:arena,stats:1"
            import rmm_rs
            ptr = rmm_rs.alloc(4096)
            print("allocated", ptr != 0, rmm_rs.statistics().current_bytes)
            rmm_rs.free(ptr)
            print("free memory", rmm_rs.memory_info()[0] > 0)
        """)
        self.assertIn("allocated True 4096", out)
        self.assertIn("free memory True", out)

    def test_framework_installs_pool_when_nothing_chose_a_stack(self):
        # The framework hooks' own setup, without a framework: RMM_ALLOC_CONF unset gives
        # DEFAULT_SPEC, or PyTorch's TORCH_DEFAULT_SPEC (the pool where that cannot
        # be made: here a page size the device refuses); set, it wins.
        cases = ((None, "", "statistics/pool/"), ("arena", "", "arena/"),
                 (None, "rmm_rs.TORCH_DEFAULT_SPEC", "statistics/expandable\n"),
                 ("arena", "rmm_rs.TORCH_DEFAULT_SPEC", "arena/"),
                 (None, "'expandable:page_size=3MiB'", "statistics/pool/"))
        for conf, default, layers in cases:
            out = run_child(f"""
                import os, warnings
                os.environ.pop("RMM_ALLOC_CONF", None)
                if {conf!r} is not None:
                    os.environ["RMM_ALLOC_CONF"] = {conf!r}
                import json, rmm_rs
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    rmm_rs._ensure_configured({default})
                print("warned", [str(w.message)[:60] for w in caught])
                ptr = rmm_rs.alloc(4096)
                names = []
                node = rmm_rs.Resource.of_device(0).snapshot()
                while isinstance(node, dict):
                    names.append(node["resource"])
                    node = node.get("upstream")
                print("stack", "/".join(names))
                rmm_rs.free(ptr)
            """)
            self.assertIn(f"stack {layers}", out)
            fell_back = "page_size=3MiB" in default
            self.assertEqual("cannot be used here" in out, fell_back, out)

    def test_reconfigure_keeps_old_memory_valid(self):
        rmm_rs.configure("pool")
        old = rmm_rs.alloc(1000)
        rmm_rs.configure("arena")
        new = rmm_rs.alloc(1000)
        rmm_rs.free(old)  # goes back to the replaced pool
        rmm_rs.free(new)
        s = rmm_rs.statistics()
        self.assertEqual((s.total_count, s.current_count), (1, 0))

    def test_all_devices(self):
        tops = rmm_rs.configure("pool", devices="all")
        self.assertEqual(sorted(tops), list(range(rmm_rs.device_count())))
        for device in tops:
            self.assertEqual(tops[device].device, device)
            self.assertIsNotNone(rmm_rs.statistics(device))

    def test_allocation_offset_inside_a_pool_chunk(self):
        rmm_rs.configure("pool", initial_pool_size="16MiB")
        first = rmm_rs.alloc(256)
        second = rmm_rs.alloc(10000)
        try:
            self.assertEqual(rmm_rs.allocation_offset(first), 0)  # a fresh pool's first block
            offset = rmm_rs.allocation_offset(second)
            self.assertGreater(offset, 0)
            self.assertEqual(offset, second - first)  # both in the one initial chunk
            self.assertEqual(rmm_rs.allocation_offset(second + 100), offset + 100)
        finally:
            rmm_rs.free(first)
            rmm_rs.free(second)

    def test_configure_from_string_after_configure_warns(self):
        rmm_rs.configure("arena")
        with self.assertWarns(RuntimeWarning):
            rmm_rs.configure_from_string("resource:pool")
        with rmm_rs.Resource.of_device() as current:
            self.assertEqual(chain(current.snapshot())[:2], ["statistics", "arena"])  # kept

    def test_configure_from_string(self):
        # rmmConfigure only affects devices with no resource yet: a fresh process.
        with tempfile.TemporaryDirectory() as folder:
            out = run_child(f"""
                import rmm_rs
                try:
                    rmm_rs.configure_from_string("resource:bogus")
                except rmm_rs.RmmError as error:
                    print("bad", error.code, "resource:bogus" in error.message)
                rmm_rs.configure_from_string("resource:pool,initial_pool_size:8MiB,log:{folder}/log.csv,report:1")
                with rmm_rs.Resource.of_device() as top:
                    print("chain", top.name)
                p = rmm_rs.alloc(1234)
                print("stats", rmm_rs.statistics().current_bytes)
                rmm_rs.free(p)
                s = rmm_rs.statistics()
                print("after", s.current_bytes, s.total_bytes, s.total_count)
                print("report", "rmm-rs report" in rmm_rs.report())
            """)
        self.assertIn("bad 2 True", out)
        self.assertIn("chain logging", out)  # statistics read from under the logging adaptor
        self.assertIn("stats 1234", out)
        self.assertIn("after 0 1234 1", out)
        self.assertIn("report True", out)


class TimelineReportTest(unittest.TestCase):
    @staticmethod
    def figures(html_path):
        """The figures the page embeds (its report-data element)."""
        import json
        with open(html_path) as page:
            text = page.read()
        start = text.index('id="report-data">') + len('id="report-data">')
        return text, json.loads(text[start:text.index("</script>", start)])

    def test_report_of_a_torch_history(self):
        # The shape torch.cuda.memory._snapshot() gives: the page's figures follow its events.
        start = 1_764_000_000_000_000
        trace = [
            {"action": "alloc", "addr": 0x7F0000000000, "size": 8 * MiB, "stream": 0, "time_us": start},
            {"action": "alloc", "addr": 0x7F0000800000, "size": 2 * MiB, "stream": 0, "time_us": start + 10},
            {"action": "free_requested", "addr": 0x7F0000800000, "size": 2 * MiB, "stream": 0, "time_us": start + 20},
            {"action": "free_completed", "addr": 0x7F0000800000, "size": 2 * MiB, "stream": 0, "time_us": start + 20},
            {"action": "oom", "addr": 0, "size": 1 << 50, "stream": 0, "time_us": start + 30},
            {"action": "alloc", "addr": 0x7F0000800000, "size": 1 * MiB, "stream": 0, "time_us": start + 40},
        ]
        replay = os.path.join(os.path.dirname(rmm_rs.library_path()), "rmm-replay")
        if not os.path.isfile(replay):
            self.skipTest(f"no rmm-replay beside {rmm_rs.library_path()}")
        with tempfile.TemporaryDirectory() as folder:
            log, page = os.path.join(folder, "torch.csv"), os.path.join(folder, "timeline.html")
            self.assertEqual(rmm_rs.write_torch_history_log({"device_traces": [trace]}, log), 5)
            with open(log) as f:
                lines = f.read().splitlines()
            self.assertEqual(lines[0], "Thread,Time,Action,Pointer,Size,Stream")
            self.assertEqual(lines[3].split(",")[2:5], ["free", "0x7f0000800000", str(2 * MiB)])
            self.assertEqual(lines[4].split(",")[2:4], ["allocate failure", "(nil)"])
            subprocess.run([replay, "report", "--skip-failures", "-o", page, log], check=True, capture_output=True)
            figures = self.figures(page)[1]["logs"][0]
            self.assertEqual(figures["peak"]["live_bytes"], 10 * MiB)
            self.assertEqual([a["size"] for a in figures["peak"]["largest"]], [8 * MiB, 2 * MiB])
        with self.assertRaises(ValueError):
            rmm_rs.write_torch_history_log({"device_traces": []}, os.devnull)

    def test_report_of_this_process(self):
        with tempfile.TemporaryDirectory() as folder:
            log, page = os.path.join(folder, "rmm.csv"), os.path.join(folder, "timeline.html")
            rmm_rs.configure("pool", log=log)
            big, middle = rmm_rs.alloc(8 * MiB), rmm_rs.alloc(2 * MiB)
            rmm_rs.free(middle)
            small = rmm_rs.alloc(1 * MiB)  # after the peak of 10 MiB
            self.assertEqual(rmm_rs.write_timeline_report(page), page)
            text, data = self.figures(page)
            figures = data["logs"][0]
            self.assertEqual(figures["log"], log)
            self.assertEqual(figures["events"], 4)
            self.assertEqual(figures["peak"]["live_bytes"], 10 * MiB)
            self.assertEqual([a["size"] for a in figures["peak"]["largest"]], [8 * MiB, 2 * MiB])
            self.assertGreaterEqual(figures["peak"]["reserved_bytes"], 10 * MiB)
            self.assertEqual(data["spec"], "pool")
            self.assertNotIn("https://", text)
            # Another stack to replay against; the live allocations are untouched.
            rmm_rs.write_timeline_report(page, spec="arena")
            self.assertEqual(self.figures(page)[1]["spec"], "arena")
            rmm_rs.free(big)
            rmm_rs.free(small)
            rmm_rs.configure("pool")  # closes the log's handle before the folder goes

    def test_report_needs_a_logging_adaptor_and_a_good_spec(self):
        rmm_rs.configure("pool")
        with tempfile.TemporaryDirectory() as folder:
            page = os.path.join(folder, "timeline.html")
            with self.assertRaises(rmm_rs.RmmError) as caught:
                rmm_rs.write_timeline_report(page)
            self.assertEqual(caught.exception.code, rmm_rs.ERROR_INVALID_ARGUMENT)
            self.assertIn("no logging adaptor", str(caught.exception))
            self.assertFalse(os.path.exists(page))
            rmm_rs.configure("pool", log=os.path.join(folder, "rmm.csv"))
            with self.assertRaises(rmm_rs.RmmError) as caught:
                rmm_rs.write_timeline_report(page, spec="pool:initial=lots")
            self.assertEqual(caught.exception.code, rmm_rs.ERROR_INVALID_ARGUMENT)
            self.assertIn("initial", str(caught.exception))
            rmm_rs.configure("pool")


class ResourceTest(unittest.TestCase):
    def test_explicit_stack(self):
        with rmm_rs.Resource.cuda() as cuda, \
                rmm_rs.Resource.pool(cuda, "4MiB", "8MiB") as pool, \
                rmm_rs.Resource.statistics_adaptor(pool) as stats:
            self.assertEqual((cuda.name, pool.name, stats.name), ("cuda", "pool", "statistics"))
            self.assertEqual(pool.pool_size(), 4 * MiB)
            ptr = stats.allocate(1024)
            self.assertEqual(stats.counts().current_bytes, 1024)
            self.assertEqual(pool.pool_free(), 4 * MiB - 1024)
            self.assertEqual(pool.release(), 0)  # its one chunk is in use
            with self.assertRaises(rmm_rs.RmmError) as caught:
                stats.deallocate(ptr, 2048)  # not the size allocated
            self.assertEqual(caught.exception.code, rmm_rs.ERROR_INVALID_ARGUMENT)
            stats.deallocate(ptr, 1024)
            self.assertEqual(pool.release(), 4 * MiB)
            self.assertEqual(pool.pool_size(), 0)
            with self.assertRaises(rmm_rs.RmmOutOfMemoryError):
                pool.allocate(16 * MiB)  # past the pool's maximum
        self.assertTrue(stats.closed)
        stats.close()  # idempotent
        with self.assertRaises(ValueError):
            stats.allocate(1)
        self.assertIn("closed", repr(stats))

    def test_release_device_memory_gives_back_every_resources_free_memory(self):
        with rmm_rs.Resource.cuda() as cuda, \
                rmm_rs.Resource.pool(cuda, "4MiB") as first, \
                rmm_rs.Resource.pool(cuda) as second:
            kept = first.allocate(1024)
            second.deallocate(second.allocate(3 * MiB), 3 * MiB)
            self.assertEqual(second.pool_size(), 4 * MiB)
            self.assertGreaterEqual(rmm_rs.release_device_memory(), 4 * MiB)
            self.assertEqual(second.pool_size(), 0)
            self.assertEqual(first.pool_size(), 4 * MiB)  # its one chunk is in use
            first.deallocate(kept, 1024)
            self.assertEqual(rmm_rs.release_device_memory(0), 4 * MiB)
            self.assertEqual(first.pool_size(), 0)
            with self.assertRaises(rmm_rs.RmmError) as caught:
                rmm_rs.release_device_memory(rmm_rs.device_count())
            self.assertEqual(caught.exception.code, rmm_rs.ERROR_INVALID_ARGUMENT)

    def test_snapshot_says_where_free_memory_is_held(self):
        with rmm_rs.Resource.cuda() as cuda, rmm_rs.Resource.pool(cuda, "4MiB") as pool:
            ptr = pool.allocate(1024)
            held_by = pool.snapshot()["held_by"]
            self.assertEqual([state["stream"] for state in held_by], ["default"])
            self.assertEqual(held_by[0]["held_bytes"], 4 * MiB)
            self.assertEqual(held_by[0]["used_bytes"], 1024)
            self.assertEqual(held_by[0]["free_bytes"], 4 * MiB - 1024)
            pool.deallocate(ptr, 1024)

    def test_driver_pool_and_system_resources(self):
        with rmm_rs.Resource.cuda_async("1MiB") as owner:
            pool = owner.pool_handle()
            self.assertNotEqual(pool, 0)
            with rmm_rs.Resource.cuda_async_view(pool) as view:
                self.assertEqual((view.name, view.pool_handle()), ("cuda_async_view", pool))
                view.deallocate(view.allocate(4096), 4096)
        with self.assertRaises(rmm_rs.RmmError) as caught:
            rmm_rs.Resource.cuda_async_view(0)
        self.assertEqual(caught.exception.code, rmm_rs.ERROR_INVALID_ARGUMENT)
        # Each of these is made or refused as not supported (simulated devices: the managed
        # and host pools and hw decompression of a CUDA 13 driver, no pageable memory access).
        makers = [
            ("cuda_async_managed", rmm_rs.Resource.cuda_async_managed),
            ("cuda_async_pinned_host", lambda: rmm_rs.Resource.cuda_async_pinned_host("1MiB")),
            ("cuda_async", lambda: rmm_rs.Resource.cuda_async(enable_hw_decompress=True)),
            ("system", rmm_rs.Resource.system),
            ("sam_headroom", lambda: rmm_rs.Resource.sam_headroom("64MiB")),
        ]
        made = []
        for name, make in makers:
            try:
                resource = make()
            except rmm_rs.RmmError as error:
                self.assertEqual(error.code, rmm_rs.ERROR_NOT_SUPPORTED, name)
                continue
            with resource:
                self.assertEqual(resource.name, name)
                resource.deallocate(resource.allocate(4096), 4096)
            made.append(name)
        if not ON_GPU:
            self.assertEqual(made, ["cuda_async_managed", "cuda_async_pinned_host", "cuda_async"])

    def test_adaptors(self):
        with rmm_rs.Resource.cuda() as cuda:
            with rmm_rs.Resource.limiting_adaptor(cuda, "1MiB") as limited:
                ptr = limited.allocate(1000)
                self.assertEqual(limited.allocated_bytes(), 1024)  # rounded up to 256
                with self.assertRaises(MemoryError):
                    limited.allocate(2 * MiB)
                limited.deallocate(ptr, 1000)
            with rmm_rs.Resource.tracking_adaptor(cuda) as tracking:
                ptr = tracking.allocate(512)
                self.assertIn("512", tracking.leak_report())
                tracking.deallocate(ptr, 512)
                self.assertEqual(tracking.leak_report(), "")
            with rmm_rs.Resource.binning(cuda, 8, 12) as binning:
                binning.add_bin(64 * 1024)
                ptr = binning.allocate(50000)
                rmm_rs.free(ptr)  # rmmFree returns it to whichever resource made it

    def test_from_spec(self):
        with rmm_rs.Resource.from_spec("statistics/limiting:limit=8MiB/pool:initial=4MiB,maximum=64MiB/cuda") as stack:
            self.assertEqual(chain(stack.snapshot()), ["statistics", "limiting", "pool", "cuda"])
            self.assertEqual((stack.name, stack.device), ("statistics", rmm_rs.get_device()))
            self.assertEqual(stack.pool_size(), 4 * MiB)
            ptr = stack.allocate(3 * MiB)
            self.assertEqual(stack.counts().current_bytes, 3 * MiB)
            with self.assertRaises(rmm_rs.RmmOutOfMemoryError):
                stack.allocate(6 * MiB)  # past the limit
            stack.deallocate(ptr, 3 * MiB)
            self.assertEqual(stack.counts().total_count, 1)
        last = rmm_rs.device_count() - 1
        with rmm_rs.Resource.from_spec("arena:size=2MiB/managed", device=last) as arena:
            self.assertEqual((arena.name, arena.device), ("arena", last))
            self.assertEqual(chain(arena.snapshot())[-1], "managed")
        bad = {
            "statistics/pool:inital=1GiB": 'at column 17 ("inital"): unknown key "inital" for pool',
            "pool:initial=lots": 'at column 14 ("lots"): pool: initial=lots is not a size',
            "cuda/pool": 'at column 6 ("pool"): cuda takes memory from the device itself',
            "report/pool": "report applies to the devices' default stacks",
        }
        for spec, says in bad.items():
            with self.subTest(spec=spec), self.assertRaises(rmm_rs.RmmError) as caught:
                rmm_rs.Resource.from_spec(spec)
            self.assertEqual(caught.exception.code, rmm_rs.ERROR_INVALID_ARGUMENT)
            self.assertIn(says, caught.exception.message)
        with self.assertRaises(rmm_rs.RmmError) as caught:
            rmm_rs.Resource.from_spec("pool", device=rmm_rs.device_count())
        self.assertIn("does not exist", caught.exception.message)

    def test_destroyed_handle(self):
        cuda = rmm_rs.Resource.cuda()
        handle = cuda.handle
        cuda.close()
        with self.assertRaises(rmm_rs.RmmError) as caught:
            rmm_rs.Resource(handle).close()
        self.assertEqual(caught.exception.code, rmm_rs.ERROR_INVALID_HANDLE)


class ErrorTest(unittest.TestCase):
    def setUp(self):
        rmm_rs.configure("pool", initial_pool_size="8MiB", maximum_pool_size="64MiB")

    def test_bad_free_and_double_free(self):
        with self.assertRaises(rmm_rs.RmmError) as caught:
            rmm_rs.free(0xDEAD0000)
        self.assertEqual(caught.exception.code, rmm_rs.ERROR_INVALID_ARGUMENT)
        self.assertEqual(caught.exception.name, "RMM_ERROR_INVALID_ARGUMENT")
        self.assertNotIsInstance(caught.exception, MemoryError)
        self.assertTrue(caught.exception.message)
        ptr = rmm_rs.alloc(100)
        rmm_rs.free(ptr)
        with self.assertRaises(rmm_rs.RmmError) as caught:
            rmm_rs.free(ptr)
        self.assertIn("already freed", str(caught.exception))

    def test_out_of_memory_is_a_memory_error(self):
        with self.assertRaises(MemoryError) as caught:
            rmm_rs.alloc(128 * MiB)  # past maximum_pool_size
        error = caught.exception
        self.assertIsInstance(error, rmm_rs.RmmOutOfMemoryError)
        self.assertIsInstance(error, rmm_rs.RmmError)
        self.assertEqual(error.code, rmm_rs.ERROR_OUT_OF_MEMORY)
        self.assertEqual(error.function, "rmmAlloc")
        self.assertIn("134217728", error.message)
        import pickle
        again = pickle.loads(pickle.dumps(error))
        self.assertIsInstance(again, rmm_rs.RmmOutOfMemoryError)
        self.assertEqual(str(again), str(error))

    def test_error_names(self):
        rmm_rs.library()
        self.assertEqual(rmm_rs.RmmError(rmm_rs.ERROR_IO).name, "RMM_ERROR_IO")
        self.assertEqual(rmm_rs.RmmError(rmm_rs.SUCCESS).name, "RMM_SUCCESS")
        self.assertEqual(rmm_rs.RmmError(1000).name, "RMM_ERROR_UNRECOGNIZED")
        # Without the library (not loaded, or not loadable) the module's constants name them.
        out = run_child("""
            import os
            os.environ["RMM_RS_LIBRARY"] = "/nonexistent/librmm.so"
            import rmm_rs
            print(rmm_rs.RmmError(rmm_rs.ERROR_OUT_OF_MEMORY).name, rmm_rs.RmmError(1000).name)
        """)
        self.assertEqual(out.split(), ["RMM_ERROR_OUT_OF_MEMORY", "rmmError_t(1000)"])

    def test_bad_arguments(self):
        with self.assertRaises(ValueError):
            rmm_rs.configure("bogus")
        with self.assertRaises(ValueError):
            rmm_rs.configure("pool", initial_pool_size="2GiB", maximum_pool_size="1GiB")
        with self.assertRaises(ValueError):
            rmm_rs.configure("pool", devices="some")
        with self.assertRaises(rmm_rs.RmmError) as caught:
            rmm_rs.set_device(99)
        self.assertEqual(caught.exception.code, rmm_rs.ERROR_INVALID_ARGUMENT)
        with self.assertRaises(rmm_rs.RmmError) as caught:
            rmm_rs.configure("pool", devices=[99])
        with rmm_rs.Resource.cuda() as cuda:
            with self.assertRaises(rmm_rs.RmmError) as caught:
                rmm_rs.Resource.limiting_adaptor(cuda, 0)
            self.assertEqual(caught.exception.code, rmm_rs.ERROR_INVALID_ARGUMENT)
            with self.assertRaises(rmm_rs.RmmError) as caught:
                rmm_rs.Resource.logging_adaptor(cuda, "/nonexistent-folder/log.csv")
            self.assertEqual(caught.exception.code, rmm_rs.ERROR_IO)
        with self.assertRaises(rmm_rs.RmmError) as caught:
            rmm_rs.allocation_offset(0)
        self.assertEqual(caught.exception.code, rmm_rs.ERROR_INVALID_ARGUMENT)
        # A failed configure() leaves the stack it replaced in place.
        self.assertEqual(chain(rmm_rs.Resource.of_device().snapshot())[:2], ["statistics", "pool"])


# --------------------------------------------------------------------------------------
# Frameworks: stand-ins where the package is missing
# --------------------------------------------------------------------------------------


def fake_torch(initialized=False):
    torch = types.ModuleType("torch")
    cuda = types.ModuleType("torch.cuda")
    memory = types.ModuleType("torch.cuda.memory")
    calls = []

    class _CUDAAllocator:
        def __init__(self, allocator):
            self._allocator = allocator

        def allocator(self):
            return self._allocator

    class CUDAPluggableAllocator(_CUDAAllocator):
        def __init__(self, path, alloc_fn_name, free_fn_name):
            super().__init__(("pluggable", path))
            self.args = (path, alloc_fn_name, free_fn_name)
            lib = ctypes.CDLL(path)  # as PyTorch does: dlopen + dlsym
            self.alloc = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_int, ctypes.c_void_p)(
                ctypes.cast(getattr(lib, alloc_fn_name), ctypes.c_void_p).value)
            self.free = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_int, ctypes.c_void_p)(
                ctypes.cast(getattr(lib, free_fn_name), ctypes.c_void_p).value)

    memory.CUDAPluggableAllocator = CUDAPluggableAllocator
    memory._CUDAAllocator = _CUDAAllocator
    # PyTorch's: torch._C._cuda_changeCurrentAllocator(allocator.allocator())
    memory.change_current_allocator = lambda allocator: calls.append(allocator.allocator())
    cuda.memory = memory
    cuda.is_initialized = lambda: initialized
    cuda.is_available = lambda: True
    torch.cuda = cuda
    return {"torch": torch, "torch.cuda": cuda, "torch.cuda.memory": memory}, calls


def fake_cupy(stream_ptr):
    cupy = types.ModuleType("cupy")
    cuda = types.ModuleType("cupy.cuda")
    memory = types.ModuleType("cupy.cuda.memory")
    runtime = types.ModuleType("cupy.cuda.runtime")
    state = {"allocator": None}

    class Stream:
        def __init__(self, ptr):
            self.ptr = ptr

    current = Stream(stream_ptr)

    class UnownedMemory:
        def __init__(self, ptr, size, owner, device_id=-1):
            self.ptr, self.size, self._owner, self.device_id = ptr, size, owner, device_id

    class MemoryPointer:
        def __init__(self, mem, offset):
            self.mem, self.ptr = mem, mem.ptr + offset

    class CFunctionAllocator:  # as cupy/cuda/memory.pyx calls the two C functions
        def __init__(self, param, malloc_func, free_func, owner):
            self.param, self.owner = param, owner
            self._malloc = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)(malloc_func)
            self._free = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int)(free_func)

        def malloc(self, size):
            allocator = self

            class CFunctionMemory:
                def __init__(self):
                    self.ptr = allocator._malloc(allocator.param or None, size, 0) or 0
                    self.size = size

                def __del__(self):
                    if self.ptr:
                        allocator._free(allocator.param or None, self.ptr, 0)

            return MemoryPointer(CFunctionMemory(), 0)

    def set_allocator(allocator=None):
        state["allocator"] = allocator

    memory.CFunctionAllocator = CFunctionAllocator
    runtime.getDevice = lambda: 0
    cuda.memory, cuda.runtime = memory, runtime
    cuda.UnownedMemory, cuda.MemoryPointer = UnownedMemory, MemoryPointer
    cuda.get_current_stream = lambda: current
    cuda.set_allocator = set_allocator
    cuda.Stream = Stream
    cupy.cuda = cuda
    return {"cupy": cupy, "cupy.cuda": cuda, "cupy.cuda.memory": memory, "cupy.cuda.runtime": runtime}, state


def fake_numba():
    numba = types.ModuleType("numba")
    cuda = types.ModuleType("numba.cuda")
    cudadrv = types.ModuleType("numba.cuda.cudadrv")
    driver = types.ModuleType("numba.cuda.cudadrv.driver")
    binding = types.ModuleType("cuda.bindings.driver")
    state = {}

    class CUdeviceptr(int):
        pass

    class Driver:
        def cuIpcGetMemHandle(self, base):
            return ("ipc-handle-of", int(base))

    class HostOnlyCUDAMemoryManager:
        def __init__(self, *args, **kwargs):
            self.context = kwargs.pop("context")
            self.reset_calls = 0
            self.deferred = 0

        def reset(self):
            self.reset_calls += 1

        @contextlib.contextmanager
        def defer_cleanup(self):
            self.deferred += 1
            yield

    class MemoryPointer:
        def __init__(self, context, pointer, size, owner=None, finalizer=None):
            self.context, self.device_pointer, self.size = context, pointer, size
            if finalizer is not None:
                self._finalizer = weakref.finalize(self, finalizer)

        @property
        def device_ctypes_pointer(self):
            return ctypes.c_size_t(int(self.device_pointer))

    class IpcHandle:
        def __init__(self, base, handle, size, source_info=None, offset=0):
            self.base, self.handle, self.size, self.source_info, self.offset = base, handle, size, source_info, offset

    def set_memory_manager(manager):
        if manager(context=None).interface_version != 1:
            raise RuntimeError("version")
        state["manager"] = manager

    import collections
    binding.CUdeviceptr = CUdeviceptr
    driver.binding = binding
    driver.USE_NV_BINDING = True
    driver.driver = Driver()
    driver.MemoryInfo = collections.namedtuple("MemoryInfo", "free,total")
    cudadrv.driver = driver
    cuda.cudadrv = cudadrv
    cuda.HostOnlyCUDAMemoryManager = HostOnlyCUDAMemoryManager
    cuda.MemoryPointer, cuda.IpcHandle = MemoryPointer, IpcHandle
    cuda.set_memory_manager = set_memory_manager
    numba.cuda = cuda
    modules = {"numba": numba, "numba.cuda": cuda, "numba.cuda.cudadrv": cudadrv,
               "numba.cuda.cudadrv.driver": driver}
    return modules, state


class FakeContext:
    class device:
        @staticmethod
        def get_device_identity():
            return {"pci_bus_id": 0}


@unittest.skipIf(HAVE_TORCH, "PyTorch is installed: TorchTest checks the real one")
class TorchStandInTest(unittest.TestCase):
    def tearDown(self):
        rmm_rs.frameworks.torch._torch_allocator = None

    def test_use_for_torch(self):
        rmm_rs.configure("pool")
        modules, calls = fake_torch()
        # The stand-in has no version and no headers: the backend cannot be built, so the call
        # says why and falls back to the pluggable allocator.
        with fake_modules(modules), self.assertWarnsRegex(RuntimeWarning, "PyTorch backend is not available"):
            allocator = rmm_rs.use_for_torch()
        with fake_modules(modules):
            self.assertIs(rmm_rs.use_for_torch(), allocator)  # a second call: the same one
        self.assertEqual(calls, [allocator.allocator()])
        self.assertEqual(allocator.args, (rmm_rs.library_path(), "rmmTorchAllocate", "rmmTorchDeallocate"))
        stream = rmm_rs.stream_create()
        ptr = allocator.alloc(1 << 16, rmm_rs.get_device(), stream)
        self.assertTrue(ptr)
        self.assertEqual(rmm_rs.statistics().current_bytes, 1 << 16)  # the same library instance
        allocator.free(ptr, 1 << 16, rmm_rs.get_device(), stream)
        self.assertEqual(rmm_rs.statistics().current_bytes, 0)
        self.assertFalse(allocator.alloc(-1, 0, None))  # failure: NULL, as PyTorch expects
        rmm_rs.stream_destroy(stream)

    def test_shim_on_request(self):
        rmm_rs.configure("pool")
        modules, calls = fake_torch()
        with fake_modules(modules), mock.patch.dict(os.environ, {"RMM_RS_TORCH_BACKEND": "shim"}), \
                warnings.catch_warnings():
            warnings.simplefilter("error")  # asked for: no warning
            allocator = rmm_rs.use_for_torch()
        self.assertEqual(calls, [allocator.allocator()])

    def test_rapids_rmm_torch_allocator(self):
        # RAPIDS' name: PyTorch asks it for its allocator when change_current_allocator is
        # called; then it installs rmm-rs (here the pluggable fallback), configuring nothing.
        import importlib

        rmm_rs.configure("pool")
        modules, calls = fake_torch()
        with fake_modules(modules), self.assertWarnsRegex(RuntimeWarning, "PyTorch backend is not available"):
            import rmm_rs.allocators.torch as allocators_torch

            allocators_torch = importlib.reload(allocators_torch)
            allocator = allocators_torch.rmm_torch_allocator
            self.assertEqual(calls, [])  # importing changes nothing
            modules["torch"].cuda.memory.change_current_allocator(allocator)
        installed = rmm_rs.frameworks.torch._torch_allocator
        # rmm_rs installs it, then PyTorch sets the same one again (allowed while it is unused).
        self.assertEqual(calls, [("pluggable", rmm_rs.library_path())] * 2)
        self.assertEqual(installed.args[1:], ("rmmTorchAllocate", "rmmTorchDeallocate"))
        ptr = installed.alloc(4096, 0, None)
        self.assertEqual(rmm_rs.statistics().current_bytes, 4096)  # the device's current resource
        installed.free(ptr, 4096, 0, None)
        sys.modules.pop("rmm_rs.allocators.torch", None)

    def test_backend_needs_a_cuda_build(self):
        modules, _ = fake_torch()
        torch = modules["torch"]
        torch.__version__ = "2.11.0+cpu"
        torch.__file__ = os.path.join(tempfile.gettempdir(), "torch", "__init__.py")
        torch.version = types.SimpleNamespace(cuda=None)
        with fake_modules(modules), self.assertRaisesRegex(RuntimeError, "not a CUDA build"):
            rmm_rs.build_torch_backend(tempfile.gettempdir())

    def test_too_late(self):
        modules, calls = fake_torch(initialized=True)
        with fake_modules(modules), self.assertRaises(RuntimeError) as caught:
            rmm_rs.use_for_torch()
        self.assertIn("before PyTorch initializes CUDA", str(caught.exception))
        self.assertEqual(calls, [])


class PackagingTest(unittest.TestCase):
    def test_wheel_ships_the_torch_backend_source(self):
        here = os.path.dirname(os.path.abspath(__file__))
        spec = importlib.util.spec_from_file_location("build_rmm_rs_under_test", os.path.join(here, "build_rmm_rs.py"))
        backend = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(backend)
        with tempfile.TemporaryDirectory() as folder:
            name = backend.build_wheel(folder)
            with zipfile.ZipFile(os.path.join(folder, name)) as wheel:
                names = wheel.namelist()
                source = wheel.read("rmm_rs/rmm_rs_torch.cpp").decode()
                commit = wheel.read("rmm_rs/GIT_COMMIT").decode() if "rmm_rs/GIT_COMMIT" in names else ""
        for member in ("rmm_rs/__init__.py", "rmm_rs/_bindings.py", "rmm_rs/frameworks/dask.py",
                       "rmm_rs/pylibrmm/device_buffer.py", "rmm_rs/allocators/numba.py", "librmm_cffi.py"):
            self.assertIn(member, names)
        self.assertFalse([n for n in names if "__pycache__" in n], names)
        self.assertTrue(name.endswith("-py3-none-any.whl"), name)  # nothing built: pure Python
        self.assertIn("rmm_rs_torch_install", source)
        self.assertFalse([n for n in names if n.endswith(".so")], names)
        self.assertNotIn("rmm/__init__.py", names)  # only when asked for (-C as-rmm=1)
        with tempfile.TemporaryDirectory() as folder:
            with zipfile.ZipFile(os.path.join(folder, backend.build_wheel(folder, {"as-rmm": "1"}))) as wheel:
                alias = wheel.read("rmm/__init__.py").decode()
        self.assertIn("sys.modules[__name__] = importlib.import_module(_TARGET)", alias)
        # rmm_rs.__git_commit__ of the installed wheel: the commit it was built from.
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True)
        if head.returncode == 0:
            self.assertEqual(commit.strip(), head.stdout.strip())


@unittest.skipIf(HAVE_CUPY, "CuPy is installed: CupyTest checks the real one")
class CupyStandInTest(unittest.TestCase):
    def test_python_allocator_uses_the_current_stream(self):
        with tempfile.TemporaryDirectory() as folder:
            log = os.path.join(folder, "cupy.csv")
            rmm_rs.configure("pool", log=log)
            stream = rmm_rs.stream_create()
            modules, state = fake_cupy(stream)
            with fake_modules(modules):
                self.assertIs(rmm_rs.use_for_cupy(), rmm_rs.cupy_allocator)
                self.assertIs(state["allocator"], rmm_rs.cupy_allocator)
                pointer = state["allocator"](10000)
                self.assertEqual(pointer.mem.size, 10000)
                self.assertEqual(pointer.mem.device_id, 0)
                self.assertEqual(rmm_rs.statistics().current_bytes, 10000)
                owner = weakref.ref(pointer.mem._owner)
                del pointer
                gc.collect()
                self.assertIsNone(owner())
                self.assertEqual(rmm_rs.statistics().current_bytes, 0)
                with self.assertRaises(MemoryError):
                    state["allocator"](1 << 40)
            rmm_rs.stream_synchronize(stream)
            rmm_rs.stream_destroy(stream)
            rmm_rs.flush_log()
            with open(log) as f:
                rows = [line.split(",") for line in f.read().splitlines()[1:]]
            self.assertEqual([r[2] for r in rows], ["allocate", "free", "allocate failure"])
            self.assertEqual({int(r[5], 16) for r in rows}, {stream})  # CuPy's current stream
            rmm_rs.configure("pool")

    def test_rapids_rmm_cupy_allocator(self):
        import importlib

        stats = rmm_rs.mr.StatisticsResourceAdaptor(rmm_rs.mr.CudaMemoryResource())
        rmm_rs.mr.set_current_device_resource(stats)
        stream = rmm_rs.stream_create()
        modules, state = fake_cupy(stream)
        with fake_modules(modules):
            import rmm_rs.allocators.cupy as allocators_cupy

            allocators_cupy = importlib.reload(allocators_cupy)
            modules["cupy"].cuda.set_allocator(allocators_cupy.rmm_cupy_allocator)
            pointer = state["allocator"](10000)
            owner = pointer.mem._owner
            self.assertIsInstance(owner, rmm_rs.DeviceBuffer)
            self.assertEqual((owner.ptr, owner.size, owner.stream.handle), (pointer.ptr, 10000, stream))
            self.assertEqual(stats.allocation_counts.current_bytes, 10000)
            del pointer, owner
            gc.collect()
            self.assertEqual(stats.allocation_counts.current_bytes, 0)
            with self.assertRaises(MemoryError):
                state["allocator"](1 << 40)
        sys.modules.pop("rmm_rs.allocators.cupy", None)
        rmm_rs.stream_synchronize(stream)
        rmm_rs.stream_destroy(stream)
        rmm_rs.configure("pool")

    def test_c_function_allocator(self):
        rmm_rs.configure("pool")
        modules, state = fake_cupy(0)
        with fake_modules(modules):
            malloc = rmm_rs.use_for_cupy(c_function=True)
            pointer = malloc(5000)
            self.assertTrue(pointer.ptr)
            self.assertEqual(rmm_rs.statistics().current_bytes, 5000)
            del pointer
            gc.collect()
            self.assertEqual(rmm_rs.statistics().current_bytes, 0)
            # From a resource of one's own instead of the device's.
            with rmm_rs.Resource.cuda() as cuda, rmm_rs.Resource.statistics_adaptor(cuda) as mine:
                malloc = rmm_rs.use_for_cupy(c_function=True, resource=mine)
                pointer = malloc(700)
                self.assertEqual(mine.counts().current_bytes, 700)
                self.assertEqual(rmm_rs.statistics().current_bytes, 0)
                del pointer
                gc.collect()
                self.assertEqual(mine.counts().current_bytes, 0)
            with self.assertRaises(ValueError):
                rmm_rs.use_for_cupy(resource=rmm_rs.Resource.cuda())


@unittest.skipIf(HAVE_NUMBA, "Numba is installed: NumbaTest checks the real one")
class NumbaStandInTest(unittest.TestCase):
    def tearDown(self):
        rmm_rs.frameworks.numba._numba_class = None

    def test_attributes_need_numba(self):
        self.assertFalse(hasattr(rmm_rs, "_numba_memory_manager"))
        with self.assertRaises(AttributeError):
            rmm_rs.RMMNumbaManager
        with self.assertRaises(AttributeError):
            rmm_rs.no_such_thing

    def test_emm_plugin(self):
        rmm_rs.configure("pool", initial_pool_size="16MiB")
        modules, state = fake_numba()
        with fake_modules(modules):
            manager_class = rmm_rs.use_for_numba()
            self.assertIs(state["manager"], manager_class)
            self.assertIs(rmm_rs._numba_memory_manager, manager_class)
            self.assertIs(rmm_rs.RMMNumbaManager, manager_class)
            manager = manager_class(context=FakeContext())
            manager.initialize()
            self.assertEqual(manager.interface_version, 1)
            first = manager.memalloc(256)
            second = manager.memalloc(8192)
            self.assertEqual(rmm_rs.statistics().current_bytes, 256 + 8192)
            base = int(first.device_pointer)
            handle = manager.get_ipc_handle(second)
            self.assertEqual(handle.offset, int(second.device_pointer) - base)
            self.assertGreater(handle.offset, 0)
            self.assertEqual(handle.handle, ("ipc-handle-of", base))  # the pool chunk's start
            self.assertEqual(handle.size, 8192)
            self.assertIs(handle.base, second)
            self.assertEqual(handle.source_info, {"pci_bus_id": 0})
            free_bytes, total = manager.get_memory_info()
            self.assertGreater(total, 0)
            with manager.defer_cleanup():
                pass
            manager.reset()
            self.assertEqual((manager.deferred, manager.reset_calls), (1, 1))
            del first, second, handle
            gc.collect()
            self.assertEqual(rmm_rs.statistics().current_bytes, 0)


# --------------------------------------------------------------------------------------
# Frameworks: the real ones (each in a child process, on the GPU)
# --------------------------------------------------------------------------------------

needs_gpu = unittest.skipIf(not ON_GPU, "simulated devices: frameworks need the real GPU")


@needs_gpu
@unittest.skipUnless(HAVE_TORCH, "PyTorch is not installed")
class TorchTest(unittest.TestCase):
    def test_tensors_on_rmm(self):
        out = run_child("""
            import rmm_rs, torch
            rmm_rs.configure("pool", initial_pool_size="64MiB")
            rmm_rs.use_for_torch()
            x = torch.arange(1000, device="cuda", dtype=torch.float32)
            y = (x * 2).sum().item()
            s = rmm_rs.statistics()
            print("sum", int(y), "allocations", s.total_count, "bytes", s.total_bytes)
        """)
        self.assertIn("sum 999000", out)
        self.assertNotIn("allocations 0", out)

    def test_default_stack_is_the_expandable_resource(self):
        out = run_child("""
            import os
            os.environ.pop("RMM_ALLOC_CONF", None)
            import rmm_rs, torch
            rmm_rs.use_for_torch()
            x = torch.arange(1 << 20, device="cuda", dtype=torch.float32)
            total = int(x.sum().item())
            names, node = [], rmm_rs.Resource.of_device().snapshot()
            while isinstance(node, dict):
                names.append(node["resource"])
                node = node.get("upstream")
            print("sum", total, "stack", "/".join(names), "counted", rmm_rs.statistics().total_count > 0)
        """)
        self.assertIn(f"sum {(1 << 20) * ((1 << 20) - 1) // 2} stack statistics/expandable counted", out)
        self.assertIn("counted True", out)

    def test_too_late_is_detected(self):
        out = run_child("""
            import rmm_rs, torch
            torch.zeros(1, device="cuda")
            try:
                rmm_rs.use_for_torch()
            except RuntimeError as error:
                print("refused", "before PyTorch initializes CUDA" in str(error))
        """)
        self.assertIn("refused True", out)


@needs_gpu
@unittest.skipUnless(HAVE_CUPY, "CuPy is not installed")
class CupyTest(unittest.TestCase):
    def test_arrays_on_rmm(self):
        out = run_child("""
            import rmm_rs, cupy
            rmm_rs.configure("pool")
            rmm_rs.use_for_cupy()
            a = cupy.arange(1000, dtype=cupy.int64)
            with cupy.cuda.Stream(non_blocking=True) as stream:
                b = (a * 3).sum()
                stream.synchronize()
            rmm_rs.use_for_cupy(c_function=True)
            c = cupy.ones(4096).sum()
            s = rmm_rs.statistics()
            print("sums", int(b), int(c), "allocations", s.total_count)
        """)
        self.assertIn("sums 1498500 4096 ", out)
        self.assertNotIn("allocations 0", out)


@needs_gpu
@unittest.skipUnless(HAVE_NUMBA, "Numba is not installed")
class NumbaTest(unittest.TestCase):
    def test_device_arrays_on_rmm(self):
        out = run_child("""
            import numpy as np, rmm_rs
            from numba import cuda
            rmm_rs.configure("pool", initial_pool_size="64MiB")
            rmm_rs.use_for_numba()
            small = cuda.device_array(16, dtype=np.int64)
            big = cuda.to_device(np.arange(1000, dtype=np.int64))
            handle = cuda.current_context().get_ipc_handle(big.gpu_data)  # the EMM plugin's
            ptr = big.device_ctypes_pointer.value
            print("offset", handle.offset == rmm_rs.allocation_offset(ptr) and handle.offset > 0)
            print("values", int(big.copy_to_host().sum()), "allocations", rmm_rs.statistics().total_count >= 2)
        """)
        self.assertIn("offset True", out)
        self.assertIn("values 499500 allocations True", out)


HAVE_DISTRIBUTED = have("distributed")


class DaskAttributeTest(unittest.TestCase):
    def test_dask_is_the_frameworks_module_imported_on_first_access(self):
        out = run_child("""
            import sys
            import rmm_rs
            print("imported before", "rmm_rs.frameworks.dask" in sys.modules, "distributed" in sys.modules)
            try:
                from rmm_rs import dask
            except ImportError as error:  # distributed missing: the message says what it needs
                print("missing", "distributed" in str(error), repr(error.__cause__))
            else:
                print("same", dask is sys.modules["rmm_rs.frameworks.dask"], rmm_rs.dask.RmmRsPlugin.__module__)
        """)
        self.assertIn("imported before False False", out)
        if HAVE_DISTRIBUTED:
            self.assertIn("same True rmm_rs.frameworks.dask", out)
        else:
            self.assertIn("missing True", out)

    def test_wheel_ships_the_dask_module(self):
        spec = importlib.util.spec_from_file_location("build_rmm_rs_for_dask", os.path.join(HERE, "build_rmm_rs.py"))
        backend = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(backend)
        with tempfile.TemporaryDirectory() as folder:
            with zipfile.ZipFile(os.path.join(folder, backend.build_wheel(folder))) as wheel:
                shipped = wheel.read("rmm_rs/frameworks/dask.py").decode()
        with open(os.path.join(HERE, "rmm_rs", "frameworks", "dask.py"), encoding="utf-8") as f:
            self.assertEqual(shipped, f.read())


@unittest.skipUnless(HAVE_DISTRIBUTED, "dask's distributed is not installed (pip install dask distributed): "
                     "the Dask plugin's cluster test is skipped")
@unittest.skipIf(ON_GPU, "on a GPU the plugin is tested by bench/frameworks/dask_cupy.py (scripts/gpu-distributed.sh)")
class DaskPluginTest(unittest.TestCase):
    def test_arguments(self):
        from rmm_rs import dask

        with self.assertRaises(ValueError):
            dask.RmmRsPlugin("statistics/pool", initial_pool_size="1GiB")  # a spec or sizes
        with self.assertRaises(ValueError):
            dask.RmmRsPlugin(device="first")
        with self.assertRaises(ValueError):
            dask.RmmRsPlugin(resource="slab")
        self.assertEqual(dask.RmmRsPlugin(initial_pool_size="1GiB").resource, "pool")

    def test_one_worker_per_simulated_device(self):
        # A LocalCluster of two worker processes over two simulated devices: the plugin gives
        # worker N device N (narrowing each process to it), builds the spec there, and tasks
        # pinned to each worker allocate from that stack; registering the plugin again
        # replaces the stack on the running workers.
        out = run_child("""
            import ctypes, os
            os.environ["RMM_SIM_DEVICES"] = "2:256MiB"
            import rmm_rs
            from distributed import Client, LocalCluster

            def fill_and_sum(n, value):
                ptr = rmm_rs.alloc(n)
                try:
                    ctypes.memset(ptr, value, n)  # simulated device memory is host memory
                    return sum(ctypes.string_at(ptr, n)), rmm_rs.get_device()
                finally:
                    rmm_rs.free(ptr)

            if __name__ == "__main__":
                with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, Client(cluster) as client:
                    client.register_plugin(rmm_rs.dask.RmmRsPlugin(
                        "statistics/pool:initial=32MiB,maximum=128MiB", device="name"))
                    info = client.run(rmm_rs.dask.describe)
                    for address, worker in sorted(info.items(), key=lambda item: item[1]["worker"]):
                        print("worker", worker["worker"], "index", worker["index"], worker["visible"],
                              "count", worker["device_count"], "stack", worker["stack"])
                        futures = [client.submit(fill_and_sum, 1000 * (i + 1), 3, workers=[address], pure=False)
                                   for i in range(4)]
                        print("sums", client.gather(futures))
                    for worker in sorted(client.run(rmm_rs.dask.describe).values(), key=lambda w: w["worker"]):
                        print("counted", worker["worker"], worker["statistics"])
                    client.register_plugin(rmm_rs.dask.RmmRsPlugin(
                        resource="pool", initial_pool_size="16MiB", device="name"))
                    for worker in sorted(client.run(rmm_rs.dask.describe).values(), key=lambda w: w["worker"]):
                        print("again", worker["worker"], worker["index"], worker["stack"], worker["statistics"])
        """, timeout=180)
        for index in (0, 1):
            self.assertIn(f"worker {index} index {index} RMM_SIM_DEVICES=1:256MiB (simulated device {index} of 2) "
                          "count 1 stack statistics/pool/cuda", out)
            # A fresh statistics adaptor counts from zero: the replaced stack is in use.
            self.assertIn(f"again {index} {index} statistics/pool/cuda "
                          "{'current_bytes': 0, 'peak_bytes': 0, 'total_count': 0}", out)
        self.assertEqual(out.count("sums [(3000, 0), (6000, 0), (9000, 0), (12000, 0)]"), 2, out)
        # Each worker's four tasks went through its stack: 4 allocations, the largest its peak.
        for index in (0, 1):
            self.assertIn(f"counted {index} {{'current_bytes': 0, 'peak_bytes': 4000, 'total_count': 4}}", out)

    def test_refuses_a_worker_whose_devices_started_already(self):
        # rmm-rs started in the worker before the plugin (as CUDA would after a GPU task): the
        # process keeps both devices, so every thread's device 0 would not be the chosen one.
        out = run_child("""
            import os
            os.environ["RMM_SIM_DEVICES"] = "2:256MiB"
            import rmm_rs
            from distributed import Client, LocalCluster

            if __name__ == "__main__":
                with LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, Client(cluster) as client:
                    print("started", list(client.run(rmm_rs.device_count).values()))
                    try:
                        client.register_plugin(rmm_rs.dask.RmmRsPlugin(device=1))
                    except RuntimeError as error:
                        print("refused:", error)
                    print("environment after", list(client.run(os.environ.get, "RMM_SIM_DEVICES").values()))
        """, timeout=120)
        self.assertIn("started [2]", out)
        self.assertIn("refused: RmmRsPlugin: worker 0 sees 2 devices after RMM_SIM_DEVICES=1:256MiB", out)
        self.assertIn("environment after ['2:256MiB']", out)


class IpcTest(unittest.TestCase):
    """IPC handles of allocations: one of a shareable expandable resource opened in a child
    process (the same bytes, on simulated devices, whose virtual memory is a memory file)."""

    def test_an_allocation_opens_in_another_process_until_it_is_freed(self):
        rmm_rs.ipc_allow_openers()  # the child takes the parent's descriptors (Yama scope 1)
        resource = rmm_rs.Resource.shareable_expandable()
        size = 3 * MiB
        ptr = resource.allocate(size)
        if not ON_GPU:
            ctypes.memset(ptr, 0x5A, size)
        handle = rmm_rs.ipc_get_handle(ptr)
        self.assertEqual(len(handle), 128)
        self.assertEqual(rmm_rs.ipc_get_handle(ptr), handle, "the same handle until freed")
        out = run_child(f"""
            import ctypes, rmm_rs
            ptr = rmm_rs.ipc_open_handle(bytes.fromhex("{handle.hex()}"))
            if rmm_rs.is_simulated():
                print("same", ctypes.string_at(ptr, {size}) == b"\\x5a" * {size})
                ctypes.memset(ptr, 0xC3, 4096)
            rmm_rs.ipc_close_handle(ptr)
            print("closed")
        """)
        self.assertIn("closed", out)
        if not ON_GPU:
            self.assertIn("same True", out)
            self.assertEqual(ctypes.string_at(ptr, 4096), b"\xc3" * 4096, "the child wrote into the block")
        resource.deallocate(ptr, size)
        out = run_child(f"""
            import rmm_rs
            try:
                rmm_rs.ipc_open_handle(bytes.fromhex("{handle.hex()}"))
            except rmm_rs.RmmError as error:
                print("refused", error.name, "freed" in error.message)
        """)
        self.assertIn("refused RMM_ERROR_INVALID_ARGUMENT True", out)
        with self.assertRaises(rmm_rs.RmmError):
            rmm_rs.ipc_get_handle(ptr)  # freed: no handle
        with self.assertRaises(ValueError):
            rmm_rs.ipc_open_handle(b"short")
        with self.assertRaises(rmm_rs.RmmError):
            rmm_rs.ipc_close_handle(ptr)  # never opened here
        resource.close()

    def test_memory_of_any_expandable_resource_has_a_handle_once_asked_for(self):
        resource = rmm_rs.Resource.expandable()
        ptr = resource.allocate(MiB)
        self.assertTrue(rmm_rs.ipc_get_handle(ptr))
        resource.grant_peer_access(0)  # its own device: nothing to do
        resource.deallocate(ptr, MiB)
        resource.close()


def tearDownModule():
    if rmm_rs.is_simulated():
        assert rmm_rs.sim_race_count() == 0, f"{rmm_rs.sim_race_count()} stream-ordering races"


def load_tests(loader, tests, pattern):
    """This file's tests, then those of python/tests/ (test_*.py)."""
    suite = unittest.TestSuite([tests])
    suite.addTests(loader.discover(TESTS, pattern="test_*.py", top_level_dir=TESTS))
    return suite


if __name__ == "__main__":
    print(f"rmm_rs tests on {'the GPU' if ON_GPU else 'simulated devices (' + os.environ['RMM_SIM_DEVICES'] + ')'}, "
          f"library {rmm_rs.library_path()}; torch {HAVE_TORCH}, cupy {HAVE_CUPY}, numba {HAVE_NUMBA}", flush=True)
    unittest.main(verbosity=2)
