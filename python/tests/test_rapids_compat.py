"""What RAPIDS RMM's own Python tests need of rmm_rs beyond its API (scripts/rapids-python-suite.sh
runs those tests; this file pins the pieces down on simulated devices): ``import rmm`` through
python/as_rmm, ``rmm._cuda.gpu``, the exceptions of Python callbacks as RAPIDS raises them with
nothing leaked, the statistics context, and PyTorch's allocator functions reading the device's
resource at every allocation.

    python3 python/tests/test_rapids_compat.py [-v]    (or through python/test_rmm_rs.py)
"""

from __future__ import annotations

import ctypes
import gc
import os
import pickle
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _support import ON_GPU, PYTHON, run_child  # noqa: E402

import rmm_rs as rmm  # noqa: E402
from rmm_rs._bindings import _callback_error  # noqa: E402
from rmm_rs._cuda import gpu  # noqa: E402
from rmm_rs.pylibrmm.memory_resource import _memory_resource  # noqa: E402

AS_RMM = os.path.join(PYTHON, "as_rmm")


def reset() -> None:
    rmm.mr.set_current_device_resource(rmm.mr.CudaMemoryResource())


class AsRmmTest(unittest.TestCase):
    def test_import_rmm_is_rmm_rs_itself(self):
        out = run_child("""
            import pickle, sys
            import rmm, rmm.mr, rmm_rs
            from rmm.pylibrmm.stream import Stream
            from rmm._cuda.gpu import getDevice
            import rmm.statistics
            assert rmm is rmm_rs and rmm.mr is rmm_rs.mr, (rmm, rmm.mr)
            assert Stream is rmm_rs.pylibrmm.stream.Stream
            assert sys.modules["rmm.pylibrmm.stream"] is rmm_rs.pylibrmm.stream
            # The modules keep their own names: pickles name rmm_rs, reload finds them.
            assert rmm_rs.pylibrmm.stream.__spec__.name == "rmm_rs.pylibrmm.stream"
            assert rmm.statistics is rmm_rs.statistics and callable(rmm.statistics.statistics)
            buffer = pickle.loads(pickle.dumps(rmm.DeviceBuffer.to_device(b"abc")))
            assert type(buffer) is rmm_rs.DeviceBuffer and buffer.tobytes() == b"abc"
            try:
                import rmm.no_such_module
            except ModuleNotFoundError as error:
                print("missing:", error.name)
            print("device", getDevice())
        """, env={"PYTHONPATH": os.pathsep.join([AS_RMM, PYTHON, os.environ.get("PYTHONPATH", "")])})
        self.assertIn("missing: rmm.no_such_module", out.stdout)
        self.assertIn("device 0", out.stdout)

    def test_version_attributes(self):
        self.assertIsInstance(rmm.__git_commit__, str)
        self.assertEqual(rmm.__version__, rmm._version.__version__)
        self.assertRegex(rmm.__version__, r"^\d+\.\d+\.\d+$")


@unittest.skipIf(ON_GPU, "the simulator's answers")
class GpuModuleTest(unittest.TestCase):
    def test_devices(self):
        self.assertEqual(gpu.getDeviceCount(), rmm.device_count())
        self.assertEqual(gpu.getDevice(), rmm.get_device())
        gpu.setDevice(0)
        with self.assertRaises(gpu.CUDARuntimeError) as caught:
            gpu.setDevice(gpu.getDeviceCount())
        self.assertEqual(int(caught.exception.status), 101)
        self.assertTrue(str(caught.exception).startswith("cudaErrorInvalidDevice: invalid device ordinal"))
        self.assertEqual(gpu.deviceGetName(0), "rmm-rs simulated device")

    def test_attributes_are_what_the_simulator_models(self):
        self.assertEqual(gpu.getDeviceAttribute(88, 0), 0)  # pageable memory access: no HMM
        self.assertEqual(gpu.getDeviceAttribute(89, 0), 1)  # concurrent managed access
        self.assertEqual(gpu.getDeviceAttribute(18, 0), 0)  # not integrated
        self.assertEqual(gpu.getDeviceAttribute(119, 0), 1)  # POSIX file descriptors
        with self.assertRaises(gpu.CUDARuntimeError) as caught:
            gpu.getDeviceAttribute(75, 0)  # compute capability: not modelled, not invented
        self.assertEqual(int(caught.exception.status), 1)
        self.assertIn("not modelled by the simulator", str(caught.exception))
        with self.assertRaises(TypeError):
            gpu.getDeviceAttribute("88", 0)
        error = pickle.loads(pickle.dumps(caught.exception))
        self.assertEqual((type(error), str(error)), (gpu.CUDARuntimeError, str(caught.exception)))
        self.assertIsInstance(error, RuntimeError)

    def test_an_older_simulated_driver(self):
        out = run_child("""
            from rmm_rs._cuda import gpu
            print(gpu.driverGetVersion(), gpu.getDeviceAttribute(89, 0))
        """, env={"RMM_SIM_DRIVER_VERSION": "12080"})
        self.assertEqual(out.stdout.split(), ["12080", "0"])  # no managed memory pools before 13.0
        self.assertEqual(gpu.driverGetVersion(), int(os.environ.get("RMM_SIM_DRIVER_VERSION") or 13000))
        self.assertGreater(gpu.runtimeGetVersion(), 0)


