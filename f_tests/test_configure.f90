! rmmConfigure (the RMM_ALLOC_CONF string) from Fortran, rmmGetReport and
! rmmPoolResourceGetFree: a bad string changes nothing; a good one gives the device a stack
! (statistics over a pool) on first use, whose figures the report shows. And
! rmmResourceCreateFromSpec, which reads the same language.
program test_configure
  use, intrinsic :: iso_c_binding
  use rmm
  use ftest
  implicit none

  integer(c_size_t), parameter :: MiB = 2_c_size_t**20
  character(kind=c_char), target :: bad(15) = ['r', 'e', 's', 'o', 'u', 'r', 'c', 'e', ':', &
    'b', 'o', 'g', 'u', 's', c_null_char]
  character(len=:), allocatable :: report, name
  integer(c_size_t), target :: length
  integer(c_size_t) :: reserved, free_bytes, parsed
  type(c_ptr) :: current, cuda, from_spec
  real(c_float), pointer :: a(:), b(:)

  ! rmmParseSize, the one reading of sizes: SI units are powers of 1000, binary ones powers of
  ! 1024, and a letter alone is refused as ambiguous.
  call expect_ok(rmmParseSize(parsed, '1GB' // c_null_char), 'rmmParseSize("1GB")')
  call expect_equal(parsed, 1000000000_c_size_t, '1GB is 10**9 bytes')
  call expect_ok(rmmParseSize(parsed, '1.5 GiB' // c_null_char), 'rmmParseSize("1.5 GiB")')
  call expect_equal(parsed, 3 * 2_c_size_t**29, '1.5 GiB is 1.5 * 2**30 bytes')
  call expect_status(rmmParseSize(parsed, '4G' // c_null_char), RMM_ERROR_INVALID_ARGUMENT, &
    'rmmParseSize("4G")')
  call expect(contains_text(rmm_last_error_message(), '4G is ambiguous: write 4GiB'), &
    'the message says why: ' // rmm_last_error_message())
  call expect_equal(parsed, 3 * 2_c_size_t**29, 'a refused size leaves the result alone')

  ! Refused strings change nothing.
  call expect_status(rmmConfigure(c_loc(bad)), RMM_ERROR_INVALID_ARGUMENT, &
    'rmmConfigure("resource:bogus")')
  call expect(contains_text(rmm_last_error_message(), 'bogus'), &
    'the message names what it cannot parse')
  call expect_status(rmm_configure('pool:initial=lots'), RMM_ERROR_INVALID_ARGUMENT, &
    'rmm_configure("pool:initial=lots")')
  call expect(contains_text(rmm_last_error_message(), 'at column 14 ("lots")'), &
    'the message points at the bad size: ' // rmm_last_error_message())
  call expect_status(rmm_configure('stats:maybe'), RMM_ERROR_INVALID_ARGUMENT, &
    'rmm_configure("stats:maybe")')
  call expect_ok(rmm_get_report(report), 'rmm_get_report')
  call expect(report == '', 'nothing configured: no report')

  ! A pool of 8 MiB with statistics and the report.
  call expect_ok(rmm_configure('resource:pool, initial_pool_size:8MiB, stats:1, report:1'), &
    'rmm_configure')
  call rmm_allocate(a, 3 * 2**18)           ! 3 MiB
  call rmm_allocate(b, 250)                 ! 1000 bytes
  call expect_ok(rmmGetCurrentDeviceResource(current), 'rmmGetCurrentDeviceResource')
  call expect_ok(rmm_resource_get_name(current, name), 'rmm_resource_get_name')
  call expect(name == 'statistics', 'statistics over the pool, not ' // name)
  call expect_ok(rmmPoolResourceGetSize(current, reserved), 'rmmPoolResourceGetSize')
  call expect_equal(reserved, 8 * MiB, 'the pool reserved 8 MiB')
  call expect_ok(rmmPoolResourceGetFree(current, free_bytes), 'rmmPoolResourceGetFree')
  call expect(free_bytes < 5 * MiB .and. free_bytes >= 5 * MiB - 4096, &
    'the pool has what the two arrays leave free')

  call expect_ok(rmm_get_report(report), 'rmm_get_report')
  call expect(contains_text(report, 'device 0') .and. contains_text(report, 'pool') .and. &
    contains_text(report, '2 allocations'), 'the report: ' // report)
  length = 0
  call expect_ok(rmmGetReport(c_null_ptr, 0_c_size_t, c_loc(length)), 'rmmGetReport(length)')
  call expect(length == len(report), 'the report length')

  call rmm_free(a)
  call rmm_free(b)
  call expect_ok(rmmPoolResourceGetFree(current, free_bytes), 'rmmPoolResourceGetFree')
  call expect_equal(free_bytes, 8 * MiB, 'everything free again')
  call expect_ok(rmmCudaResourceCreate(cuda), 'rmmCudaResourceCreate')
  call expect_status(rmmPoolResourceGetFree(cuda, free_bytes), RMM_ERROR_NOT_SUPPORTED, &
    'rmmPoolResourceGetFree of a cuda resource')
  call expect_ok(rmmResourceDestroy(cuda), 'rmmResourceDestroy(cuda)')
  call expect_ok(rmmResourceDestroy(current), 'rmmResourceDestroy(current)')

  ! rmmResourceCreateFromSpec: the same language for one resource of a device.
  call expect_status(rmmResourceCreateFromSpec('statistics/pool:inital=1GiB' // c_null_char, 0_c_int, &
    from_spec), RMM_ERROR_INVALID_ARGUMENT, 'rmmResourceCreateFromSpec of a misspelt key')
  call expect(contains_text(rmm_last_error_message(), 'at column 17 ("inital")'), &
    'the message points at the misspelt key: ' // rmm_last_error_message())
  call expect_ok(rmmResourceCreateFromSpec('statistics/pool:initial=4MiB/cuda' // c_null_char, 0_c_int, &
    from_spec), 'rmmResourceCreateFromSpec')
  call expect_ok(rmm_resource_get_name(from_spec, name), 'rmm_resource_get_name(from_spec)')
  call expect(name == 'statistics', 'the outermost layer is statistics, not ' // name)
  call expect_ok(rmmPoolResourceGetSize(from_spec, reserved), 'rmmPoolResourceGetSize(from_spec)')
  call expect_equal(reserved, 4 * MiB, 'the spec''s pool reserved 4 MiB')
  call expect_ok(rmmResourceDestroy(from_spec), 'rmmResourceDestroy(from_spec)')
  call ftest_finish('fortran configure')
end program test_configure
