"""Sleep and wake from Python (docs/src/sleep.md), on simulated devices (whose device memory is
host memory mapped at the reserved addresses: a sleeping page is really gone): the resources'
``sleep`` / ``wake`` / ``asleep``, ``rmm_rs.sleep_device`` / ``wake_device``, and the tags of
``rmm_rs.sleep`` (``region``, ``pause``, ``resume``, ``tags``) as torch_memory_saver has them;
then a GPT-style model (tiny_gpt.py) whose parameters and Adam state live in a kept tag and
whose activations and gradients live in a discarded one trains over a pause, during which most
of the device is taken and given back, bit-identical to a run without the pause.

    python3 python/tests/test_sleep.py [-v]    (or through python/test_rmm_rs.py)
"""

from __future__ import annotations

import ctypes
import gc
import os
import sys
import threading
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _support import ON_GPU, run_child  # noqa: E402

import rmm_rs  # noqa: E402
import rmm_rs as rmm  # noqa: E402
from rmm_rs import sleep as tags  # noqa: E402
from rmm_rs.pylibrmm.device_buffer import copy_host_to_ptr, copy_ptr_to_host  # noqa: E402

import tiny_gpt  # noqa: E402

MiB = 1 << 20


_PERIOD = 256 * 4096  # the pattern repeats after this many bytes
_patterns = {}


