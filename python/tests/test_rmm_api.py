"""RAPIDS RMM's Python API over rmm-rs (``import rmm_rs as rmm``), on simulated devices: the
names, arguments and errors RAPIDS RMM has (DeviceBuffer, Stream and the CUDA stream protocol,
CudaStreamPool, rmm.mr's resources and per-device functions, reinitialize and its hooks, the
logging level, statistics), that RAPIDS' API and rmm_rs's own share one configuration, the
legacy librmm_cffi, and the allocator modules without their frameworks.

    python3 python/tests/test_rmm_api.py [-v]    (or through python/test_rmm_rs.py)
"""

from __future__ import annotations

import ctypes
import gc
import os
import pickle
import sys
import tempfile
import unittest
import unittest.mock

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _support import ON_GPU, have, run_child  # noqa: E402

import rmm_rs  # noqa: E402
import rmm_rs as rmm  # noqa: E402
from rmm_rs.pylibrmm import _dlpack  # noqa: E402
from rmm_rs.pylibrmm.cuda_stream_pool import CudaStreamPool  # noqa: E402
from rmm_rs.pylibrmm.device_buffer import copy_device_to_ptr, copy_host_to_ptr, copy_ptr_to_host  # noqa: E402
from rmm_rs.pylibrmm.stream import DEFAULT_STREAM, CudaStreamFlags, Stream  # noqa: E402

MiB = 1 << 20


class FakeStream:
    """A stream of another library, as the CUDA stream protocol shows it (cuda.core, CuPy,
    PyTorch): here a stream rmm_rs made."""

    def __init__(self, handle: int, version: int = 0) -> None:
        self.handle, self.version = handle, version

    def __cuda_stream__(self):
        return (self.version, self.handle)


def reset() -> None:
    rmm.mr.set_current_device_resource(rmm.mr.CudaMemoryResource())