class CallbackErrorTest(unittest.TestCase):
    """An exception in a Python callback never unwinds through the C library: the allocation
    fails with nothing allocated, and the caller gets what RAPIDS raises."""

    def setUp(self):
        reset()

    def tearDown(self):
        reset()

    def failing_stack(self, error):
        base = rmm.mr.CudaMemoryResource()
        calls = []

        def allocate(size, stream):
            calls.append(size)
            raise error

        callback = rmm.mr.CallbackMemoryResource(allocate, lambda ptr, size, stream: base.deallocate(ptr, size, stream))
        stats = rmm.mr.StatisticsResourceAdaptor(callback)
        rmm.mr.set_current_device_resource(stats)
        return stats, calls

    def test_each_kind_of_exception(self):
        for raised, expected in ((MemoryError("no room"), MemoryError), (RuntimeError("broken"), RuntimeError),
                                 (ValueError("bad size"), RuntimeError), (KeyError("k"), RuntimeError),
                                 (BaseException("base"), RuntimeError)):
            with self.subTest(raised=type(raised).__name__):
                stats, calls = self.failing_stack(raised)
                with self.assertRaises(expected) as caught:
                    rmm.DeviceBuffer(size=256)
                self.assertIn(str(raised), str(caught.exception))
                if expected is RuntimeError and not isinstance(raised, RuntimeError):
                    self.assertIs(type(caught.exception), RuntimeError)
                    self.assertIs(caught.exception.__cause__, raised)
                self.assertGreaterEqual(len(calls), 1)
                counts = stats.allocation_counts
                self.assertEqual((counts.current_bytes, counts.current_count, counts.total_count), (0, 0, 0))
                self.assertIsNone(getattr(_callback_error, "error", None), "nothing kept after the call")

    def test_every_allocation_path_raises_it(self):
        stats, _ = self.failing_stack(ValueError("from the callback"))
        for name, allocate in (("allocate", lambda: stats.allocate(64)), ("rmm_rs.alloc", lambda: rmm.alloc(64)),
                               ("resize", lambda: rmm.DeviceBuffer(size=0).resize(64))):
            with self.subTest(path=name):
                with self.assertRaisesRegex(RuntimeError, "from the callback"):
                    allocate()

    def test_a_kept_error_never_reaches_a_later_call(self):
        # The library can recover from a callback's failure (a pool retries elsewhere); the next
        # unrelated failure must say what it is, not repeat the callback's error.
        _memory_resource._keep_callback_error(ValueError("stale"))
        rmm.DeviceBuffer(size=16)  # succeeds, and drops it
        with self.assertRaises(rmm.RmmError) as caught:
            rmm.mr.CudaMemoryResource().deallocate(12345, 16)
        self.assertNotIn("stale", str(caught.exception))

    def test_failure_callback_errors(self):
        def callback(nbytes):
            raise ValueError("callback gave up")

        base = rmm.mr.LimitingResourceAdaptor(rmm.mr.CudaMemoryResource(), allocation_limit=1024)
        rmm.mr.set_current_device_resource(rmm.mr.FailureCallbackResourceAdaptor(base, callback))
        with self.assertRaisesRegex(RuntimeError, "callback gave up") as caught:
            rmm.DeviceBuffer(size=4096)
        self.assertIs(type(caught.exception), RuntimeError)
        self.assertEqual(base.get_allocated_bytes(), 0)

    def test_callbacks_go_with_their_resource(self):
        before = len(_memory_resource._kept)
        for _ in range(20):
            self.failing_stack(ValueError("x"))
            with self.assertRaises(RuntimeError):
                rmm.DeviceBuffer(size=8)
            reset()
        gc.collect()
        self.assertEqual(len(_memory_resource._kept), before)


