! Error codes on bad input, from Fortran: the texts of every code, NULL handles (c_null_ptr),
! garbage and destroyed handles (RMM_ERROR_INVALID_HANDLE), sizes no device has
! (RMM_ERROR_OUT_OF_MEMORY), double and foreign frees (RMM_ERROR_INVALID_ARGUMENT), bad devices,
! unsupported calls, and the message of each failure.
program test_errors
  use, intrinsic :: iso_c_binding
  use rmm
  use ftest
  implicit none

  integer(c_int), parameter :: codes(10) = [RMM_SUCCESS, RMM_ERROR_CUDA_ERROR, &
    RMM_ERROR_INVALID_ARGUMENT, RMM_ERROR_NOT_INITIALIZED, RMM_ERROR_OUT_OF_MEMORY, &
    RMM_ERROR_UNKNOWN, RMM_ERROR_IO, RMM_ERROR_NOT_SUPPORTED, RMM_ERROR_INVALID_HANDLE, &
    RMM_ERROR_ALREADY_INITIALIZED]
  integer(c_int) :: count

  call expect(rmm_last_error_message() == '', 'no message before any failure')
  call expect(c_associated(rmmGetLastErrorMessage()), 'rmmGetLastErrorMessage is never NULL')
  count = ftest_device_count()
  call version()
  call error_texts()
  call null_and_dead_handles()
  call expect_ok(rmmInitialize(c_null_ptr), 'rmmInitialize (the legacy calls need it)')
  call sizes()
  call bad_frees()
  call bad_devices_and_calls()
  call ftest_finish('fortran errors')