def pattern(size: int, seed: int) -> bytes:
    """Bytes that differ per position (each 4 KiB page of a MiB otherwise) and per seed: a page put
    back at the wrong address shows."""
    block = _patterns.get(seed)
    if block is None:
        block = _patterns[seed] = bytes(((i // 4096) ^ (i * 31) ^ seed) & 0xFF for i in range(_PERIOD))
    return (block * (size // _PERIOD + 1))[:size]


def write(ptr: int, data: bytes) -> None:
    copy_host_to_ptr(data, ptr)
    if not ON_GPU:  # simulated device memory is host memory: the bytes are there to read
        assert ctypes.string_at(ptr, min(len(data), 64)) == data[:64]


def read(ptr: int, size: int) -> bytes:
    out = bytearray(size)
    copy_ptr_to_host(ptr, out)
    return bytes(out)


def free_device_bytes() -> int:
    return rmm.mr.available_device_memory()[0]


def reset() -> None:
    rmm.mr.set_current_device_resource(rmm.mr.CudaMemoryResource())


def tag_state(tag: str, device: int = 0) -> dict:
    [state] = [entry for entry in tags.tags() if entry["tag"] == tag and entry["device"] == device]
    return state


def give_back_tags() -> None:
    """What the tags keep free goes back to the device (the next tests find the device as it was)."""
    gc.collect()
    for entry in tags.tags():
        if not entry["asleep"]:
            tags.resource(entry["tag"], entry["device"]).release()


class ResourceSleepTest(unittest.TestCase):
    """The methods every memory resource object has (rmm_rs.Resource and rmm.mr's classes)."""

    def setUp(self):
        reset()

    def tearDown(self):
        reset()
        gc.collect()

    def test_keep_restores_every_byte_at_the_same_address(self):
        mr = rmm.mr.ExpandableMemoryResource()
        sizes = [3 * MiB, 4096, 700 * 1024, 9 * MiB + 123]
        blocks = [(mr.allocate(size), size) for size in sizes]
        for seed, (ptr, size) in enumerate(blocks):
            write(ptr, pattern(size, seed))
        self.assertFalse(mr.asleep)
        held = free_device_bytes()
        mr.sleep("keep")
        self.assertTrue(mr.asleep)
        self.assertTrue(mr.resource.asleep)
        snapshot = mr.resource.snapshot()
        self.assertEqual(snapshot["asleep"], "keep")
        self.assertEqual(snapshot["reserved_bytes"], 0)
        self.assertGreaterEqual(snapshot["kept_on_host_bytes"], sum(sizes))
        self.assertGreaterEqual(free_device_bytes() - held, sum(sizes))  # the device has it back
        mr.wake()
        self.assertFalse(mr.asleep)
        for seed, (ptr, size) in enumerate(blocks):
            self.assertEqual(read(ptr, size), pattern(size, seed), f"block {seed} at {ptr:#x}")
        if not ON_GPU:
            ptr, size = blocks[0]
            self.assertEqual(ctypes.string_at(ptr, size), pattern(size, 0))
        for ptr, size in blocks:
            mr.deallocate(ptr, size)

    def test_discard_gives_the_device_memory_back_and_keeps_the_addresses_usable(self):
        mr = rmm.mr.ExpandableMemoryResource()
        ptr = mr.allocate(64 * MiB)
        write(ptr, pattern(64 * MiB, 7))
        before = free_device_bytes()
        mr.sleep("discard")
        self.assertGreaterEqual(free_device_bytes() - before, 64 * MiB)
        snapshot = mr.resource.snapshot()
        self.assertEqual((snapshot["asleep"], snapshot["reserved_bytes"], snapshot["kept_on_host_bytes"]),
                         ("discard", 0, 0))
        self.assertGreaterEqual(snapshot["asleep_bytes"], 64 * MiB)
        mr.wake()
        self.assertLessEqual(free_device_bytes(), before)
        write(ptr, pattern(64 * MiB, 8))  # the same address is memory again
        self.assertEqual(read(ptr, 64 * MiB), pattern(64 * MiB, 8))
        mr.deallocate(ptr, 64 * MiB)

    def test_while_asleep_allocations_fail_and_frees_are_taken(self):
        mr = rmm.mr.ExpandableMemoryResource()
        kept, dropped = mr.allocate(MiB), mr.allocate(2 * MiB)
        write(kept, pattern(MiB, 3))
        mr.sleep()
        for attempt in (lambda: mr.allocate(256), lambda: mr.resource.allocate(MiB),
                        lambda: rmm.DeviceBuffer(size=10, mr=mr)):
            with self.assertRaises(rmm_rs.RmmError) as caught:
                attempt()
            self.assertEqual(caught.exception.code, rmm_rs.ERROR_INVALID_ARGUMENT)
            self.assertIn("asleep", str(caught.exception))
            self.assertNotIsInstance(caught.exception, MemoryError)  # not out of memory: asleep
        used = mr.resource.snapshot()["used_bytes"]
        mr.deallocate(dropped, 2 * MiB)  # a free while asleep
        self.assertEqual(mr.resource.snapshot()["used_bytes"], used - 2 * MiB)
        mr.wake()
        self.assertEqual(read(kept, MiB), pattern(MiB, 3))
        again = mr.allocate(2 * MiB)
        mr.deallocate(again, 2 * MiB)
        mr.deallocate(kept, MiB)

    def test_twice_and_awake_are_refused_with_nothing_changed(self):
        mr = rmm.mr.ExpandableMemoryResource()
        ptr = mr.allocate(MiB)
        write(ptr, pattern(MiB, 1))
        with self.assertRaisesRegex(rmm_rs.RmmError, "awake") as caught:
            mr.wake()
        self.assertEqual(caught.exception.code, rmm_rs.ERROR_INVALID_ARGUMENT)
        mr.sleep("keep")
        with self.assertRaisesRegex(rmm_rs.RmmError, "already asleep") as caught:
            mr.sleep("discard")
        self.assertEqual(caught.exception.code, rmm_rs.ERROR_INVALID_ARGUMENT)
        self.assertEqual(mr.resource.snapshot()["asleep"], "keep")  # the first sleep's mode stands
        mr.wake()
        self.assertEqual(read(ptr, MiB), pattern(MiB, 1))
        mr.deallocate(ptr, MiB)

    def test_resources_over_no_expandable_resource_cannot_sleep(self):
        cuda = rmm.mr.CudaMemoryResource()
        for mr in (cuda, rmm.mr.PoolMemoryResource(cuda, initial_pool_size=MiB),
                   rmm.mr.StatisticsResourceAdaptor(cuda)):
            for call in (lambda: mr.sleep(), lambda: mr.sleep("discard"), lambda: mr.wake(), lambda: mr.asleep):
                with self.assertRaisesRegex(rmm_rs.RmmError, "expandable") as caught:
                    call()
                self.assertEqual(caught.exception.code, rmm_rs.ERROR_NOT_SUPPORTED)
                self.assertEqual(caught.exception.name, "RMM_ERROR_NOT_SUPPORTED")
        with self.assertRaises(rmm_rs.RmmError) as caught:
            rmm_rs.Resource.cuda().sleep()
        self.assertEqual(caught.exception.code, rmm_rs.ERROR_NOT_SUPPORTED)

    def test_a_stack_over_an_expandable_resource_sleeps_through_it(self):
        expandable = rmm.mr.ExpandableMemoryResource()
        pool = rmm.mr.PoolMemoryResource(expandable, initial_pool_size=4 * MiB)
        stats = rmm.mr.StatisticsResourceAdaptor(pool)
        ptr = stats.allocate(3 * MiB)
        write(ptr, pattern(3 * MiB, 5))
        stream = rmm.pylibrmm.stream.Stream()
        stats.sleep("keep", stream=stream)
        self.assertTrue(stats.asleep and pool.asleep and expandable.asleep)
        with self.assertRaises(rmm_rs.RmmError):
            stats.allocate(16)
        stats.wake(stream)
        self.assertFalse(expandable.asleep)
        self.assertEqual(read(ptr, 3 * MiB), pattern(3 * MiB, 5))
        stats.deallocate(ptr, 3 * MiB)
        # rmm_rs's own Resource, with an int stream handle and the integer modes
        handle = rmm_rs.stream_create()
        try:
            resource = rmm_rs.Resource.pool(rmm_rs.Resource.expandable(), MiB)
            block = resource.allocate(MiB)
            resource.sleep(rmm_rs.SLEEP_DISCARD, stream=handle)
            self.assertTrue(resource.asleep)
            resource.wake(stream=handle)
            resource.deallocate(block, MiB)
        finally:
            rmm_rs.stream_destroy(handle)

    def test_modes_are_keep_or_discard(self):
        mr = rmm.mr.ExpandableMemoryResource()
        for bad in ("kept", "", 2, True, None):
            with self.assertRaisesRegex(ValueError, "keep"):
                mr.sleep(bad)
            self.assertFalse(mr.asleep)
        mr.sleep("KEEP")
        mr.wake()
        mr.sleep(rmm_rs.SLEEP_KEEP)
        self.assertEqual(mr.resource.snapshot()["asleep"], "keep")
        mr.wake()

    def test_the_device_resource_sleeps_without_a_handle(self):
        with self.assertRaises(rmm_rs.RmmError) as caught:
            rmm_rs.sleep_device()  # the cuda resource
        self.assertEqual(caught.exception.code, rmm_rs.ERROR_NOT_SUPPORTED)
        mr = rmm.mr.PoolMemoryResource(rmm.mr.ExpandableMemoryResource(), initial_pool_size=MiB)
        rmm.mr.set_current_device_resource(mr)
        buffer = rmm.DeviceBuffer.to_device(pattern(100_000, 9))
        address = buffer.ptr
        self.assertFalse(rmm_rs.device_asleep())
        rmm_rs.sleep_device(mode="keep")
        self.assertTrue(rmm_rs.device_asleep(0) and mr.asleep)
        with self.assertRaisesRegex(rmm_rs.RmmError, "asleep"):
            rmm.DeviceBuffer(size=100)
        with self.assertRaisesRegex(rmm_rs.RmmError, "already asleep"):
            rmm_rs.sleep_device(0, "discard")
        rmm_rs.wake_device(0)
        self.assertEqual((buffer.ptr, buffer.tobytes()), (address, pattern(100_000, 9)))
        with self.assertRaisesRegex(rmm_rs.RmmError, "awake"):
            rmm_rs.wake_device()

    def test_a_configured_expandable_stack_shows_as_its_class(self):
        try:
            rmm_rs.configure("expandable", statistics=False)
            current = rmm.mr.get_current_device_resource()
            self.assertIs(rmm.mr.get_current_device_resource_type(), rmm.mr.ExpandableMemoryResource)
            ptr = current.allocate(MiB)
            current.sleep("discard")
            self.assertTrue(rmm_rs.device_asleep())
            current.wake()
            current.deallocate(ptr, MiB)
        finally:
            reset()


class TagTest(unittest.TestCase):
    """rmm_rs.sleep's tags: a resource per tag, current in its regions, paused and resumed."""

    def setUp(self):
        reset()
        self.base = rmm.mr.get_current_device_resource()

    def tearDown(self):
        give_back_tags()
        reset()

    def tag(self, name: str) -> str:
        return f"{self.id().rsplit('.', 1)[-1]}:{name}"

    def test_allocations_in_a_region_land_in_its_tag(self):
        weights = self.tag("weights")
        with tags.region(weights, keep=True) as mr:
            self.assertIsInstance(mr, rmm.mr.ExpandableMemoryResource)
            self.assertIs(rmm.mr.get_current_device_resource(), mr)
            buffer = rmm.DeviceBuffer(size=MiB)
            legacy = rmm_rs.alloc(2 * MiB)  # rmmAlloc: the device's current resource
            self.assertIs(buffer.mr, mr)
        self.assertIs(rmm.mr.get_current_device_resource(), self.base)
        self.assertIs(tags.resource(weights), mr)
        state = tag_state(weights)
        self.assertEqual((state["mode"], state["asleep"]), ("keep", False))
        self.assertEqual(state["used_bytes"], 3 * MiB)
        outside = rmm.DeviceBuffer(size=MiB)
        self.assertIsNot(outside.mr, mr)
        rmm_rs.free(legacy)  # after the block, to the tag's resource
        self.assertEqual(tag_state(weights)["used_bytes"], MiB)
        with tags.region(weights, keep=True) as again:
            self.assertIs(again, mr)  # one resource per tag and device

    def test_pause_and_resume_keep_and_discard_tags(self):
        weights, scratch = self.tag("weights"), self.tag("scratch")
        with tags.region(weights, keep=True):
            w = rmm.DeviceBuffer.to_device(pattern(5 * MiB, 1))
        with tags.region(scratch):
            s = rmm.DeviceBuffer.to_device(pattern(3 * MiB, 2))
        addresses = (w.ptr, s.ptr)
        before = free_device_bytes()
        tags.pause(weights)
        self.assertEqual([tag_state(weights)["asleep"], tag_state(scratch)["asleep"]], [True, False])
        tags.pause()  # every tag still awake
        self.assertGreaterEqual(free_device_bytes() - before, 8 * MiB)
        kept, dropped = tag_state(weights), tag_state(scratch)
        self.assertEqual((kept["reserved_bytes"], dropped["reserved_bytes"]), (0, 0))
        self.assertGreaterEqual(kept["kept_on_host_bytes"], 5 * MiB)
        self.assertEqual(dropped["kept_on_host_bytes"], 0)
        self.assertGreaterEqual(dropped["asleep_bytes"], 3 * MiB)
        self.assertEqual((kept["used_bytes"], dropped["used_bytes"]), (5 * MiB, 3 * MiB))
        tags.resume(scratch)
        self.assertEqual([tag_state(weights)["asleep"], tag_state(scratch)["asleep"]], [True, False])
        tags.resume()
        self.assertFalse(tag_state(weights)["asleep"])
        self.assertEqual((w.ptr, s.ptr), addresses)
        self.assertEqual(w.tobytes(), pattern(5 * MiB, 1))
        s.copy_from_host(pattern(3 * MiB, 4))  # discarded contents: the memory is there to use
        self.assertEqual(s.tobytes(), pattern(3 * MiB, 4))

    def test_allocations_fail_while_paused_and_frees_are_taken(self):
        scratch = self.tag("scratch")
        with tags.region(scratch):
            a, b = rmm.DeviceBuffer(size=MiB), rmm.DeviceBuffer(size=MiB)
        tags.pause(scratch)
        with tags.region(scratch):  # entering a paused tag's region is allowed; allocating is not
            with self.assertRaisesRegex(rmm_rs.RmmError, "asleep") as caught:
                rmm.DeviceBuffer(size=10)
            self.assertEqual(caught.exception.code, rmm_rs.ERROR_INVALID_ARGUMENT)
            with self.assertRaisesRegex(rmm_rs.RmmError, "asleep"):
                rmm_rs.alloc(10)
        del a  # a free while paused
        gc.collect()
        self.assertEqual(tag_state(scratch)["used_bytes"], MiB)
        tags.resume(scratch)
        with tags.region(scratch):
            c = rmm.DeviceBuffer(size=MiB)
        self.assertEqual(tag_state(scratch)["used_bytes"], 2 * MiB)
        del b, c

    def test_pause_twice_resume_awake_and_unknown_tags_are_refused(self):
        weights = self.tag("weights")
        with tags.region(weights, keep=True):
            buffer = rmm.DeviceBuffer.to_device(b"kept")
        with self.assertRaisesRegex(rmm_rs.RmmError, "is not paused") as caught:
            tags.resume(weights)
        self.assertEqual(caught.exception.code, rmm_rs.ERROR_INVALID_ARGUMENT)
        tags.pause(weights)
        with self.assertRaisesRegex(rmm_rs.RmmError, "paused already") as caught:
            tags.pause(weights)
        self.assertEqual(caught.exception.code, rmm_rs.ERROR_INVALID_ARGUMENT)
        tags.pause()  # all tags: those asleep are left as they are
        with self.assertRaisesRegex(KeyError, "no tag"):
            tags.pause(self.tag("never"))
        with self.assertRaisesRegex(KeyError, "no tag"):
            tags.resume(self.tag("never"))
        with self.assertRaisesRegex(KeyError, "no memory on device 5"):
            tags.resume(weights, device=5)
        with self.assertRaisesRegex(KeyError, "no memory"):
            tags.resource(self.tag("never"))
        tags.resume(weights)
        tags.resume()  # nothing asleep among this test's tags: nothing to do
        self.assertEqual(buffer.tobytes(), b"kept")

    def test_a_tag_has_one_mode(self):
        weights = self.tag("weights")
        with tags.region(weights, keep=True):
            pass
        with self.assertRaisesRegex(ValueError, "keep=True"):
            with tags.region(weights):
                self.fail("entered")
        self.assertIs(rmm.mr.get_current_device_resource(), self.base)
        with self.assertRaises(TypeError):
            with tags.region(7):
                pass

    def test_regions_nest_and_give_back_what_the_device_had(self):
        outer, inner = self.tag("outer"), self.tag("inner")
        with tags.region(outer) as first:
            with tags.region(inner) as second:
                self.assertIs(rmm.mr.get_current_device_resource(), second)
                with tags.region(outer) as third:
                    self.assertIs(third, first)
                    self.assertIs(rmm.mr.get_current_device_resource(), first)
                self.assertIs(rmm.mr.get_current_device_resource(), second)
            self.assertIs(rmm.mr.get_current_device_resource(), first)
            with rmm_rs.Resource.of_device(0) as current:  # the C library's registry agrees
                self.assertEqual(current.handle != 0 and current.name, "expandable")
        self.assertIs(rmm.mr.get_current_device_resource(), self.base)
        with self.assertRaises(RuntimeError):
            with tags.region(outer):
                raise RuntimeError("the block failed")
        self.assertIs(rmm.mr.get_current_device_resource(), self.base)

    def test_regions_left_out_of_order(self):
        a, b = tags.region(self.tag("a")), tags.region(self.tag("b"))
        mr_a = a.__enter__()
        mr_b = b.__enter__()
        a.__exit__(None, None, None)  # the first one ends first: the second stays current
        self.assertIs(rmm.mr.get_current_device_resource(), mr_b)
        b.__exit__(None, None, None)
        self.assertIs(rmm.mr.get_current_device_resource(), self.base)
        self.assertIsNot(mr_a, mr_b)

    def test_a_configured_stack_comes_back_with_its_statistics(self):
        try:
            rmm_rs.configure("pool", initial_pool_size=MiB)  # statistics -> pool -> cuda
            with tags.region(self.tag("scratch")):
                inside = rmm.DeviceBuffer(size=4096)
            counted = rmm_rs.statistics().current_bytes
            outside = rmm.DeviceBuffer(size=4096)
            self.assertEqual(rmm_rs.statistics().current_bytes, counted + 4096)
            with rmm_rs.Resource.of_device(0) as current:
                self.assertEqual(current.name, "statistics")
            del inside, outside
        finally:
            reset()

    def test_a_resource_set_inside_a_block_stays(self):
        chosen = rmm.mr.CudaMemoryResource()
        with tags.region(self.tag("scratch")):
            rmm.mr.set_current_device_resource(chosen)
        self.assertIs(rmm.mr.get_current_device_resource(), chosen)

    def test_regions_of_several_threads(self):
        barrier = threading.Barrier(4)
        errors = []

        def worker(index: int) -> None:
            try:
                for _ in range(20):
                    with tags.region(self.tag(f"thread{index % 2}")):
                        barrier.wait(timeout=30)
                        buffer = rmm.DeviceBuffer(size=4096)
                        del buffer
            except BaseException as error:  # noqa: BLE001 - reported below
                errors.append(error)

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        self.assertEqual(errors, [])
        self.assertIs(rmm.mr.get_current_device_resource(), self.base)
        self.assertEqual(sum(tag_state(self.tag(f"thread{i}"))["used_bytes"] for i in range(2)), 0)

    def test_resume_when_the_device_is_full_fails_and_can_be_tried_again(self):
        weights = self.tag("weights")
        with tags.region(weights, keep=True):
            kept = rmm.DeviceBuffer.to_device(pattern(32 * MiB, 6))
        tags.pause(weights)
        other = rmm.mr.CudaMemoryResource()  # another process, in this one
        # What earlier tests' resources keep free goes back first: a wake short of memory takes
        # it (rmm-rs asks every resource of the device to give back before it gives up), and
        # the device would not be full for it (seen on an H100).
        rmm_rs.release_device_memory()
        taken = free_device_bytes() - 8 * MiB
        hog = other.allocate(taken)
        try:
            with self.assertRaises(rmm_rs.RmmOutOfMemoryError):
                tags.resume(weights)
            self.assertTrue(tag_state(weights)["asleep"])
            self.assertGreaterEqual(tag_state(weights)["kept_on_host_bytes"], 32 * MiB)
        finally:
            other.deallocate(hog, taken)
        tags.resume(weights)
        self.assertEqual(kept.tobytes(), pattern(32 * MiB, 6))


class TagDevicesTest(unittest.TestCase):
    @unittest.skipIf(ON_GPU, "needs two simulated devices")
    def test_a_tag_has_a_resource_per_device_and_pauses_on_each(self):
        out = run_child("""
            import rmm_rs as rmm
            from rmm_rs import sleep as tags
            assert rmm.get_device() == 0
            base1 = rmm.mr.get_per_device_resource(1)
            with tags.region("kv", keep=True, device=1) as on1:  # device 1's resource; device 0 keeps its own
                assert rmm.mr.get_per_device_resource(1) is on1 and rmm.mr.get_current_device_resource() is not on1
                assert on1.resource.device == 1
                rmm.set_device(1)
                b1 = rmm.DeviceBuffer.to_device(b"one")
                rmm.set_device(0)
            assert rmm.mr.get_per_device_resource(1) is base1
            with tags.region("kv", keep=True) as on0:
                b0 = rmm.DeviceBuffer.to_device(b"zero")
            assert on0 is not on1 and b0.mr is on0 and b1.mr is on1
            print(sorted((t["tag"], t["device"], t["used_bytes"]) for t in tags.tags()))
            tags.pause("kv", device=1)
            print([(t["device"], t["asleep"]) for t in tags.tags()])
            try:
                tags.pause("kv")  # device 1 is paused already: refused, and device 0 stays awake
            except rmm.RmmError as error:
                print("refused:", error)
            print([(t["device"], t["asleep"]) for t in tags.tags()])
            tags.pause("kv", device=0)
            tags.resume("kv")
            print([(t["device"], t["asleep"]) for t in tags.tags()], b0.tobytes(), b1.tobytes())
            """, env={"RMM_SIM_DEVICES": "2:256MiB"})
        self.assertIn("[('kv', 0, 256), ('kv', 1, 256)]", out.stdout)
        self.assertEqual(out.stdout.count("[(0, False), (1, True)]"), 2, out.stdout)
        self.assertIn("refused: RMM_ERROR_INVALID_ARGUMENT: rmm_rs.sleep.pause: tag 'kv' is paused already on device 1",
                      out.stdout)
        self.assertIn("[(0, False), (1, False)] b'zero' b'one'", out.stdout)


class GptOverASleepTest(unittest.TestCase):
    """The proof: training over a pause of both tags is bit-identical to training without."""

    STEPS, PAUSE_AT = 24, 12

    def setUp(self):
        reset()

    def tearDown(self):
        give_back_tags()
        reset()

    def train(self, run: str, pause=None):
        weights, scratch = f"gpt-{run}:weights", f"gpt-{run}:scratch"
        config = tiny_gpt.Config()
        model = tiny_gpt.TinyGPT(config, weights=lambda: tags.region(weights, keep=True),
                                 scratch=lambda: tags.region(scratch), seed=0)
        self.assertTrue(all(t.buffer.mr is tags.resource(weights) for t in model.params.values()))
        self.assertTrue(all(t.buffer.mr is tags.resource(scratch) for acts in model.acts for t in acts.values()))
        data = tiny_gpt.Batches(config, seed=1)
        losses = []
        for step in range(self.STEPS):
            if step == self.PAUSE_AT and pause is not None:
                pause(model, weights, scratch)
            losses.append(model.step(data.next()))
        state = model.state_bytes()
        del model
        gc.collect()
        return losses, state

    def test_training_goes_on_over_a_pause_bit_for_bit(self):
        plain_losses, plain_state = self.train("plain")
        self.assertLess(sum(plain_losses[-4:]), 0.75 * sum(plain_losses[:4]), plain_losses)  # it learns
        give_back_tags()
        start = free_device_bytes()
        seen = {}

        def pause(model, weights, scratch):
            addresses = [(name, t.ptr) for name, t in model.tensors()]
            state = model.state_bytes()
            tags.pause(weights)
            tags.pause(scratch)
            kept, dropped = tag_state(weights), tag_state(scratch)
            self.assertTrue(kept["asleep"] and dropped["asleep"])
            self.assertEqual((kept["reserved_bytes"], dropped["reserved_bytes"]), (0, 0))
            self.assertGreater(kept["used_bytes"], 0)
            self.assertGreater(dropped["used_bytes"], 0)  # the activation workspace, live and dropped
            self.assertGreaterEqual(kept["kept_on_host_bytes"], kept["used_bytes"])
            self.assertEqual(dropped["kept_on_host_bytes"], 0)
            asleep = free_device_bytes()
            self.assertGreaterEqual(asleep, start)  # the model holds no device memory
            for tag in (weights, scratch):
                with tags.region(tag, keep=tag == weights):
                    with self.assertRaisesRegex(rmm_rs.RmmError, "asleep"):
                        tiny_gpt.DeviceTensor(16)
            # Another process takes most of the device, writes all over it, and gives it back.
            other = rmm.mr.CudaMemoryResource()
            taken = asleep - 16 * MiB
            ptr = other.allocate(taken)
            if not ON_GPU:
                ctypes.memset(ptr, 0xA5, taken)
            other.deallocate(ptr, taken)
            tags.resume()
            self.assertEqual([(name, t.ptr) for name, t in model.tensors()], addresses)
            self.assertEqual(model.state_bytes(), state)
            seen.update(taken=taken, asleep=asleep)

        losses, state = self.train("sleep", pause)
        self.assertGreater(seen.get("taken", 0), 0, "the pause did not run")
        self.assertEqual([loss.hex() for loss in losses], [loss.hex() for loss in plain_losses])
        self.assertEqual(state, plain_state)


if __name__ == "__main__":
    unittest.main()
