! rmm_check and the helpers without `status` stop the program on failure (error stop, a
! non-zero exit code) after writing the error and rmm's message to standard error; run by
! expect_stop.cmake, which checks both. The argument picks the failure:
!   check     rmm_check of rmmResourceDestroy(a garbage handle)
!   allocate  rmm_allocate of 1 PiB without status
!   free      rmm_free of a pointer freed before, without status
!   success   rmm_check(RMM_SUCCESS) returns: the program ends normally (exit code 0)
program test_check_stops
  use, intrinsic :: iso_c_binding
  use rmm
  implicit none
  character(len=16) :: what
  real(c_double), pointer :: a(:), copy(:)

  call get_command_argument(1, what)
  call rmm_check(rmmInitialize(c_null_ptr), 'rmmInitialize')
  select case (trim(what))
  case ('check')
    call rmm_check(rmmResourceDestroy(transfer(int(z'1234', c_intptr_t), c_null_ptr)), &
      'destroying a garbage handle')
  case ('allocate')
    call rmm_allocate(a, 2_c_int64_t**47)
  case ('free')
    call rmm_allocate(a, 10)
    copy => a
    call rmm_free(a)
    call rmm_free(copy)
  case ('success')
    call rmm_check(RMM_SUCCESS)
    call rmm_check(RMM_SUCCESS, 'a success')
    write (*, '(a)') 'PASS: rmm_check(RMM_SUCCESS) returns'
    stop
  case default
    write (*, '(a)') 'usage: test_check_stops check|allocate|free|success'
  end select
  ! Reached only when nothing stopped the program: a failure of the test.
  write (*, '(a)') 'NOT STOPPED'
  stop 3
end program test_check_stops