class DeviceBufferTest(unittest.TestCase):
    def setUp(self):
        reset()

    def test_sizes_pointer_and_interface(self):
        for size in (0, 5, 1000):
            b = rmm.DeviceBuffer(size=size)
            self.assertEqual((b.size, len(b), b.nbytes, b.__sizeof__()), (size,) * 4)
            self.assertGreaterEqual(b.capacity(), size)
            self.assertEqual(b.ptr == 0, size == 0)
            self.assertEqual(b.__cuda_array_interface__, {"data": (b.ptr, False), "shape": (size,), "strides": None,
                                                          "typestr": "|u1", "version": 0})
            self.assertEqual(len(b.tobytes()), size)
            self.assertIsInstance(b.mr, rmm.mr.CudaMemoryResource)
            self.assertIs(b.stream, DEFAULT_STREAM)

    def test_errors_as_rapids_gives_them(self):
        with self.assertRaises(OverflowError):
            rmm.DeviceBuffer(size=-1)
        with self.assertRaises(TypeError):
            rmm.DeviceBuffer(size=1.5)
        with self.assertRaises(TypeError):
            rmm.DeviceBuffer(100)  # keyword-only, as RAPIDS
        with self.assertRaises(MemoryError):
            rmm.DeviceBuffer(size=1 << 40)
        with self.assertRaisesRegex(TypeError, "stream argument cannot be None"):
            rmm.DeviceBuffer(size=10, stream=None)
        for bad in (None, "abc", 123, [1, 2, 3]):
            with self.assertRaises(TypeError):
                rmm.DeviceBuffer.to_device(bad)
        import array

        for bad in (array.array("H", [1, 2]), memoryview(b"abcd")[::2], memoryview(b"abcd").cast("B", (2, 2))):
            with self.assertRaises(ValueError):
                rmm.DeviceBuffer.to_device(bad)
        with self.assertRaisesRegex(TypeError, "stream argument cannot be None"):
            rmm.DeviceBuffer.to_device(b"abc", stream=None)

    def test_prefetch_migrates_managed_memory_and_leaves_the_rest(self):
        rmm.mr.set_current_device_resource(rmm.mr.ManagedMemoryResource())
        managed = rmm.DeviceBuffer.to_device(b"managed!")
        managed.prefetch()
        managed.prefetch(device=0, stream=rmm.pylibrmm.stream.Stream())
        self.assertEqual(managed.tobytes(), b"managed!")
        reset()
        on_device = rmm.DeviceBuffer(size=64)
        on_device.prefetch()  # not managed: nothing to migrate, as RAPIDS
        rmm.DeviceBuffer(size=0).prefetch()
        with self.assertRaises(rmm.RMMError):
            managed.prefetch(device=-1)
        with self.assertRaises(TypeError):
            managed.prefetch(stream="not a stream")

    def test_host_round_trips(self):
        import array

        for host in (b"abc", bytearray(b"abc"), memoryview(b"abc"), array.array("b", [97, 98, 99]), b""):
            b = rmm.DeviceBuffer.to_device(host)
            self.assertEqual(b.tobytes(), bytes(host))
            self.assertEqual(bytes(b), bytes(host))
            out = bytearray(len(bytes(host)))
            self.assertIs(b.copy_to_host(out), out)
            self.assertEqual(bytes(out), bytes(host))
            self.assertEqual(bytes(b.copy_to_host()), bytes(host))
        b = rmm.DeviceBuffer.to_device(bytes(10))
        b.copy_from_host(b"abc")
        self.assertEqual(b.tobytes(), b"abc" + bytes(7))
        with self.assertRaises(ValueError):
            b.copy_from_host(bytes(11))
        with self.assertRaises(ValueError):
            b.copy_to_host(bytearray(3))
        with self.assertRaises(ValueError):
            b.copy_to_host(b"x" * 10)  # read-only
        other = rmm.DeviceBuffer.to_device(b"xyz")
        b.copy_from_device(other)
        self.assertEqual(b.tobytes()[:4], b"xyz\x00")
        with self.assertRaises(ValueError):
            b.copy_from_device(b"not a device array")
        with self.assertRaises(ValueError):
            rmm.DeviceBuffer.to_device(bytes(3)).copy_from_device(rmm.DeviceBuffer.to_device(bytes(4)))
        hb = bytearray(3)
        copy_ptr_to_host(other.ptr, hb)
        copy_host_to_ptr(b"QRS", b.ptr)
        copy_device_to_ptr(other.ptr, b.ptr + 3, 3)
        self.assertEqual((bytes(hb), b.tobytes()[:6]), (b"xyz", b"QRSxyz"))

    def test_copy_resize_reserve_pickle(self):
        b = rmm.DeviceBuffer.to_device(b"abcdef")
        c = b.copy()
        import copy

        d = copy.copy(b)
        self.assertTrue(b.ptr != c.ptr != d.ptr)
        self.assertEqual(c.tobytes(), b"abcdef")
        b.resize(3)
        self.assertEqual((b.size, b.tobytes()), (3, b"abc"))
        b.reserve(4096)
        self.assertEqual((b.size, b.tobytes()), (3, b"abc"))
        self.assertGreaterEqual(b.capacity(), 4096)
        b.resize(8192)
        self.assertEqual(b.tobytes()[:3], b"abc")
        for protocol in (2, 5):
            again = pickle.loads(pickle.dumps(c, protocol=protocol))
            self.assertEqual(again.tobytes(), b"abcdef")
        b.prefetch()

    def test_frees_when_dropped(self):
        stats = rmm.mr.StatisticsResourceAdaptor(rmm.mr.CudaMemoryResource())
        rmm.mr.set_current_device_resource(stats)
        b = rmm.DeviceBuffer(size=4096)
        self.assertIs(b.mr, stats)
        self.assertEqual(stats.allocation_counts.current_bytes, 4096)
        del b
        gc.collect()
        self.assertEqual(stats.allocation_counts.current_bytes, 0)

    def test_dlpack(self):
        b = rmm.DeviceBuffer.to_device(b"0123456789")
        self.assertEqual(b.__dlpack_device__(), (2, rmm_rs.get_device()))
        before = _dlpack.live_count()
        capsule = b.__dlpack__()
        name = ctypes.pythonapi.PyCapsule_GetName
        name.argtypes, name.restype = [ctypes.py_object], ctypes.c_char_p
        self.assertEqual(name(capsule), b"dltensor")
        get = ctypes.pythonapi.PyCapsule_GetPointer
        get.argtypes, get.restype = [ctypes.py_object, ctypes.c_char_p], ctypes.c_void_p
        managed = ctypes.cast(get(capsule, b"dltensor"), ctypes.POINTER(_dlpack._DLManagedTensor)).contents
        tensor = managed.dl_tensor
        self.assertEqual((tensor.data, tensor.ndim, tensor.shape[0], tensor.strides[0]), (b.ptr, 1, 10, 1))
        self.assertEqual((tensor.dtype.code, tensor.dtype.bits, tensor.dtype.lanes), (1, 8, 1))
        self.assertEqual((tensor.device.device_type, tensor.device.device_id), (2, rmm_rs.get_device()))
        self.assertEqual(_dlpack.live_count(), before + 1)
        # A consumer takes it: renames the capsule and calls the deleter when done.
        rename = ctypes.pythonapi.PyCapsule_SetName
        rename.argtypes, rename.restype = [ctypes.py_object, ctypes.c_char_p], ctypes.c_int
        rename(capsule, b"used_dltensor")
        managed.deleter(ctypes.pointer(managed))
        del capsule
        self.assertEqual(_dlpack.live_count(), before)
        # A capsule nobody took lets go of the buffer when it goes.
        del managed, tensor
        capsule = b.__dlpack__(stream=1)
        self.assertEqual(_dlpack.live_count(), before + 1)
        del capsule
        gc.collect()
        self.assertEqual(_dlpack.live_count(), before)
        with self.assertRaises(BufferError):
            b.__dlpack__(copy=True)


