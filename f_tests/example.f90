! The README's example (ctest: fortran.example).
program example
  use, intrinsic :: iso_c_binding
  use rmm
  implicit none
  type(c_ptr) :: managed, pool
  real(c_double), pointer :: a(:, :), too_big(:)
  integer(c_int) :: status

  call rmm_check(rmmManagedResourceCreate(managed))    ! host-accessible, even on a GPU
  call rmm_check(rmmPoolResourceCreate(pool, managed, 2_c_size_t**28, 0_c_size_t)) ! 256 MiB
  call rmm_check(rmmSetCurrentDeviceResource(pool, c_null_ptr))   ! rmm_allocate uses it
  call rmm_allocate(a, 1000, 500)                      ! stops with rmm's message on failure
  a = 0.5_c_double
  print '(a, 2i5, a, f0.1)', 'shape', shape(a), ', sum ', sum(a)
  call rmm_allocate(too_big, 2_c_int64_t**40, status=status)     ! 8 TiB
  print '(a)', rmm_error_string(status) // ': ' // rmm_last_error_message()
  call rmm_free(a)
  call rmm_check(rmmResourceDestroy(pool))
  call rmm_check(rmmResourceDestroy(managed))
end program example