contains

  ! The loaded library's version is the module's, and needs no initialization.
  subroutine version()
    integer(c_int) :: major, minor, patch
    call expect_ok(rmmGetVersion(major, minor, patch), 'rmmGetVersion')
    call expect(major == RMM_VERSION_MAJOR .and. minor == RMM_VERSION_MINOR .and. &
      patch == RMM_VERSION_PATCH, 'the library version is the module version')
    call expect(RMM_VERSION == RMM_VERSION_MAJOR * 10000 + RMM_VERSION_MINOR * 100 + RMM_VERSION_PATCH, &
      'RMM_VERSION')
  end subroutine version

  ! The legacy values and the appended ones; a distinct, non-empty text for each.
  subroutine error_texts()
    character(len=:), allocatable :: text, other
    integer :: i, j
    call expect(all(codes == [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]), 'the values of the error codes')
    do i = 1, size(codes)
      text = rmm_error_string(codes(i))
      call expect(len(text) > 0, 'a text for every code')
      call expect(rmm_c_string(rmmGetErrorString(codes(i))) == text, 'rmmGetErrorString')
      call expect(index(text, rmm_c_string(rmmGetErrorName(codes(i))) // ': ') == 1, 'rmmGetErrorName')
      do j = 1, i - 1
        other = rmm_error_string(codes(j))
        call expect(text /= other, 'distinct texts: ' // text)
      end do
    end do
    text = rmm_error_string(-1)
    call expect(len(text) > 0, 'a text for an unknown code')
    do j = 1, size(codes)
      other = rmm_error_string(codes(j))
      call expect(text /= other, 'a text of its own for an unknown code: ' // text)
    end do
  end subroutine error_texts

  ! c_null_ptr, garbage and destroyed handles: RMM_ERROR_INVALID_HANDLE, nothing written.
  subroutine null_and_dead_handles()
    type(c_ptr) :: cuda, handles(3), out, ptr
    type(c_ptr), target :: previous
    type(rmmStatistics_t) :: counts
    integer(c_int) :: device
    integer(c_size_t) :: bytes
    character(len=:), allocatable :: text
    integer :: i

    call expect_ok(rmmCudaResourceCreate(cuda), 'rmmCudaResourceCreate')
    call expect_ok(rmmResourceDestroy(cuda), 'rmmResourceDestroy')
    handles = [c_null_ptr, transfer(int(z'1234', c_intptr_t), c_null_ptr), cuda]
    do i = 1, size(handles)
      ptr = c_null_ptr
      call expect_status(rmmResourceAllocate(handles(i), ptr, 64_c_size_t, c_null_ptr), &
        RMM_ERROR_INVALID_HANDLE, 'rmmResourceAllocate on a bad handle')
      call expect(.not. c_associated(ptr), 'nothing written on failure')
      call expect_status(rmmResourceDeallocate(handles(i), c_null_ptr, 0_c_size_t, c_null_ptr), &
        RMM_ERROR_INVALID_HANDLE, 'rmmResourceDeallocate on a bad handle')
      device = -5
      call expect_status(rmmResourceGetDevice(handles(i), device), RMM_ERROR_INVALID_HANDLE, &
        'rmmResourceGetDevice on a bad handle')
      call expect(device == -5, 'nothing written on failure')
      call expect_status(rmmResourceGetName(handles(i), out), RMM_ERROR_INVALID_HANDLE, &
        'rmmResourceGetName on a bad handle')
      previous = c_null_ptr
      call expect_status(rmmSetCurrentDeviceResource(handles(i), c_loc(previous)), &
        RMM_ERROR_INVALID_HANDLE, 'rmmSetCurrentDeviceResource of a bad handle')
      call expect(.not. c_associated(previous), 'nothing written on failure')
      call expect_status(rmmSetPerDeviceResource(0, handles(i), c_null_ptr), &
        RMM_ERROR_INVALID_HANDLE, 'rmmSetPerDeviceResource of a bad handle')
      call expect_status(rmmPoolResourceCreate(out, handles(i), 0_c_size_t, 0_c_size_t), &
        RMM_ERROR_INVALID_HANDLE, 'rmmPoolResourceCreate over a bad handle')
      call expect_status(rmmStatisticsAdaptorCreate(out, handles(i)), &
        RMM_ERROR_INVALID_HANDLE, 'rmmStatisticsAdaptorCreate over a bad handle')
      call expect_status(rmmStatisticsAdaptorGetCounts(handles(i), counts), &
        RMM_ERROR_INVALID_HANDLE, 'rmmStatisticsAdaptorGetCounts of a bad handle')
      call expect_status(rmmLimitingAdaptorGetAllocatedBytes(handles(i), bytes), &
        RMM_ERROR_INVALID_HANDLE, 'rmmLimitingAdaptorGetAllocatedBytes of a bad handle')
      call expect_status(rmmResourceRelease(handles(i), c_null_ptr), &
        RMM_ERROR_INVALID_HANDLE, 'rmmResourceRelease of a bad handle')
    end do
    ! Destroying c_null_ptr is a no-op; a destroyed or garbage handle is refused.
    call expect_ok(rmmResourceDestroy(c_null_ptr), 'rmmResourceDestroy(c_null_ptr)')
    call expect_status(rmmResourceDestroy(cuda), RMM_ERROR_INVALID_HANDLE, 'destroy twice')
    call expect_status(rmmResourceDestroy(handles(2)), RMM_ERROR_INVALID_HANDLE, &
      'destroy a garbage handle')
    text = rmm_last_error_message()
    call expect(rmm_c_string(rmmGetLastErrorMessage()) == text, 'rmmGetLastErrorMessage')
    call expect(contains_text(text, '0x1234'), 'the message names the handle: ' // text)
  end subroutine null_and_dead_handles

  ! SIZE_MAX and more than the device: RMM_ERROR_OUT_OF_MEMORY, with what the resource holds
  ! in the message.
  subroutine sizes()
    type(c_ptr) :: ptr, cuda, pool
    ptr = c_null_ptr
    call expect_status(rmmAlloc(ptr, -1_c_size_t, c_null_ptr, c_null_ptr, 0), &
      RMM_ERROR_OUT_OF_MEMORY, 'rmmAlloc(SIZE_MAX)')
    call expect(.not. c_associated(ptr), 'nothing written on failure')
    call expect(contains_text(rmm_last_error_message(), '18446744073709551615'), &
      'the size in the message: ' // rmm_last_error_message())
    call expect_ok(rmmCudaResourceCreate(cuda), 'rmmCudaResourceCreate')
    if (ftest_simulated()) then
      call expect_status(rmmResourceAllocate(cuda, ptr, 2_c_size_t**31, c_null_ptr), &
        RMM_ERROR_OUT_OF_MEMORY, '2 GiB of a 1 GiB simulated device')
    else
      call expect_status(rmmResourceAllocate(cuda, ptr, 2_c_size_t**50, c_null_ptr), &
        RMM_ERROR_OUT_OF_MEMORY, '1 PiB of a device')
    end if
    call expect_ok(rmmPoolResourceCreate(pool, cuda, 2_c_size_t**20, 2_c_size_t**22), &
      'rmmPoolResourceCreate')
    call expect_status(rmmResourceAllocate(pool, ptr, 2_c_size_t**23, c_null_ptr), &
      RMM_ERROR_OUT_OF_MEMORY, '8 MiB of a pool of at most 4 MiB')
    call expect(contains_text(rmm_last_error_message(), 'pool'), &
      'the pool explains itself: ' // rmm_last_error_message())
    call expect_ok(rmmResourceDestroy(pool), 'rmmResourceDestroy(pool)')
    call expect_ok(rmmResourceDestroy(cuda), 'rmmResourceDestroy(cuda)')
  end subroutine sizes

  ! Double frees, foreign pointers and wrong sizes: RMM_ERROR_INVALID_ARGUMENT, nothing freed.
  subroutine bad_frees()
    type(c_ptr) :: ptr, cuda, other
    integer(c_int64_t), target :: host_variable(4)
    integer(c_intptr_t) :: offset
    call expect_ok(rmmAlloc(ptr, 4096_c_size_t, c_null_ptr, c_null_ptr, 0), 'rmmAlloc')
    call expect_ok(rmmFree(ptr, c_null_ptr, c_null_ptr, 0), 'rmmFree')
    call expect_status(rmmFree(ptr, c_null_ptr, c_null_ptr, 0), RMM_ERROR_INVALID_ARGUMENT, &
      'rmmFree twice')
    call expect_status(rmmFree(c_loc(host_variable), c_null_ptr, c_null_ptr, 0), &
      RMM_ERROR_INVALID_ARGUMENT, 'rmmFree of a Fortran variable')
    call expect_ok(rmmFree(c_null_ptr, c_null_ptr, c_null_ptr, 0), 'rmmFree(c_null_ptr)')
    call expect_status(rmmRealloc(ptr, 64_c_size_t, c_null_ptr, c_null_ptr, 0), &
      RMM_ERROR_INVALID_ARGUMENT, 'rmmRealloc of freed memory')
    offset = -7
    call expect(rmmGetAllocationOffset(offset, c_loc(host_variable), c_null_ptr) /= RMM_SUCCESS, &
      'rmmGetAllocationOffset of host memory')
    call expect(offset == -7, 'nothing written on failure')
    call expect_status(rmmGetAllocationOffset(offset, c_null_ptr, c_null_ptr), &
      RMM_ERROR_INVALID_ARGUMENT, 'rmmGetAllocationOffset(c_null_ptr)')

    call expect_ok(rmmCudaResourceCreate(cuda), 'rmmCudaResourceCreate')
    call expect_ok(rmmCudaResourceCreate(other), 'rmmCudaResourceCreate')
    call expect_ok(rmmResourceAllocate(cuda, ptr, 1000_c_size_t, c_null_ptr), &
      'rmmResourceAllocate')
    call expect_status(rmmResourceDeallocate(cuda, ptr, 999_c_size_t, c_null_ptr), &
      RMM_ERROR_INVALID_ARGUMENT, 'rmmResourceDeallocate with another size')
    call expect_status(rmmResourceDeallocate(other, ptr, 1000_c_size_t, c_null_ptr), &
      RMM_ERROR_INVALID_ARGUMENT, 'rmmResourceDeallocate on another resource')
    call expect_ok(rmmResourceDeallocate(cuda, ptr, 1000_c_size_t, c_null_ptr), &
      'rmmResourceDeallocate')
    call expect_status(rmmResourceDeallocate(cuda, ptr, 1000_c_size_t, c_null_ptr), &
      RMM_ERROR_INVALID_ARGUMENT, 'rmmResourceDeallocate twice')
    call expect_ok(rmmResourceDestroy(other), 'rmmResourceDestroy')
    call expect_ok(rmmResourceDestroy(cuda), 'rmmResourceDestroy')
  end subroutine bad_frees

  subroutine bad_devices_and_calls()
    type(c_ptr) :: out, cuda, stream
    integer(c_size_t) :: bytes
    character(kind=c_char), target :: buffer(8)
    call expect_status(rmmSetDevice(-1), RMM_ERROR_INVALID_ARGUMENT, 'rmmSetDevice(-1)')
    call expect_status(rmmSetDevice(count), RMM_ERROR_INVALID_ARGUMENT, 'rmmSetDevice(count)')
    call expect_status(rmmGetPerDeviceResource(-1, out), RMM_ERROR_INVALID_ARGUMENT, &
      'rmmGetPerDeviceResource(-1)')
    call expect_status(rmmGetPerDeviceResource(count, out), RMM_ERROR_INVALID_ARGUMENT, &
      'rmmGetPerDeviceResource(count)')
    call expect_ok(rmmFinalize(), 'rmmFinalize')
    call expect_status(rmmFinalize(), RMM_ERROR_NOT_INITIALIZED, 'rmmFinalize uninitialized')
    call expect_ok(rmmInitialize(c_null_ptr), 'rmmInitialize again')
    call expect_ok(rmmCudaResourceCreate(cuda), 'rmmCudaResourceCreate')
    call expect_status(rmmPoolResourceGetSize(cuda, bytes), RMM_ERROR_NOT_SUPPORTED, &
      'rmmPoolResourceGetSize of a cuda resource')
    call expect_status(rmmLimitingAdaptorCreate(out, cuda, 0_c_size_t), &
      RMM_ERROR_INVALID_ARGUMENT, 'a limit of 0')
    call expect_status(rmmFixedSizeResourceCreate(out, cuda, 0_c_size_t, 0_c_size_t), &
      RMM_ERROR_INVALID_ARGUMENT, 'fixed-size blocks of 0 bytes')
    call expect_status(rmmBinningResourceAddBin(cuda, 1024_c_size_t, c_null_ptr), &
      RMM_ERROR_INVALID_ARGUMENT, 'rmmBinningResourceAddBin on a cuda resource')
    call expect_status(rmmTrackingAdaptorGetOutstanding(cuda, c_null_ptr, 0_c_size_t, bytes), &
      RMM_ERROR_INVALID_ARGUMENT, 'rmmTrackingAdaptorGetOutstanding of a cuda resource')
    call expect_status(rmmLoggingAdaptorFlush(cuda), RMM_ERROR_INVALID_ARGUMENT, &
      'rmmLoggingAdaptorFlush of a cuda resource')
    call expect_status(rmmResourceGetSnapshot(cuda, c_loc(buffer), 2_c_size_t, c_null_ptr), &
      RMM_ERROR_INVALID_ARGUMENT, 'a snapshot into 2 bytes')
    call expect_ok(rmmResourceDestroy(cuda), 'rmmResourceDestroy')
    call expect_status(rmmStreamDestroy(c_null_ptr), RMM_ERROR_INVALID_ARGUMENT, &
      'rmmStreamDestroy of the default stream')
    call expect_status(rmmStreamRegister(c_null_ptr), RMM_ERROR_INVALID_ARGUMENT, &
      'rmmStreamRegister of the default stream')
    call expect_status(rmmStreamUnregister(c_null_ptr), RMM_ERROR_INVALID_ARGUMENT, &
      'rmmStreamUnregister of the default stream')
    call expect_status(rmmStreamCreateWithFlags(stream, 2_c_int), RMM_ERROR_INVALID_ARGUMENT, &
      'rmmStreamCreateWithFlags with unknown flags')
    call expect_ok(rmmStreamCreateWithFlags(stream, RMM_STREAM_NON_BLOCKING), 'rmmStreamCreateWithFlags')
    call expect_ok(rmmStreamDestroy(stream), 'rmmStreamDestroy of a non-blocking stream')
    call expect_ok(rmmStreamCreate(stream), 'rmmStreamCreate')
    call expect_ok(rmmStreamUnregister(stream), 'rmmStreamUnregister')
    call expect_ok(rmmStreamRegister(stream), 'rmmStreamRegister')
    call expect_ok(rmmStreamDestroy(stream), 'rmmStreamDestroy')
  end subroutine bad_devices_and_calls

end program test_errors