class StreamTest(unittest.TestCase):
    def setUp(self):
        reset()

    def test_stream_protocol(self):
        s = Stream()
        version, handle = s.__cuda_stream__()
        self.assertEqual(version, 0)
        self.assertTrue(handle)
        self.assertFalse(s.is_default())
        self.assertTrue(DEFAULT_STREAM.is_default())
        s.synchronize()
        self.assertEqual(Stream(s), s)
        self.assertEqual(hash(Stream(s)), hash(s))
        self.assertIs(rmm.pylibrmm.stream.Stream, rmm.Stream)
        self.assertIs(rmm.pylibrmm.CudaStreamPool, CudaStreamPool)

    def test_every_function_takes_a_foreign_stream(self):
        handle = rmm_rs.stream_create()
        try:
            foreign = FakeStream(handle)
            wrapped = Stream(foreign)
            self.assertEqual(wrapped.__cuda_stream__(), (0, handle))
            b = rmm.DeviceBuffer(size=256, stream=foreign)
            self.assertEqual(b.stream.__cuda_stream__(), (0, handle))
            b.resize(512, stream=foreign)
            b.copy_from_host(b"abc", stream=handle)  # an int handle too
            wrapped.synchronize()
            self.assertEqual(b.tobytes(stream=foreign)[:3], b"abc")
            mr = rmm.mr.get_current_device_resource()
            ptr = mr.allocate(100, stream=foreign)
            mr.deallocate(ptr, 100, stream=foreign)
            ptr = rmm_rs.alloc(100, stream=foreign)  # rmm_rs's own functions as well
            rmm_rs.free(ptr, stream=wrapped)
            rmm_rs.stream_synchronize(foreign)
            del b
            gc.collect()
        finally:
            rmm_rs.stream_synchronize(handle)
            rmm_rs.stream_destroy(handle)

    def test_anything_else_is_a_type_error(self):
        for bad in ("stream", 1.5, [0], object()):
            with self.assertRaisesRegex(TypeError, "__cuda_stream__"):
                Stream(bad)
            with self.assertRaisesRegex(TypeError, "__cuda_stream__"):
                rmm.DeviceBuffer(size=10, stream=bad)
            with self.assertRaisesRegex(TypeError, "__cuda_stream__"):
                rmm_rs.alloc(10, stream=bad)
        with self.assertRaisesRegex(NotImplementedError, "version: '1'"):
            Stream(FakeStream(0, version=1))
        with self.assertRaises(ValueError):
            Stream(DEFAULT_STREAM, flags=CudaStreamFlags.NON_BLOCKING)
        with self.assertRaisesRegex(TypeError, "stream argument cannot be None"):
            rmm.mr.get_current_device_resource().allocate(10, stream=None)

    def test_stream_pool(self):
        pool = CudaStreamPool(pool_size=3)
        self.assertEqual(pool.get_pool_size(), 3)
        handles = [pool.get_stream().__cuda_stream__()[1] for _ in range(6)]
        self.assertEqual(len(set(handles)), 3)
        self.assertEqual(handles[:3], handles[3:])
        self.assertEqual(pool.get_stream(4), pool.get_stream(1))
        b = rmm.DeviceBuffer(size=64, stream=pool.get_stream())
        del pool  # the buffer's stream lives on with it
        b.resize(128)
        del b
        gc.collect()
        with self.assertRaises(ValueError):
            CudaStreamPool(0)
        Stream(flags=CudaStreamFlags.NON_BLOCKING).synchronize()


