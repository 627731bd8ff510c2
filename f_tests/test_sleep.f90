! Sleep and wake from Fortran (docs/src/sleep.md): an expandable resource puts a live block to
! sleep and wakes it at the same address; allocations are refused while it sleeps; bad calls
! get their codes; the device's current resource sleeps without a handle.
program test_sleep
  use, intrinsic :: iso_c_binding
  use rmm
  use ftest
  implicit none

  integer(c_size_t), parameter :: MiB = 2_c_size_t**20
  type(c_ptr) :: expandable, cuda, refused
  type(c_ptr), target :: previous, restored
  type(c_ptr) :: block, kept_at
  integer(c_int) :: asleep

  call expect_ok(rmmSetDevice(0), 'rmmSetDevice(0)')
  call expect_ok(rmmExpandableResourceCreate(expandable, 0_c_size_t), 'rmmExpandableResourceCreate')
  block = c_null_ptr
  call expect_ok(rmmResourceAllocate(expandable, block, 3 * MiB, c_null_ptr), 'allocate 3 MiB')
  kept_at = block

  asleep = -1
  call expect_ok(rmmResourceIsAsleep(expandable, asleep), 'rmmResourceIsAsleep (awake)')
  call expect_equal(asleep, 0, 'awake before the sleep')
  call expect_ok(rmmResourceSleep(expandable, RMM_SLEEP_KEEP, c_null_ptr), 'rmmResourceSleep(keep)')
  call expect_ok(rmmResourceIsAsleep(expandable, asleep), 'rmmResourceIsAsleep (asleep)')
  call expect_equal(asleep, 1, 'asleep after the sleep')
  refused = c_null_ptr
  call expect_status(rmmResourceAllocate(expandable, refused, MiB, c_null_ptr), RMM_ERROR_INVALID_ARGUMENT, &
    'an allocation from a sleeping resource')
  call expect_status(rmmResourceSleep(expandable, RMM_SLEEP_DISCARD, c_null_ptr), RMM_ERROR_INVALID_ARGUMENT, &
    'sleeping twice')
  call expect_status(rmmResourceSleep(expandable, 7_c_int32_t, c_null_ptr), RMM_ERROR_INVALID_ARGUMENT, &
    'an unknown mode')
  call expect_ok(rmmResourceWake(expandable, c_null_ptr), 'rmmResourceWake')
  call expect_status(rmmResourceWake(expandable, c_null_ptr), RMM_ERROR_INVALID_ARGUMENT, 'waking one that is awake')
  call expect(c_associated(block, kept_at), 'the block keeps its address')
  call expect_ok(rmmResourceDeallocate(expandable, block, 3 * MiB, c_null_ptr), 'free after the wake')

  ! Memory rmm-rs does not map itself cannot sleep.
  call expect_ok(rmmCudaResourceCreate(cuda), 'rmmCudaResourceCreate')
  call expect_status(rmmResourceSleep(cuda, RMM_SLEEP_KEEP, c_null_ptr), RMM_ERROR_NOT_SUPPORTED, 'sleeping a cuda resource')
  call expect_ok(rmmResourceDestroy(cuda), 'rmmResourceDestroy(cuda)')

  ! The device's current resource, without a handle.
  previous = c_null_ptr
  call expect_ok(rmmSetPerDeviceResource(0, expandable, c_loc(previous)), 'rmmSetPerDeviceResource(expandable)')
  call expect_ok(rmmDeviceSleep(0, RMM_SLEEP_DISCARD, c_null_ptr), 'rmmDeviceSleep(discard)')
  call expect_ok(rmmDeviceWake(0, c_null_ptr), 'rmmDeviceWake')
  call expect_status(rmmDeviceWake(0, c_null_ptr), RMM_ERROR_INVALID_ARGUMENT, 'waking the awake device resource')
  restored = c_null_ptr
  call expect_ok(rmmSetPerDeviceResource(0, previous, c_loc(restored)), 'rmmSetPerDeviceResource(previous)')
  call expect_ok(rmmResourceDestroy(restored), 'rmmResourceDestroy(restored)')
  call expect_ok(rmmResourceDestroy(previous), 'rmmResourceDestroy(previous)')
  call expect_ok(rmmResourceDestroy(expandable), 'rmmResourceDestroy(expandable)')
  print '(a)', 'PASS: test_sleep'
end program test_sleep
