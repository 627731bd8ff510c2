! Sleep and wake from Fortran (docs/src/sleep.md): a pool over an expandable resource sleeps
! keeping a live block's contents (copied in and out with rmmMemcpyAsync, so that it runs on a
! real GPU too) and wakes with the block at the same address; allocations are refused while it
! sleeps and frees are taken; discard mode; bad calls get their codes; the device's current
! resource sleeps and wakes without a handle, rmm_allocate refused meanwhile.
program test_sleep
  use, intrinsic :: iso_c_binding
  use rmm
  use ftest
  implicit none

  integer(c_size_t), parameter :: MiB = 2_c_size_t**20
  integer, parameter :: N = 3 * 2**20 / 8
  integer(c_size_t), parameter :: BYTES = N * 8_c_size_t
  integer(c_int64_t), target :: src(N), back(N)
  type(c_ptr) :: expandable, pool, cuda, gone, stream, block, kept_at, refused, freed_asleep
  type(c_ptr), target :: previous, restored
  integer(c_int) :: asleep, count, s, i
  real(c_float), pointer :: routed(:), none(:)

  count = ftest_device_count()
  call expect_ok(rmmSetDevice(0), 'rmmSetDevice(0)')
  call expect_ok(rmmStreamCreate(stream), 'rmmStreamCreate')
  do i = 1, N
    src(i) = int(i, c_int64_t) * 1000003_c_int64_t - 7_c_int64_t
  end do

  ! Keep: a pool over an expandable resource, a live block of 3 MiB and one freed while asleep.
  call expect_ok(rmmExpandableResourceCreate(expandable, 0_c_size_t), 'rmmExpandableResourceCreate')
  call expect_ok(rmmPoolResourceCreate(pool, expandable, 0_c_size_t, 0_c_size_t), &
    'rmmPoolResourceCreate')
  block = c_null_ptr
  call expect_ok(rmmResourceAllocate(pool, block, BYTES, stream), 'allocate 3 MiB')
  freed_asleep = c_null_ptr
  call expect_ok(rmmResourceAllocate(pool, freed_asleep, MiB, stream), 'allocate 1 MiB')
  kept_at = block
  call expect_ok(rmmMemcpyAsync(block, c_loc(src), BYTES, stream), 'rmmMemcpyAsync(host to device)')
  call expect_ok(rmmStreamSynchronize(stream), 'rmmStreamSynchronize')

  asleep = -1
  call expect_ok(rmmResourceIsAsleep(pool, asleep), 'rmmResourceIsAsleep (awake)')
  call expect_equal(asleep, 0_c_int, 'awake before the sleep')
  call expect_ok(rmmResourceSleep(pool, RMM_SLEEP_KEEP, stream), 'rmmResourceSleep(keep)')
  asleep = -1
  call expect_ok(rmmResourceIsAsleep(pool, asleep), 'rmmResourceIsAsleep(pool, asleep)')
  call expect_equal(asleep, 1_c_int, 'the pool sleeps')
  asleep = -1
  call expect_ok(rmmResourceIsAsleep(expandable, asleep), 'rmmResourceIsAsleep(expandable, asleep)')
  call expect_equal(asleep, 1_c_int, 'the expandable resource under it sleeps')
  refused = c_null_ptr
  call expect_status(rmmResourceAllocate(pool, refused, MiB, stream), RMM_ERROR_INVALID_ARGUMENT, &
    'an allocation from a sleeping pool')
  call expect(.not. c_associated(refused), 'a refused allocation writes no pointer')
  call expect_status(rmmResourceAllocate(expandable, refused, 100_c_size_t, c_null_ptr), &
    RMM_ERROR_INVALID_ARGUMENT, 'an allocation from a sleeping expandable resource')
  call expect_ok(rmmResourceDeallocate(pool, freed_asleep, MiB, stream), 'a free while asleep')
  call expect_status(rmmResourceSleep(pool, RMM_SLEEP_DISCARD, stream), RMM_ERROR_INVALID_ARGUMENT, &
    'sleeping twice')
  call expect_ok(rmmResourceWake(pool, stream), 'rmmResourceWake')
  asleep = -1
  call expect_ok(rmmResourceIsAsleep(pool, asleep), 'rmmResourceIsAsleep (awake again)')
  call expect_equal(asleep, 0_c_int, 'awake after the wake')
  call expect(c_associated(block, kept_at), 'the block keeps its address')
  back = 0
  call expect_ok(rmmMemcpyAsync(c_loc(back), block, BYTES, stream), 'rmmMemcpyAsync(device to host)')
  call expect_ok(rmmStreamSynchronize(stream), 'rmmStreamSynchronize')
  call expect(all(back == src), 'keep mode brings the contents back')
  call expect_status(rmmResourceWake(pool, stream), RMM_ERROR_INVALID_ARGUMENT, 'waking one that is awake')

  ! Discard: the block is usable again after the wake, at its address.
  call expect_ok(rmmResourceSleep(expandable, RMM_SLEEP_DISCARD, c_null_ptr), 'rmmResourceSleep(discard)')
  call expect_ok(rmmResourceWake(expandable, c_null_ptr), 'rmmResourceWake after discard')
  src = -src
  call expect_ok(rmmMemcpyAsync(block, c_loc(src), BYTES, stream), 'rmmMemcpyAsync after discard')
  back = 0
  call expect_ok(rmmMemcpyAsync(c_loc(back), block, BYTES, stream), 'rmmMemcpyAsync back after discard')
  call expect_ok(rmmStreamSynchronize(stream), 'rmmStreamSynchronize')
  call expect(all(back == src), 'the woken block holds what was written')
  call expect_ok(rmmResourceDeallocate(pool, block, BYTES, stream), 'free after the wake')

  ! Bad calls.
  call expect_status(rmmResourceSleep(pool, 7_c_int32_t, stream), RMM_ERROR_INVALID_ARGUMENT, 'an unknown mode')
  call expect_status(rmmResourceSleep(c_null_ptr, RMM_SLEEP_KEEP, stream), RMM_ERROR_INVALID_HANDLE, &
    'rmmResourceSleep(c_null_ptr)')
  call expect_status(rmmResourceWake(c_null_ptr, stream), RMM_ERROR_INVALID_HANDLE, 'rmmResourceWake(c_null_ptr)')
  call expect_status(rmmResourceIsAsleep(c_null_ptr, asleep), RMM_ERROR_INVALID_HANDLE, &
    'rmmResourceIsAsleep(c_null_ptr)')
  call expect_ok(rmmCudaResourceCreate(cuda), 'rmmCudaResourceCreate')
  call expect_status(rmmResourceSleep(cuda, RMM_SLEEP_KEEP, stream), RMM_ERROR_NOT_SUPPORTED, 'sleeping a cuda resource')
  call expect_status(rmmResourceWake(cuda, stream), RMM_ERROR_NOT_SUPPORTED, 'waking a cuda resource')
  asleep = 12345
  call expect_status(rmmResourceIsAsleep(cuda, asleep), RMM_ERROR_NOT_SUPPORTED, 'rmmResourceIsAsleep(cuda)')
  call expect_equal(asleep, 12345_c_int, 'a refused call writes nothing')
  call expect_ok(rmmExpandableResourceCreate(gone, 0_c_size_t), 'rmmExpandableResourceCreate(gone)')
  call expect_ok(rmmResourceDestroy(gone), 'rmmResourceDestroy(gone)')
  call expect_status(rmmResourceSleep(gone, RMM_SLEEP_KEEP, stream), RMM_ERROR_INVALID_HANDLE, 'a destroyed handle')
  call expect_status(rmmDeviceSleep(count, RMM_SLEEP_KEEP, stream), RMM_ERROR_INVALID_ARGUMENT, &
    'rmmDeviceSleep of a device that does not exist')
  call expect_status(rmmDeviceWake(-1_c_int, stream), RMM_ERROR_INVALID_ARGUMENT, &
    'rmmDeviceWake of a device that does not exist')

  ! The device's current resource, without a handle: first one that cannot sleep.
  previous = c_null_ptr
  call expect_ok(rmmSetPerDeviceResource(0_c_int, cuda, c_loc(previous)), 'rmmSetPerDeviceResource(cuda)')
  call expect_status(rmmDeviceSleep(0_c_int, RMM_SLEEP_KEEP, stream), RMM_ERROR_NOT_SUPPORTED, &
    'rmmDeviceSleep over a cuda resource')
  restored = c_null_ptr
  call expect_ok(rmmSetPerDeviceResource(0_c_int, pool, c_loc(restored)), 'rmmSetPerDeviceResource(pool)')
  call expect_ok(rmmResourceDestroy(restored), 'rmmResourceDestroy(the cuda resource handed back)')
  call rmm_allocate(routed, 1000)
  call expect_ok(rmmDeviceSleep(0_c_int, RMM_SLEEP_KEEP, stream), 'rmmDeviceSleep(keep)')
  asleep = -1
  call expect_ok(rmmResourceIsAsleep(pool, asleep), 'rmmResourceIsAsleep after rmmDeviceSleep')
  call expect_equal(asleep, 1_c_int, 'rmmDeviceSleep put the pool to sleep')
  call rmm_allocate(none, 1000, status=s)
  call expect_status(s, RMM_ERROR_INVALID_ARGUMENT, 'rmm_allocate while the device sleeps')
  call expect(.not. associated(none), 'a refused rmm_allocate leaves the pointer disassociated')
  call rmm_free(routed, status=s)
  call expect_ok(s, 'rmm_free while the device sleeps')
  call expect_status(rmmDeviceSleep(0_c_int, RMM_SLEEP_DISCARD, stream), RMM_ERROR_INVALID_ARGUMENT, &
    'rmmDeviceSleep twice')
  call expect_ok(rmmDeviceWake(0_c_int, stream), 'rmmDeviceWake')
  call expect_status(rmmDeviceWake(0_c_int, stream), RMM_ERROR_INVALID_ARGUMENT, 'waking the awake device resource')
  call rmm_allocate(routed, 1000)
  call rmm_free(routed)
  restored = c_null_ptr
  call expect_ok(rmmSetPerDeviceResource(0_c_int, previous, c_loc(restored)), 'rmmSetPerDeviceResource(previous)')
  call expect_ok(rmmResourceDestroy(restored), 'rmmResourceDestroy(restored)')
  call expect_ok(rmmResourceDestroy(previous), 'rmmResourceDestroy(previous)')

  call expect_ok(rmmStreamSynchronize(stream), 'rmmStreamSynchronize')
  call expect_ok(rmmStreamDestroy(stream), 'rmmStreamDestroy')
  call expect_ok(rmmResourceDestroy(cuda), 'rmmResourceDestroy(cuda)')
  call expect_ok(rmmResourceDestroy(pool), 'rmmResourceDestroy(pool)')
  call expect_ok(rmmResourceDestroy(expandable), 'rmmResourceDestroy(expandable)')
  call ftest_finish('fortran sleep')
end program test_sleep