class MemoryResourceTest(unittest.TestCase):
    def setUp(self):
        reset()

    def tearDown(self):
        reset()

    def use(self, mr, size=1000):
        ptr = mr.allocate(size)
        self.assertTrue(ptr)
        mr.deallocate(ptr, size)
        rmm.mr.set_current_device_resource(mr)
        self.assertIs(rmm.mr.get_current_device_resource(), mr)
        self.assertIs(rmm.mr.get_current_device_resource_type(), type(mr))
        buffer = rmm.DeviceBuffer(size=size)
        self.assertIs(buffer.mr, mr)
        return buffer

    def test_experimental_async_managed_resource(self):
        from rmm_rs.mr.experimental import CudaAsyncManagedMemoryResource

        self.assertIs(rmm.mr.experimental.CudaAsyncManagedMemoryResource, CudaAsyncManagedMemoryResource)
        mr = CudaAsyncManagedMemoryResource()
        self.assertNotEqual(mr.pool_handle(), 0)
        buffer = self.use(mr)
        buffer.copy_from_host(b"x" * 1000)
        buffer.prefetch()
        self.assertEqual(buffer.tobytes(), b"x" * 1000)

    def test_each_resource(self):
        cuda = rmm.mr.CudaMemoryResource()
        self.use(cuda)
        self.use(rmm.mr.ManagedMemoryResource())
        self.use(rmm.mr.CudaAsyncMemoryResource(initial_pool_size="1MiB", release_threshold=0))
        pool = rmm.mr.PoolMemoryResource(cuda, initial_pool_size="8MiB", maximum_pool_size=64 * MiB)
        self.use(pool)
        self.assertGreaterEqual(pool.pool_size(), 8 * MiB)
        self.assertIs(pool.get_upstream(), cuda)
        self.assertGreater(rmm.mr.PoolMemoryResource(cuda).pool_size(), 0)  # half the free memory
        self.use(rmm.mr.ArenaMemoryResource(cuda, arena_size=16 * MiB))
        self.use(rmm.mr.FixedSizeMemoryResource(cuda, block_size=4096, blocks_to_preallocate=4), size=4000)
        binning = rmm.mr.BinningMemoryResource(pool, 8, 12)
        fixed = rmm.mr.FixedSizeMemoryResource(cuda, block_size=1 << 16)
        binning.add_bin(1 << 16, fixed)
        binning.add_bin(1 << 18)
        self.assertEqual(binning.bin_mrs, [fixed])
        self.use(binning, size=50000)
        self.use(rmm.mr.BinningMemoryResource(pool))
        self.use(rmm.mr.PrefetchResourceAdaptor(rmm.mr.ManagedMemoryResource()))
        with self.assertRaises(TypeError):
            rmm.mr.PoolMemoryResource(None)
        with self.assertRaises(TypeError):
            rmm.mr.PoolMemoryResource(rmm_rs.Resource.cuda())
        with self.assertRaises(ValueError):
            rmm.mr.PoolMemoryResource(cuda, initial_pool_size="2GB!")

    def test_adaptors(self):
        cuda = rmm.mr.CudaMemoryResource()
        limiting = rmm.mr.LimitingResourceAdaptor(cuda, allocation_limit=MiB)
        keep = self.use(limiting, size=1000)
        self.assertIn(limiting.get_allocated_bytes(), (1000, 1024))  # as asked, or as rounded up
        self.assertEqual(limiting.get_allocation_limit(), MiB)
        with self.assertRaises(MemoryError):
            rmm.DeviceBuffer(size=2 * MiB)
        del keep
        tracking = rmm.mr.TrackingResourceAdaptor(cuda, capture_stacks=False)
        keep = self.use(tracking, size=3000)
        self.assertEqual(tracking.get_allocated_bytes(), 3000)
        self.assertIn("3000", tracking.get_outstanding_allocations_str())
        tracking.log_outstanding_allocations()
        del keep
        gc.collect()
        self.assertEqual(tracking.get_allocated_bytes(), 0)
        stats = rmm.mr.StatisticsResourceAdaptor(cuda)
        keep = self.use(stats, size=500)
        before = stats.push_counters()
        self.assertEqual(before.current_bytes, 500)
        inner = rmm.DeviceBuffer(size=100)
        self.assertEqual(stats.allocation_counts.current_bytes, 100)
        popped = stats.pop_counters()
        self.assertEqual((popped.total_bytes, popped.total_count), (100, 1))
        with self.assertRaisesRegex(IndexError, "cannot pop the last counter pair"):
            stats.pop_counters()
        self.assertEqual(rmm_rs.statistics().current_bytes, 600)  # rmm_rs reads the same adaptor
        del keep, inner

    def test_logging_adaptor_files(self):
        with tempfile.TemporaryDirectory() as folder:
            log = rmm.mr.LoggingResourceAdaptor(rmm.mr.CudaMemoryResource(), log_file_name=os.path.join(folder, "a.csv"))
            expected = os.path.join(folder, f"a.dev{rmm_rs.get_device()}.csv")
            self.assertEqual(log.get_file_name(), expected)
            keep = self.use(log, size=777)
            log.flush()
            with open(expected) as f:
                self.assertIn(",777,", f.read())
            self.assertEqual(rmm.get_log_filenames(), {rmm_rs.get_device(): expected})
            rmm.disable_logging()
            self.assertIsInstance(rmm.mr.get_current_device_resource(), rmm.mr.CudaMemoryResource)
            rmm.enable_logging(os.path.join(folder, "b.log"))
            self.assertTrue(rmm.get_log_filenames()[rmm_rs.get_device()].endswith(".dev%d.log" % rmm_rs.get_device()))
            rmm.disable_logging()
            del keep
        environment = dict(os.environ)
        environment.pop("RMM_LOG_FILE", None)
        with unittest.mock.patch.dict(os.environ, environment, clear=True), self.assertRaises(ValueError):
            rmm.mr.LoggingResourceAdaptor(rmm.mr.CudaMemoryResource())

    def test_python_callbacks(self):
        cuda = rmm.mr.CudaMemoryResource()
        calls = []

        def allocate(size, stream):
            calls.append(("allocate", size, type(stream).__name__))
            return cuda.allocate(size, stream)

        def deallocate(ptr, size, stream):
            calls.append(("deallocate", size))
            cuda.deallocate(ptr, size, stream)

        callback = rmm.mr.CallbackMemoryResource(allocate, deallocate)
        keep = self.use(callback, size=256)
        del keep
        gc.collect()
        self.assertEqual(calls[-2:], [("allocate", 256, "Stream"), ("deallocate", 256)])

        def broken(size, stream):
            raise RuntimeError("My alloc error")

        rmm.mr.set_current_device_resource(rmm.mr.CallbackMemoryResource(broken, deallocate))
        with self.assertRaisesRegex(RuntimeError, "My alloc error"):
            rmm.DeviceBuffer(size=10)
        reset()

        retries = []

        def retry(size):
            retries.append(size)
            return len(retries) < 3

        failing = rmm.mr.FailureCallbackResourceAdaptor(rmm.mr.LimitingResourceAdaptor(cuda, MiB), retry)
        rmm.mr.set_current_device_resource(failing)
        with self.assertRaises(MemoryError):
            rmm.DeviceBuffer(size=2 * MiB)
        self.assertEqual(retries, [2 * MiB] * 3)

        def raising(size):
            raise RuntimeError("MyError")

        rmm.mr.set_current_device_resource(rmm.mr.FailureCallbackResourceAdaptor(rmm.mr.LimitingResourceAdaptor(cuda, MiB), raising))
        with self.assertRaisesRegex(RuntimeError, "MyError"):
            rmm.DeviceBuffer(size=2 * MiB)

    def test_available_memory_and_per_device(self):
        free_bytes, total = rmm.mr.available_device_memory()
        self.assertGreater(total, 0)
        self.assertLessEqual(free_bytes, total)
        mr = rmm.mr.CudaAsyncMemoryResource()
        rmm.mr.set_per_device_resource(0, mr)
        self.assertIs(rmm.mr.get_per_device_resource(0), mr)
        with self.assertRaises(TypeError):
            rmm.mr.set_per_device_resource(0, "cuda")
        self.assertTrue(rmm.mr.is_initialized())
        self.assertTrue(rmm.is_initialized())


