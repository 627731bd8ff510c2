! The bind(c) types and named constants of rmm.f90 against what the C compiler makes of
! rmm.h (layout.c): sizes, field offsets, constant values, and structs passed both ways.
program test_layout
  use, intrinsic :: iso_c_binding
  use rmm
  use ftest
  implicit none

  interface
    integer(c_size_t) function ftest_c_sizeof(which) bind(c)
      import :: c_int, c_size_t
      integer(c_int), value :: which
    end function ftest_c_sizeof
    integer(c_size_t) function ftest_c_offsetof(which, field) bind(c)
      import :: c_int, c_size_t
      integer(c_int), value :: which, field
    end function ftest_c_offsetof
    integer(c_int64_t) function ftest_c_constant(which) bind(c)
      import :: c_int, c_int64_t
      integer(c_int), value :: which
    end function ftest_c_constant
    integer(c_int) function ftest_c_check_options(options) bind(c)
      import :: c_int, rmmOptions_t
      type(rmmOptions_t), intent(in) :: options
    end function ftest_c_check_options
    subroutine ftest_c_fill(statistics, record) bind(c)
      import :: rmmStatistics_t, rmmAllocationRecord_t
      type(rmmStatistics_t), intent(out) :: statistics
      type(rmmAllocationRecord_t), intent(out) :: record
    end subroutine ftest_c_fill
  end interface

  type(rmmStatistics_t), target :: statistics
  type(rmmAllocationRecord_t), target :: record
  type(rmmOptions_t), target :: options
  integer(c_int64_t) :: fortran_constants(18)
  integer :: i

  ! Sizes and offsets.
  call expect_equal(c_sizeof(statistics), ftest_c_sizeof(1), 'sizeof(rmmStatistics_t)')
  call expect_equal(c_sizeof(record), ftest_c_sizeof(2), 'sizeof(rmmAllocationRecord_t)')
  call expect_equal(c_sizeof(options), ftest_c_sizeof(3), 'sizeof(rmmOptions_t)')
  call expect_offsets(1, c_loc(statistics), [c_loc(statistics%current_bytes), &
    c_loc(statistics%peak_bytes), c_loc(statistics%total_bytes), &
    c_loc(statistics%current_count), c_loc(statistics%peak_count), &
    c_loc(statistics%total_count)], 'rmmStatistics_t')
  call expect_offsets(2, c_loc(record), [c_loc(record%ptr), c_loc(record%size), &
    c_loc(record%stream), c_loc(record%thread), c_loc(record%line), c_loc(record%file)], &
    'rmmAllocationRecord_t')
  call expect_offsets(3, c_loc(options), [c_loc(options%allocation_mode), &
    c_loc(options%initial_pool_size), c_loc(options%enable_logging), &
    c_loc(options%devices%count), c_loc(options%devices%ids), &
    c_loc(options%maximum_pool_size)], 'rmmOptions_t')
  call expect(size(record%file) == 256 .and. size(options%devices%ids) == RMM_MAX_DEVICES, &
    'array fields')

  ! Constants, and the sizes of rmmError_t, rmmAllocationMode_t and bool.
  fortran_constants = [int(RMM_SUCCESS, c_int64_t), int(RMM_ERROR_CUDA_ERROR, c_int64_t), &
    int(RMM_ERROR_INVALID_ARGUMENT, c_int64_t), int(RMM_ERROR_NOT_INITIALIZED, c_int64_t), &
    int(RMM_ERROR_OUT_OF_MEMORY, c_int64_t), int(RMM_ERROR_UNKNOWN, c_int64_t), &
    int(RMM_ERROR_IO, c_int64_t), int(RMM_ERROR_NOT_SUPPORTED, c_int64_t), &
    int(RMM_ERROR_INVALID_HANDLE, c_int64_t), int(RMM_ERROR_ALREADY_INITIALIZED, c_int64_t), &
    int(RMM_MAX_DEVICES, c_int64_t), int(CudaDefaultAllocation, c_int64_t), &
    int(PoolAllocation, c_int64_t), int(CudaManagedMemory, c_int64_t), &
    int(CudaAsyncAllocation, c_int64_t), int(c_sizeof(RMM_SUCCESS), c_int64_t), &
    int(c_sizeof(PoolAllocation), c_int64_t), int(c_sizeof(.true._c_bool), c_int64_t)]
  do i = 1, size(fortran_constants)
    call expect(fortran_constants(i) == ftest_c_constant(i), 'constant number ' // &
      char(iachar('0') + i / 10) // char(iachar('0') + mod(i, 10)) // ' of test_layout')
  end do

  ! Fortran fills, C reads.
  options%allocation_mode = ior(PoolAllocation, CudaManagedMemory)
  options%initial_pool_size = 3_c_size_t * 2_c_size_t**33
  options%maximum_pool_size = -1_c_size_t
  options%enable_logging = .true.
  options%devices%count = RMM_MAX_DEVICES
  options%devices%ids = [(1000 + i - 1, i = 1, RMM_MAX_DEVICES)]
  call expect_equal(ftest_c_check_options(options), 0, &
    'rmmOptions_t filled in Fortran, read in C: the first field that differs')

  ! C fills, Fortran reads.
  call ftest_c_fill(statistics, record)
  call expect(statistics%current_bytes == -1 .and. statistics%peak_bytes == huge(0_c_int64_t) &
    .and. statistics%total_bytes == 3 .and. statistics%current_count == 4 .and. &
    statistics%peak_count == 5 .and. statistics%total_count == -huge(0_c_int64_t), &
    'rmmStatistics_t filled in C, read in Fortran')
  call expect(address_of(record%ptr) == 4096 .and. record%size == -1_c_size_t .and. &
    address_of(record%stream) == 8192 .and. record%thread == -1_c_int64_t, &
    'rmmAllocationRecord_t filled in C: ptr, size, stream, thread')
  ! uint32_t 4000000000 reads as a negative integer(c_int32_t): 4000000000 - 2**32.
  call expect(record%line == -294967296_c_int32_t, 'rmmAllocationRecord_t%line')
  call expect(rmm_c_string(record%file) == 'dir/file.f90', 'rmmAllocationRecord_t%file')

  ! The default rmmOptions_t is all zero, as rmmInitialize(NULL) assumes.
  options = rmmOptions_t()
  call expect(options%allocation_mode == 0 .and. options%initial_pool_size == 0 .and. &
    options%maximum_pool_size == 0 .and. .not. logical(options%enable_logging) .and. &
    options%devices%count == 0 .and. all(options%devices%ids == 0), 'the default rmmOptions_t')

  call ftest_finish('fortran layout')

contains

  subroutine expect_offsets(which, base, fields, what)
    integer(c_int), intent(in) :: which
    type(c_ptr), intent(in) :: base, fields(:)
    character(len=*), intent(in) :: what
    integer(c_int) :: field
    do field = 1, size(fields, kind=c_int)
      call expect_equal(int(address_of(fields(field)) - address_of(base), c_size_t), &
        ftest_c_offsetof(which, field), 'offset of a field of ' // what // ', number ' // &
        char(iachar('0') + field))
    end do
    call expect_equal(ftest_c_offsetof(which, size(fields, kind=c_int) + 1), -1_c_size_t, &
      'the number of fields of ' // what)
  end subroutine expect_offsets

end program test_layout
