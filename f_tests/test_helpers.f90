! rmm_allocate / rmm_free: every element type and rank, extents of kind c_int32_t and
! c_int64_t, with and without a stream and an explicit resource; the arrays are written and
! read back on the simulated device (host memory); zero-size and negative extents, sizes too
! large, double frees and frees through the wrong resource.
program test_helpers
  use, intrinsic :: iso_c_binding
  use rmm
  use ftest
  implicit none

  logical :: simulated
  type(c_ptr) :: cuda, pool, stream, previous
  type(c_ptr), target :: pool_previous
  integer(c_size_t) :: pool_size

  simulated = ftest_simulated()
  call expect_ok(rmmCudaResourceCreate(cuda), 'rmmCudaResourceCreate')
  call expect_ok(rmmPoolResourceCreate(pool, cuda, 8_c_size_t * 2**20, 0_c_size_t), &
    'rmmPoolResourceCreate')
  call expect_ok(rmmStreamCreate(stream), 'rmmStreamCreate')

  ! Through the current device's resource (rmmAlloc, which needs rmmInitialize), then through
  ! a pool made current, then with the pool as an explicit resource.
  call expect_ok(rmmInitialize(c_null_ptr), 'rmmInitialize')
  call all_types(c_null_ptr, .false.)
  call all_types(stream, .false.)
  call expect_ok(rmmSetCurrentDeviceResource(pool, c_loc(pool_previous)), &
    'rmmSetCurrentDeviceResource(pool)')
  previous = pool_previous
  call all_types(stream, .false.)
  call expect_ok(rmmSetCurrentDeviceResource(previous, c_null_ptr), &
    'rmmSetCurrentDeviceResource(previous)')
  call expect_ok(rmmResourceDestroy(previous), 'rmmResourceDestroy(previous)')
  call all_types(c_null_ptr, .true.)
  call all_types(stream, .true.)

  call cuda_malloc_and_free()
  call zero_and_negative_extents()
  call too_large()
  call bad_frees()

  call expect_ok(rmmStreamSynchronize(stream), 'rmmStreamSynchronize')
  call expect_ok(rmmStreamDestroy(stream), 'rmmStreamDestroy')
  call expect_ok(rmmPoolResourceGetSize(pool, pool_size), 'rmmPoolResourceGetSize')
  call expect(pool_size >= 8_c_size_t * 2**20, 'the pool holds its initial size')
  call expect_ok(rmmResourceDestroy(pool), 'rmmResourceDestroy(pool)')
  call expect_ok(rmmResourceDestroy(cuda), 'rmmResourceDestroy(cuda)')
  call ftest_finish('fortran helpers')