class OneConfigurationTest(unittest.TestCase):
    """rmm_rs.configure() and RAPIDS' API set the same thing: the last one wins, and each sees
    what the other set."""

    def tearDown(self):
        reset()

    def test_configure_then_rapids_api(self):
        rmm_rs.configure("pool", initial_pool_size="4MiB")
        current = rmm.mr.get_current_device_resource()
        self.assertIsInstance(current, rmm.mr.StatisticsResourceAdaptor)
        b = rmm.DeviceBuffer(size=1234)
        self.assertEqual(current.allocation_counts.current_bytes, 1234)
        self.assertEqual(rmm_rs.statistics().current_bytes, 1234)
        rmm.mr.set_current_device_resource(rmm.mr.CudaMemoryResource())
        self.assertIsNone(rmm_rs.statistics())  # the configured stack is gone
        self.assertNotIn(rmm_rs.get_device(), rmm_rs._stacks)
        del b

    def test_reinitialize_and_hooks(self):
        order = []
        first = rmm.register_reinitialize_hook(order.append, "first")
        rmm.register_reinitialize_hook(lambda: order.append("second"))
        rmm.reinitialize(pool_allocator=True, initial_pool_size="8MiB", maximum_pool_size="64MiB")
        self.assertEqual(order, ["second", "first"])
        current = rmm.mr.get_current_device_resource()
        self.assertIsInstance(current, rmm.mr.PoolMemoryResource)
        self.assertIsInstance(current.get_upstream(), rmm.mr.CudaMemoryResource)
        names = []
        node = rmm_rs.Resource.of_device().snapshot()
        while isinstance(node, dict):
            names.append(node["resource"])
            node = node.get("upstream")
        self.assertEqual(names, ["pool", "cuda"])
        rmm.unregister_reinitialize_hook(first)
        order.clear()
        with tempfile.TemporaryDirectory() as folder:
            rmm.reinitialize(managed_memory=True, logging=True, log_file_name=os.path.join(folder, "r.log"))
            self.assertEqual(order, ["second"])
            current = rmm.mr.get_current_device_resource()
            self.assertIsInstance(current, rmm.mr.LoggingResourceAdaptor)
            self.assertIsInstance(current.get_upstream(), rmm.mr.ManagedMemoryResource)
            rmm.DeviceBuffer(size=10)
            rmm.disable_logging()
        rmm.rmm._reinitialize_hooks.clear()

    def test_statistics_helpers(self):
        reset()
        self.assertIsNone(rmm.statistics.get_statistics())
        with rmm.statistics.statistics():
            b = rmm.DeviceBuffer(size=300)
            self.assertEqual(rmm.statistics.get_statistics().current_bytes, 300)
            del b
        self.assertIsNone(rmm.statistics.get_statistics())
        rmm.statistics.enable_statistics()
        self.assertIsNotNone(rmm.statistics.push_statistics())
        rmm.DeviceBuffer(size=10)
        self.assertEqual(rmm.statistics.pop_statistics().total_bytes, 10)
        self.assertIs(rmm.statistics.Statistics, rmm_rs.Statistics)
        self.assertEqual(rmm_rs.statistics().total_bytes, 10)  # still callable as before

    def test_errors_and_levels(self):
        self.assertTrue(issubclass(rmm_rs.RmmError, rmm.RMMError))
        try:
            rmm_rs.Resource.from_spec("no-such-layer")
        except rmm.RMMError as error:
            self.assertEqual(error.errcode, rmm_rs.ERROR_INVALID_ARGUMENT)
        original = rmm.get_logging_level()
        self.assertIsInstance(original, rmm.level_enum)
        rmm.set_logging_level(rmm.level_enum.debug)
        self.assertEqual(rmm.get_logging_level(), rmm.level_enum.debug)
        self.assertTrue(rmm.should_log(rmm.level_enum.info))
        self.assertFalse(rmm.should_log(rmm.level_enum.trace))
        with self.assertRaises(TypeError):
            rmm.set_logging_level(2)
        rmm.set_flush_level(rmm.level_enum.error)
        self.assertEqual(rmm.get_flush_level(), rmm.level_enum.error)
        rmm.flush_logger()
        rmm.set_logging_level(original)
        from rmm_rs.pylibrmm.helper import parse_bytes

        self.assertEqual([parse_bytes(s) for s in (100, "1GB", "1GiB", "1.5 kib", "2mb", "1PiB")],
                         [100, 10 ** 9, 1 << 30, 1536, 2 * 10 ** 6, 1 << 50])
        for bad in ("lots", "4G", "1Gi", "2GB!", "", 1.5):
            with self.assertRaises(ValueError):
                parse_bytes(bad)