class AllocationErrorTest(unittest.TestCase):
    """RAPIDS raises rmm::bad_alloc, which Python sees as MemoryError, for any failure of an
    allocation (RMM_CUDA_TRY_ALLOC), e.g. from a memory pool destroyed under a
    CudaAsyncViewMemoryResource; other calls' driver failures are no MemoryError."""

    def test_a_driver_failure_of_an_allocation_is_a_memory_error(self):
        from rmm_rs import _bindings

        for function in ("rmmAlloc", "rmmResourceAllocate", "rmmDeviceBufferCreate"):
            with self.assertRaises(MemoryError) as caught:
                _bindings._raise(_bindings.ERROR_CUDA_ERROR, function)
            self.assertIsInstance(caught.exception, _bindings.RmmError)
            self.assertEqual(caught.exception.code, _bindings.ERROR_CUDA_ERROR)
        with self.assertRaises(_bindings.RmmError) as caught:
            _bindings._raise(_bindings.ERROR_CUDA_ERROR, "rmmStreamSynchronize")
        self.assertNotIsInstance(caught.exception, MemoryError)
        with self.assertRaises(_bindings.RmmError) as caught:
            _bindings._raise(_bindings.ERROR_INVALID_ARGUMENT, "rmmResourceAllocate")
        self.assertNotIsInstance(caught.exception, MemoryError)


class StatisticsContextTest(unittest.TestCase):
    def setUp(self):
        reset()

    def test_the_resource_is_the_same_object_before_and_after(self):
        before = rmm.mr.get_current_device_resource()
        self.assertIs(rmm.mr.get_current_device_resource(), before)
        with rmm.statistics.statistics():
            outer = rmm.mr.get_current_device_resource()
            self.assertIsInstance(outer, rmm.mr.StatisticsResourceAdaptor)
            with rmm.statistics.statistics():  # a scope on the same adaptor
                self.assertIs(rmm.mr.get_current_device_resource(), outer)
            with self.assertRaises(IndexError):
                outer.pop_counters()  # the fresh adaptor has no scope of the context's
        self.assertIs(rmm.mr.get_current_device_resource(), before)

    def test_a_resource_changed_inside_is_refused(self):
        with self.assertRaisesRegex(ValueError, "changed inside the statistics context"):
            with rmm.statistics.statistics():
                rmm.mr.set_current_device_resource(rmm.mr.CudaMemoryResource())

    def test_reinitialize_refuses_initial_above_maximum_as_rapids(self):
        with self.assertRaisesRegex(RuntimeError, "Initial pool size exceeds the maximum pool size"):
            rmm.reinitialize(pool_allocator=True, initial_pool_size=1 << 11, maximum_pool_size=1 << 10)


class TorchAllocatorFunctionsTest(unittest.TestCase):
    """``rmmTorchAllocate(size, device, stream)`` / ``rmmTorchDeallocate``, called as PyTorch's
    pluggable allocator calls them, with a stream handle: each allocation comes from the
    device's resource at that moment (RAPIDS' rmm_torch_allocator reads it every time), on
    any stream, and goes back to the stack it came from. The backend (rmm_rs_torch.cpp) keeps
    the same contract; it needs libtorch, so the GPU run of RAPIDS' test_rmm_pytorch.py checks
    it."""

    def setUp(self):
        reset()
        self.lib = rmm.library()
        self.lib.rmmTorchAllocate.restype = ctypes.c_void_p
        self.lib.rmmTorchAllocate.argtypes = [ctypes.c_ssize_t, ctypes.c_int, ctypes.c_void_p]
        self.lib.rmmTorchDeallocate.restype = None
        self.lib.rmmTorchDeallocate.argtypes = [ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_int, ctypes.c_void_p]

    def tearDown(self):
        reset()

    def test_each_allocation_counts_in_the_current_resource(self):
        streams = [rmm.Stream(), rmm.Stream(), rmm.DEFAULT_STREAM if hasattr(rmm, "DEFAULT_STREAM") else rmm.Stream()]
        live = []
        adaptors = []
        for round_number, stream in enumerate(streams * 2):
            with rmm.statistics.statistics():
                stats = rmm.mr.get_current_device_resource()
                adaptors.append(stats)
                ptr = self.lib.rmmTorchAllocate(1000 + round_number, 0, stream.handle or None)
                self.assertTrue(ptr, rmm.library().rmmGetLastErrorMessage())
                self.assertEqual(stats.allocation_counts.current_bytes, 1000 + round_number)
                live.append((ptr, 1000 + round_number, stream, stats))
        # Freed after their resources stopped being current: each goes back to its own.
        for ptr, size, stream, stats in live:
            self.lib.rmmTorchDeallocate(ptr, size, 0, stream.handle or None)
            self.assertEqual(stats.allocation_counts.current_bytes, 0)
            self.assertEqual(stats.allocation_counts.total_bytes, size)
        rmm.Stream().synchronize()


if __name__ == "__main__":
    unittest.main()