contains

  ! An array must lie in device memory rmm handed out: rmmGetAllocationOffset finds the
  ! device allocation that holds it (the block itself, or a pool's chunk).
  subroutine expect_rmm_block(ptr, what)
    type(c_ptr), intent(in) :: ptr
    character(len=*), intent(in) :: what
    integer(c_intptr_t) :: offset
    call expect_ok(rmmGetAllocationOffset(offset, ptr, c_null_ptr), &
      'rmmGetAllocationOffset: ' // what)
    call expect(offset >= 0 .and. offset < 2_c_intptr_t**30, what // ' lies in device memory')
  end subroutine expect_rmm_block

  ! Allocates arrays of every type and rank at once (extents of both kinds), fills them all,
  ! checks them all (no two overlap), and frees them.
  subroutine all_types(on, with_resource)
    type(c_ptr), intent(in) :: on
    logical, intent(in) :: with_resource
    real(c_float), pointer :: f1(:), f2(:, :), f3(:, :, :)
    real(c_double), pointer :: d1(:), d2(:, :), d3(:, :, :)
    integer(c_int32_t), pointer :: i1(:), i2(:, :), i3(:, :, :)
    integer(c_int64_t), pointer :: l1(:), l2(:, :), l3(:, :, :)
    integer(c_int) :: s
    integer :: i, j, k

    if (with_resource) then
      call rmm_allocate(f1, 1000, stream=on, status=s, resource=pool)
      call expect_ok(s, 'rmm_allocate f1')
      call rmm_allocate(f2, 7_c_int64_t, 9_c_int64_t, on, s, pool)
      call expect_ok(s, 'rmm_allocate f2')
      call rmm_allocate(f3, 3, 4, 5, on, resource=pool)
      call rmm_allocate(d1, 17_c_int64_t, on, resource=pool)
      call rmm_allocate(d2, 30, 2, on, resource=pool)
      call rmm_allocate(d3, 2_c_int64_t, 3_c_int64_t, 4_c_int64_t, on, resource=pool)
      call rmm_allocate(i1, 100000_c_int64_t, on, resource=pool)
      call rmm_allocate(i2, 5, 5, on, resource=pool)
      call rmm_allocate(i3, 6_c_int64_t, 1_c_int64_t, 6_c_int64_t, on, resource=pool)
      call rmm_allocate(l1, 3, on, resource=pool)
      call rmm_allocate(l2, 4_c_int64_t, 8_c_int64_t, on, resource=pool)
      call rmm_allocate(l3, 2, 2, 2, on, resource=pool)
    else
      call rmm_allocate(f1, 1000, stream=on, status=s)
      call expect_ok(s, 'rmm_allocate f1')
      call rmm_allocate(f2, 7_c_int64_t, 9_c_int64_t, on, s)
      call expect_ok(s, 'rmm_allocate f2')
      call rmm_allocate(f3, 3, 4, 5, on)
      call rmm_allocate(d1, 17_c_int64_t, on)
      call rmm_allocate(d2, 30, 2, on)
      call rmm_allocate(d3, 2_c_int64_t, 3_c_int64_t, 4_c_int64_t, on)
      call rmm_allocate(i1, 100000_c_int64_t, on)
      call rmm_allocate(i2, 5, 5, on)
      call rmm_allocate(i3, 6_c_int64_t, 1_c_int64_t, 6_c_int64_t, on)
      call rmm_allocate(l1, 3, on)
      call rmm_allocate(l2, 4_c_int64_t, 8_c_int64_t, on)
      call rmm_allocate(l3, 2, 2, 2, on)
    end if

    ! Shapes and bounds as asked, each the start of an rmm allocation.
    call expect(all(shape(f1) == [1000]) .and. all(lbound(f1) == [1]), 'shape of f1')
    call expect(all(shape(f2) == [7, 9]) .and. all(lbound(f2) == [1, 1]), 'shape of f2')
    call expect(all(shape(f3) == [3, 4, 5]), 'shape of f3')
    call expect(all(shape(d1) == [17]), 'shape of d1')
    call expect(all(shape(d2) == [30, 2]), 'shape of d2')
    call expect(all(shape(d3) == [2, 3, 4]), 'shape of d3')
    call expect(all(shape(i1) == [100000]), 'shape of i1')
    call expect(all(shape(i2) == [5, 5]), 'shape of i2')
    call expect(all(shape(i3) == [6, 1, 6]), 'shape of i3')
    call expect(all(shape(l1) == [3]), 'shape of l1')
    call expect(all(shape(l2) == [4, 8]), 'shape of l2')
    call expect(all(shape(l3) == [2, 2, 2]), 'shape of l3')
    call expect_rmm_block(c_loc(f1(1)), 'f1')
    call expect_rmm_block(c_loc(f2(1, 1)), 'f2')
    call expect_rmm_block(c_loc(f3(1, 1, 1)), 'f3')
    call expect_rmm_block(c_loc(d1(1)), 'd1')
    call expect_rmm_block(c_loc(d2(1, 1)), 'd2')
    call expect_rmm_block(c_loc(d3(1, 1, 1)), 'd3')
    call expect_rmm_block(c_loc(i1(1)), 'i1')
    call expect_rmm_block(c_loc(i2(1, 1)), 'i2')
    call expect_rmm_block(c_loc(i3(1, 1, 1)), 'i3')
    call expect_rmm_block(c_loc(l1(1)), 'l1')
    call expect_rmm_block(c_loc(l2(1, 1)), 'l2')
    call expect_rmm_block(c_loc(l3(1, 1, 1)), 'l3')

    if (simulated) then
      ! Device memory is host memory here: write everything, then read everything back.
      call expect_ok(rmmStreamSynchronize(on), 'rmmStreamSynchronize before host access')
      f1 = [(real(i, c_float), i = 1, 1000)]
      f2 = reshape([(real(-i, c_float), i = 1, 63)], [7, 9])
      f3 = reshape([(real(i, c_float) / 2, i = 1, 60)], [3, 4, 5])
      d1 = [(real(i, c_double) * 1.0e10_c_double, i = 1, 17)]
      d2 = reshape([(real(i * i, c_double), i = 1, 60)], [30, 2])
      d3 = reshape([(real(i, c_double) + 0.25_c_double, i = 1, 24)], [2, 3, 4])
      i1 = [(int(i, c_int32_t) * 3, i = 1, 100000)]
      i2 = reshape([(int(-i, c_int32_t), i = 1, 25)], [5, 5])
      i3 = reshape([(int(i, c_int32_t) + 1000, i = 1, 36)], [6, 1, 6])
      l1 = [huge(0_c_int64_t), -huge(0_c_int64_t), 42_c_int64_t]
      l2 = reshape([(int(i, c_int64_t) * 2_c_int64_t**40, i = 1, 32)], [4, 8])
      l3 = reshape([(int(i, c_int64_t), i = 1, 8)], [2, 2, 2])

      call expect(all(abs(f1 - [(real(i, c_float), i = 1, 1000)]) < 0.25), 'f1 read back')
      call expect(abs(f2(7, 9) + 63) < 0.25 .and. abs(f2(1, 2) + 8) < 0.25, 'f2 read back')
      call expect(abs(f3(3, 4, 5) - 30) < 0.25 .and. abs(f3(2, 1, 1) - 1) < 0.25, &
        'f3 read back')
      call expect(abs(sum(d1) - 153.0e10_c_double) < 1.0_c_double, 'd1 read back')
      call expect(abs(d2(30, 2) - 3600) < 0.5 .and. abs(d2(1, 2) - 961) < 0.5, 'd2 read back')
      call expect(abs(d3(2, 3, 4) - 24.25_c_double) < 0.01, 'd3 read back')
      do i = 1, 100000
        if (i1(i) /= 3 * i) call expect(.false., 'i1 read back')
      end do
      do j = 1, 5
        do i = 1, 5
          call expect(i2(i, j) == -(i + 5 * (j - 1)), 'i2 read back (column-major)')
        end do
      end do
      do k = 1, 6
        do i = 1, 6
          call expect(i3(i, 1, k) == 1000 + i + 6 * (k - 1), 'i3 read back')
        end do
      end do
      call expect(l1(1) == huge(0_c_int64_t) .and. l1(2) == -huge(0_c_int64_t) .and. &
        l1(3) == 42, 'l1 read back')
      call expect(l2(4, 8) == 32_c_int64_t * 2_c_int64_t**40, 'l2 read back')
      call expect(sum(l3) == 36 .and. l3(2, 2, 2) == 8, 'l3 read back')
    end if

    if (with_resource) then
      call rmm_free(f1, on, s, pool)
      call expect_ok(s, 'rmm_free f1 (resource)')
      call rmm_free(f2, on, resource=pool)
      call rmm_free(f3, on, resource=pool)
      call rmm_free(d1, on, resource=pool)
      call rmm_free(d2, on, resource=pool)
      call rmm_free(d3, on, resource=pool)
      call rmm_free(i1, on, resource=pool)
      call rmm_free(i2, on, resource=pool)
      call rmm_free(i3, on, resource=pool)
      ! rmmFree takes any rmm pointer, also one from rmmResourceAllocate.
      call rmm_free(l1, on)
      call rmm_free(l2, on)
      call rmm_free(l3, on)
    else
      call rmm_free(f1, on, s)
      call expect_ok(s, 'rmm_free f1')
      call rmm_free(f2, on)
      call rmm_free(f3, on)
      call rmm_free(d1, on)
      call rmm_free(d2, on)
      call rmm_free(d3, on)
      call rmm_free(i1, on)
      call rmm_free(i2, on)
      call rmm_free(i3, on)
      call rmm_free(l1, on)
      call rmm_free(l2, on)
      call rmm_free(l3, on)
    end if
    call expect(.not. (associated(f1) .or. associated(f2) .or. associated(f3) .or. &
      associated(d1) .or. associated(d2) .or. associated(d3) .or. associated(i1) .or. &
      associated(i2) .or. associated(i3) .or. associated(l1) .or. associated(l2) .or. &
      associated(l3)), 'rmm_free nullifies')
    ! Freeing a disassociated pointer is a no-op.
    call rmm_free(f1, on, s)
    call expect_ok(s, 'rmm_free of a disassociated pointer')
    call rmm_free(l3, on, s, pool)
    call expect_ok(s, 'rmm_free of a disassociated pointer (resource)')
  end subroutine all_types

  ! Zero and negative extents give zero-size arrays (as ALLOCATE does), freed as no-ops.
  subroutine zero_and_negative_extents()
    real(c_float), pointer :: f1(:), f2(:, :)
    integer(c_int64_t), pointer :: l3(:, :, :)
    integer(c_int) :: s
    call rmm_allocate(f1, 0, status=s)
    call expect_ok(s, 'rmm_allocate of 0 elements')
    call expect(associated(f1), 'a zero-size array is associated')
    call expect(size(f1) == 0, 'a zero-size array has size 0')
    call rmm_allocate(f2, 5_c_int64_t, -3_c_int64_t, status=s)
    call expect_ok(s, 'rmm_allocate with a negative extent')
    call expect(all(shape(f2) == [5, 0]), 'a negative extent counts as 0')
    call rmm_allocate(l3, 4, 0, 2, status=s, resource=pool)
    call expect_ok(s, 'rmm_allocate of 0 elements from a resource')
    call expect(size(l3) == 0 .and. all(shape(l3) == [4, 0, 2]), 'shape of a zero-size array')
    call rmm_free(f1, status=s)
    call expect_ok(s, 'rmm_free of a zero-size array')
    call expect(.not. associated(f1), 'rmm_free nullifies a zero-size array')
    call rmm_free(f2)
    call rmm_free(l3, resource=pool)
    call expect(.not. (associated(f2) .or. associated(l3)), 'zero-size arrays freed')
  end subroutine zero_and_negative_extents

  ! More than any resource holds: RMM_ERROR_OUT_OF_MEMORY and a nullified pointer.
  subroutine too_large()
    real(c_double), pointer :: d1(:), d3(:, :, :)
    integer(c_int32_t), pointer :: i2(:, :)
    integer(c_int) :: s
    ! 1 PiB, more than any device (the simulated one has 1 GiB).
    call rmm_allocate(d1, 2_c_int64_t**47, status=s)
    call expect_status(s, RMM_ERROR_OUT_OF_MEMORY, 'rmm_allocate of 1 PiB')
    call expect(.not. associated(d1), 'a failed rmm_allocate nullifies')
    ! The byte count overflows: SIZE_MAX is asked for.
    call rmm_allocate(d3, huge(0_c_int64_t), 2_c_int64_t, 2_c_int64_t, status=s)
    call expect_status(s, RMM_ERROR_OUT_OF_MEMORY, 'rmm_allocate of more than SIZE_MAX bytes')
    call expect(.not. associated(d3), 'a failed rmm_allocate nullifies (overflow)')
    call rmm_allocate(i2, huge(0_c_int32_t), huge(0_c_int32_t), status=s, resource=pool)
    call expect_status(s, RMM_ERROR_OUT_OF_MEMORY, 'rmm_allocate of 16 EiB from a pool')
  end subroutine too_large

  ! A pointer freed twice (through a copy) and a free through the wrong resource are
  ! RMM_ERROR_INVALID_ARGUMENT; nothing is freed and the pointer stays associated.
  ! cudaMalloc's and cudaFree's contract: no stream; a second free is refused.
  subroutine cuda_malloc_and_free()
    type(c_ptr) :: p
    p = c_null_ptr
    call expect_ok(rmmCudaMalloc(p, 4096_c_size_t), 'rmmCudaMalloc')
    call expect(c_associated(p), 'rmmCudaMalloc gives memory')
    call expect_ok(rmmCudaFree(p), 'rmmCudaFree')
    call expect_status(rmmCudaFree(p), RMM_ERROR_INVALID_ARGUMENT, 'rmmCudaFree of a pointer freed before')
    call expect_ok(rmmCudaFree(c_null_ptr), 'rmmCudaFree(NULL)')
  end subroutine cuda_malloc_and_free

  subroutine bad_frees()
    integer(c_int32_t), pointer :: a(:), copy(:)
    real(c_float), pointer :: b(:, :)
    integer(c_int) :: s
    call rmm_allocate(a, 64)
    copy => a
    call rmm_free(a)
    call rmm_free(copy, status=s)
    call expect_status(s, RMM_ERROR_INVALID_ARGUMENT, 'rmm_free of a pointer freed before')
    call expect(associated(copy), 'a failed rmm_free leaves the pointer associated')

    call rmm_allocate(b, 16, 16, resource=pool)
    call rmm_free(b, status=s, resource=cuda)
    call expect_status(s, RMM_ERROR_INVALID_ARGUMENT, 'rmm_free through another resource')
    call expect(associated(b), 'a failed rmm_free leaves the pointer associated')
    call rmm_free(b, status=s, resource=pool)
    call expect_ok(s, 'rmm_free through the right resource')
  end subroutine bad_frees

end program test_helpers