class ProfilerTest(unittest.TestCase):
    """rmm.statistics.profiler and ProfilerRecords, as RAPIDS RMM has them."""

    def setUp(self):
        reset()

    def test_functions_and_blocks_are_recorded_with_their_peaks_and_totals(self):
        records = rmm.statistics.ProfilerRecords()

        @rmm.statistics.profiler(records=records)
        def two_buffers(n):
            a, b = rmm.DeviceBuffer(size=n), rmm.DeviceBuffer(size=n)
            return a.size + b.size

        self.assertEqual(two_buffers(100), 200, "nothing recorded without statistics, and the call works")
        self.assertEqual(records.records, {})
        rmm.statistics.enable_statistics()
        two_buffers(1000)
        two_buffers(3000)
        with rmm.statistics.profiler(records=records, name="block"):
            kept = rmm.DeviceBuffer(size=5000)
        with rmm.statistics.profiler(records=records):
            rmm.DeviceBuffer(size=7)
        got = records.records
        (function,) = [name for name in got if name.endswith("two_buffers)")]
        self.assertEqual((got[function].num_calls, got[function].memory_total, got[function].memory_peak), (2, 8000, 6000))
        self.assertEqual((got["block"].num_calls, got["block"].memory_total, got["block"].memory_peak), (1, 5000, 5000))
        (unnamed,) = [name for name in got if name.endswith("(test_functions_and_blocks_are_recorded_with_their_peaks_and_totals)")]
        self.assertEqual(got[unnamed].memory_total, 7)
        report = records.report(ordered_by="memory_total").splitlines()
        rows = report[report.index(next(line for line in report if "filename:lineno" in line)) + 1:]
        self.assertEqual([row.split()[-1] for row in rows], [function, "block", unnamed])
        self.assertIn("8,000", rows[0])
        with self.assertRaises(ValueError):
            records.report(ordered_by="size")
        del kept

    def test_the_default_records_and_nesting(self):
        rmm.statistics.enable_statistics()
        before = rmm.statistics.default_profiler_records.records.get("outer")
        with rmm.statistics.profiler(name="outer"):
            with rmm.statistics.profiler(name="inner"):
                rmm.DeviceBuffer(size=300)
            rmm.DeviceBuffer(size=200)
        records = rmm.statistics.default_profiler_records.records
        self.assertEqual(records["outer"].num_calls, (before.num_calls if before else 0) + 1)
        self.assertEqual(records["inner"].memory_total % 300, 0)
        self.assertGreaterEqual(records["outer"].memory_total, 500)


