! The legacy API from Fortran: rmmInitialize with rmmOptions_t (a pool on each device, event
! logging), rmmIsInitialized reading the options back, rmmAlloc / rmmRealloc / rmmFree with a
! call site, rmmGetInfo, rmmGetAllocationOffset, the event log (rmmLogSize, rmmGetLog,
! rmmWriteLog), rmmFinalize (live memory stays valid) and rmmInitialize(c_null_ptr).
program test_lifecycle
  use, intrinsic :: iso_c_binding
  use rmm
  use ftest
  implicit none

  type(rmmOptions_t), target :: options, in_force
  type(c_ptr) :: ptr, moved, resource
  character(kind=c_char), target :: file(19) = ['t', 'e', 's', 't', '_', 'l', 'i', 'f', 'e', &
    'c', 'y', 'c', 'l', 'e', '.', 'f', '9', '0', c_null_char]
  character(kind=c_char), allocatable :: buffer(:)
  character(len=:), allocatable :: name, log, written
  integer(c_size_t) :: free_bytes, total_bytes, log_size
  integer(c_intptr_t) :: offset
  integer(c_int) :: count, device, s
  integer(c_int8_t), pointer :: bytes(:)
  real(c_double), pointer :: kept(:), refused(:)
  logical :: simulated
  integer :: i

  simulated = ftest_simulated()
  count = ftest_device_count()
  call expect(.not. logical(rmmIsInitialized(c_null_ptr)), 'not initialized at start')
  call expect_status(rmmFinalize(), RMM_ERROR_NOT_INITIALIZED, 'rmmFinalize before rmmInitialize')

  ! A pool of 64 MiB (up to 256 MiB) on each of the first two devices, with the event log.
  options%allocation_mode = PoolAllocation
  options%initial_pool_size = 64_c_size_t * 2**20
  options%maximum_pool_size = 256_c_size_t * 2**20
  options%enable_logging = .true.
  options%devices%count = min(count, 2)
  options%devices%ids(1:2) = [0, min(count, 2) - 1]
  call expect_ok(rmmInitialize(c_loc(options)), 'rmmInitialize(pool, 2 devices)')
  call expect_status(rmmInitialize(c_loc(options)), RMM_ERROR_ALREADY_INITIALIZED, &
    'rmmInitialize twice')
  call expect(logical(rmmIsInitialized(c_null_ptr)), 'rmmIsInitialized(c_null_ptr)')
  call expect(logical(rmmIsInitialized(c_loc(in_force))), 'rmmIsInitialized(options)')
  call expect(in_force%allocation_mode == PoolAllocation, 'options in force: mode')
  call expect(in_force%initial_pool_size == 64_c_size_t * 2**20, 'options in force: initial')
  call expect(in_force%maximum_pool_size == 256_c_size_t * 2**20, 'options in force: maximum')
  call expect(logical(in_force%enable_logging), 'options in force: logging')
  call expect(in_force%devices%count == min(count, 2), 'options in force: devices%count')
  call expect(all(in_force%devices%ids(1:2) == [0, min(count, 2) - 1]), 'options in force: devices')

  ! Each device set up has a pool as its resource.
  do device = 0, min(count, 2) - 1
    call expect_ok(rmmSetDevice(device), 'rmmSetDevice')
    call expect_ok(rmmGetCurrentDeviceResource(resource), 'rmmGetCurrentDeviceResource')
    call expect_ok(rmm_resource_get_name(resource, name), 'rmm_resource_get_name')
    call expect(name == 'pool', 'rmmInitialize(PoolAllocation) installs a pool, not ' // name)
    call expect_ok(rmmResourceGetDevice(resource, s), 'rmmResourceGetDevice')
    call expect_equal(s, device, 'the pool belongs to its device')
    call expect_ok(rmmResourceDestroy(resource), 'rmmResourceDestroy')
  end do
  call expect_ok(rmmSetDevice(0), 'rmmSetDevice(0)')
  call expect_ok(rmmGetDevice(device), 'rmmGetDevice')
  call expect_equal(device, 0, 'rmmGetDevice after rmmSetDevice(0)')

  ! rmmAlloc with a call site, rmmGetAllocationOffset, rmmRealloc keeps the contents.
  call expect_ok(rmmAlloc(ptr, 1000_c_size_t, c_null_ptr, c_loc(file), 42), 'rmmAlloc')
  call expect(c_associated(ptr), 'rmmAlloc gives memory')
  call expect_ok(rmmGetAllocationOffset(offset, ptr, c_null_ptr), 'rmmGetAllocationOffset')
  call expect(offset >= 0, 'the offset of a pooled block')
  call expect_ok(rmmGetAllocationOffset(offset, transfer(address_of(ptr) + 100, ptr), c_null_ptr), &
    'rmmGetAllocationOffset(ptr + 100)')
  call expect(offset >= 100, 'the offset of ptr + 100')
  if (simulated) then
    call c_f_pointer(ptr, bytes, [1000])
    bytes = [(int(mod(i, 127), c_int8_t), i = 1, 1000)]
  end if
  moved = ptr
  call expect_ok(rmmRealloc(moved, 5000_c_size_t, c_null_ptr, c_loc(file), 43), 'rmmRealloc')
  call expect(c_associated(moved), 'rmmRealloc gives memory')
  if (simulated) then
    call c_f_pointer(moved, bytes, [5000])
    call expect(all(bytes(1:1000) == [(int(mod(i, 127), c_int8_t), i = 1, 1000)]), &
      'rmmRealloc keeps the contents')
  end if
  call expect_ok(rmmGetInfo(free_bytes, total_bytes, c_null_ptr), 'rmmGetInfo')
  call expect(total_bytes > 0 .and. free_bytes <= total_bytes, 'rmmGetInfo figures')
  if (simulated) call expect_equal(total_bytes, 2_c_size_t**30, 'a 1 GiB simulated device')
  call expect_ok(rmmFree(moved, c_null_ptr, c_loc(file), 44), 'rmmFree')

  ! The event log: legacy RMM's CSV, one line per call, with the call site.
  log_size = rmmLogSize()
  call expect(log_size > 0, 'rmmLogSize')
  allocate (buffer(log_size + 1))
  call expect_ok(rmmGetLog(buffer, size(buffer, kind=c_size_t)), 'rmmGetLog')
  log = rmm_c_string(buffer)
  call expect(len(log) == log_size, 'rmmGetLog copies rmmLogSize bytes')
  call expect(index(log, 'Event Type,Device ID,Address,Stream,Size (bytes)') == 1, &
    'the log starts with legacy RMM''s header')
  call expect(contains_text(log, 'test_lifecycle.f90:42') .and. &
    contains_text(log, 'test_lifecycle.f90:43') .and. contains_text(log, 'test_lifecycle.f90:44'), &
    'the log names the call sites: ' // log)
  call expect_ok(rmm_get_log(written), 'rmm_get_log')
  call expect(written == log, 'rmm_get_log gives the same text')
  call expect_ok(rmmWriteLog('fortran_lifecycle_log.csv' // c_null_char), 'rmmWriteLog')
  written = read_text_file('fortran_lifecycle_log.csv')
  call expect(written == log, 'rmmWriteLog writes the same text')
  call expect_ok(rmm_write_log('fortran_lifecycle_log2.csv'), 'rmm_write_log')
  call expect(read_text_file('fortran_lifecycle_log2.csv') == log, 'rmm_write_log')
  call expect_status(rmm_write_log('/nonexistent-dir/fortran.csv'), RMM_ERROR_IO, &
    'rmm_write_log to a folder that does not exist')

  ! rmmFinalize: new allocations are refused, live ones can still be freed.
  call rmm_allocate(kept, 100)
  call expect_ok(rmmFinalize(), 'rmmFinalize')
  call expect(.not. logical(rmmIsInitialized(c_loc(in_force))), 'not initialized after rmmFinalize')
  call rmm_allocate(refused, 100, status=s)
  call expect_status(s, RMM_ERROR_NOT_INITIALIZED, 'rmm_allocate after rmmFinalize')
  call expect(.not. associated(refused), 'a refused rmm_allocate nullifies')
  call expect_status(rmmAlloc(ptr, 16_c_size_t, c_null_ptr, c_null_ptr, 0), &
    RMM_ERROR_NOT_INITIALIZED, 'rmmAlloc after rmmFinalize')
  call rmm_free(kept, status=s)
  call expect_ok(s, 'rmm_free after rmmFinalize of memory allocated before')
  call expect_status(rmmFinalize(), RMM_ERROR_NOT_INITIALIZED, 'rmmFinalize twice')

  ! rmmInitialize(c_null_ptr): the defaults, as the default rmmOptions_t says.
  call expect_ok(rmmInitialize(c_null_ptr), 'rmmInitialize(c_null_ptr)')
  call expect(logical(rmmIsInitialized(c_loc(in_force))), 'initialized with the defaults')
  call expect(in_force%allocation_mode == CudaDefaultAllocation, 'default mode')
  call expect(.not. logical(in_force%enable_logging), 'default: no logging')
  call expect_ok(rmmGetCurrentDeviceResource(resource), 'rmmGetCurrentDeviceResource')
  call expect_ok(rmm_resource_get_name(resource, name), 'rmm_resource_get_name')
  call expect(name == 'cuda', 'rmmInitialize(c_null_ptr) installs device memory, not ' // name)
  call expect_ok(rmmResourceDestroy(resource), 'rmmResourceDestroy')
  call rmm_allocate(kept, 100)
  call rmm_free(kept)
  call expect_ok(rmmFinalize(), 'rmmFinalize')

  call ftest_finish('fortran lifecycle')
end program test_lifecycle
