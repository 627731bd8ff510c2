! Device buffers from Fortran: a buffer made from a Fortran array (c_loc) and copied back,
! resized, shrunk to fit and copied, read and written with rmmMemcpyAsync; bad handles; and the
! PyTorch and CuPy entry points once each. Only host memory is read on the host, so it runs on
! real GPUs too.
program test_device_buffer
  use, intrinsic :: iso_c_binding
  use rmm
  use ftest
  implicit none

  integer, parameter :: N = 1000
  integer(c_size_t), parameter :: BYTES = N * 8_c_size_t
  integer(c_int64_t), target :: src(N), back(N)
  integer(c_size_t), target :: capacity
  integer(c_size_t) :: size
  type(c_ptr) :: stream, buffer, copy, empty, address, ptr
  integer :: i

  call expect_ok(rmmSetDevice(0), 'rmmSetDevice(0)')
  call expect_ok(rmmStreamCreate(stream), 'rmmStreamCreate')
  src = [(int(i, c_int64_t), i = 1, N)]

  ! From a Fortran array and back.
  buffer = c_null_ptr
  call expect_ok(rmmDeviceBufferCreateFromHost(buffer, c_loc(src), BYTES, stream, c_null_ptr), &
    'rmmDeviceBufferCreateFromHost')
  call expect(c_associated(buffer), 'a buffer handle')
  back = 0
  call expect_ok(rmmDeviceBufferCopyToHost(buffer, c_loc(back), BYTES, stream), &
    'rmmDeviceBufferCopyToHost')
  call expect(all(back == src), 'the buffer holds the array')

  ! Resize within the capacity, shrink to fit, then grow (the kept bytes move along).
  call expect_ok(rmmDeviceBufferResize(buffer, BYTES / 2, stream), 'rmmDeviceBufferResize(half)')
  call expect_ok(rmmDeviceBufferSize(buffer, size, c_loc(capacity)), 'rmmDeviceBufferSize')
  call expect_equal(size, BYTES / 2, 'size after resizing to half')
  call expect_equal(capacity, BYTES, 'capacity after resizing to half')
  call expect_ok(rmmDeviceBufferShrinkToFit(buffer, stream), 'rmmDeviceBufferShrinkToFit')
  call expect_ok(rmmDeviceBufferSize(buffer, size, c_loc(capacity)), 'rmmDeviceBufferSize')
  call expect_equal(capacity, BYTES / 2, 'capacity after shrinking to fit')
  call expect_ok(rmmDeviceBufferResize(buffer, 2 * BYTES, stream), 'rmmDeviceBufferResize(2x)')
  call expect_ok(rmmDeviceBufferSize(buffer, size, c_null_ptr), 'rmmDeviceBufferSize(no capacity)')
  call expect_equal(size, 2 * BYTES, 'size after growing')

  ! A copy, written and read through its device address with rmmMemcpyAsync.
  copy = c_null_ptr
  call expect_ok(rmmDeviceBufferCopy(copy, buffer, stream, c_null_ptr), 'rmmDeviceBufferCopy')
  call expect_ok(rmmDeviceBufferSize(copy, size, c_null_ptr), 'rmmDeviceBufferSize(copy)')
  call expect_equal(size, 2 * BYTES, 'size of the copy')
  address = c_null_ptr
  call expect_ok(rmmDeviceBufferData(copy, address), 'rmmDeviceBufferData(copy)')
  call expect(c_associated(address), 'the copy has a device address')
  back = 0
  call expect_ok(rmmMemcpyAsync(c_loc(back), address, BYTES / 2, stream), &
    'rmmMemcpyAsync(device to host)')
  call expect_ok(rmmStreamSynchronize(stream), 'rmmStreamSynchronize')
  call expect(all(back(:N / 2) == src(:N / 2)) .and. all(back(N / 2 + 1:) == 0), &
    'the copy keeps the first half')
  src = -src
  call expect_ok(rmmMemcpyAsync(address, c_loc(src), BYTES, stream), &
    'rmmMemcpyAsync(host to device)')
  call expect_ok(rmmDeviceBufferResize(copy, BYTES, stream), 'rmmDeviceBufferResize(copy)')
  back = 0
  call expect_ok(rmmDeviceBufferCopyToHost(copy, c_loc(back), BYTES, stream), &
    'rmmDeviceBufferCopyToHost(copy)')
  call expect(all(back == src), 'the copy holds what rmmMemcpyAsync wrote')

  ! An empty buffer has no device address; the copy is freed on the default stream.
  empty = c_null_ptr
  call expect_ok(rmmDeviceBufferCreate(empty, 0_c_size_t, c_null_ptr, c_null_ptr), &
    'rmmDeviceBufferCreate(0 bytes)')
  address = transfer(-1_c_intptr_t, address)
  call expect_ok(rmmDeviceBufferData(empty, address), 'rmmDeviceBufferData(empty)')
  call expect(.not. c_associated(address), 'an empty buffer''s address is c_null_ptr')
  call expect_ok(rmmStreamSynchronize(stream), 'rmmStreamSynchronize')
  call expect_ok(rmmDeviceBufferSetStream(copy, c_null_ptr), 'rmmDeviceBufferSetStream')

  ! Bad handles: made up, NULL, destroyed.
  call expect_status(rmmDeviceBufferSize(transfer(int(z'1234', c_intptr_t), c_null_ptr), size, &
    c_null_ptr), RMM_ERROR_INVALID_HANDLE, 'rmmDeviceBufferSize of a made-up handle')
  call expect_status(rmmDeviceBufferResize(c_null_ptr, BYTES, stream), &
    RMM_ERROR_INVALID_HANDLE, 'rmmDeviceBufferResize(c_null_ptr)')
  call expect_ok(rmmDeviceBufferDestroy(copy), 'rmmDeviceBufferDestroy(copy)')
  call expect_status(rmmDeviceBufferCopyToHost(copy, c_loc(back), BYTES, stream), &
    RMM_ERROR_INVALID_HANDLE, 'rmmDeviceBufferCopyToHost of a destroyed buffer')
  call expect_status(rmmDeviceBufferDestroy(copy), RMM_ERROR_INVALID_HANDLE, 'destroy twice')
  call expect_ok(rmmDeviceBufferDestroy(c_null_ptr), 'rmmDeviceBufferDestroy(c_null_ptr)')
  call expect_ok(rmmDeviceBufferDestroy(empty), 'rmmDeviceBufferDestroy(empty)')
  call expect_ok(rmmDeviceBufferDestroy(buffer), 'rmmDeviceBufferDestroy(buffer)')

  ! The framework entry points: no status, c_null_ptr and a message on failure.
  ptr = rmmTorchAllocate(4096_c_intptr_t, 0_c_int32_t, stream)
  call expect(c_associated(ptr), 'rmmTorchAllocate')
  call rmmTorchDeallocate(ptr, 4096_c_intptr_t, 0_c_int32_t, stream)
  ptr = rmmTorchAllocate(-1_c_intptr_t, 0_c_int32_t, stream)
  call expect(.not. c_associated(ptr), 'rmmTorchAllocate(-1) fails')
  call expect(contains_text(rmm_last_error_message(), 'negative'), 'and says why')
  ptr = rmmCupyAllocate(c_null_ptr, 4096_c_size_t, 0_c_int32_t)
  call expect(c_associated(ptr), 'rmmCupyAllocate')
  call rmmCupyDeallocate(c_null_ptr, ptr, 0_c_int32_t)

  call expect_ok(rmmStreamSynchronize(stream), 'rmmStreamSynchronize')
  call expect_ok(rmmStreamDestroy(stream), 'rmmStreamDestroy')
  call ftest_finish('fortran device buffer')
end program test_device_buffer