class LegacyTest(unittest.TestCase):
    def test_librmm_cffi(self):
        out = run_child("""
            from librmm_cffi import librmm as rmm, librmm_config as rmm_cfg
            import librmm_cffi.librmm_config, rmm_rs
            assert librmm_cffi.librmm_config is rmm_cfg
            rmm_cfg.use_pool_allocator = True
            rmm_cfg.initial_pool_size = 2 << 20
            rmm_cfg.enable_logging = True
            print("initialized", rmm.is_initialized(), rmm.initialize(), rmm.is_initialized())
            ptr = rmm_rs.alloc(4096)
            rmm_rs.free(ptr)
            print("free/total", rmm.get_info()[1] > 0, "log lines", rmm.csv_log().count("\\n") >= 2)
            print("finalized", rmm.finalize(), rmm.is_initialized())
            try:
                rmm.device_array(10)
            except ImportError as error:
                print("numba", "numba" in str(error).lower())
        """)
        self.assertIn("initialized False 0 True", out.stdout)
        self.assertIn("free/total True log lines True", out.stdout)
        self.assertIn("finalized 0 False", out.stdout)
        if not have("numba"):
            self.assertIn("numba True", out.stdout)

    def test_allocator_modules_without_their_frameworks(self):
        out = run_child("""
            import importlib.util
            from rmm_rs.allocators import torch as t, cupy as c
            print("torch", t.rmm_torch_allocator is None or type(t.rmm_torch_allocator).__name__)
            if importlib.util.find_spec("cupy") is None:
                try:
                    c.rmm_cupy_allocator(10)
                except ModuleNotFoundError as error:
                    print("cupy", error)
            if importlib.util.find_spec("numba") is None:
                try:
                    import rmm_rs.allocators.numba
                except ImportError as error:
                    print("numba", type(error).__name__)
        """)
        if not have("torch"):
            self.assertIn("torch True", out.stdout)
        if not have("cupy"):
            self.assertIn("cupy No module named 'cupy'", out.stdout)
        if not have("numba"):
            self.assertIn("numba ModuleNotFoundError", out.stdout)


if __name__ == "__main__":
    import unittest.mock  # noqa: F401

    unittest.main()
