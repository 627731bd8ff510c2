! Shared helpers of the Fortran tests: checks that print what failed, the rmmError_t and
! rmm_last_error_message() and stop with a non-zero exit code (error stop), plus device helpers.
module ftest
  use, intrinsic :: iso_c_binding, only: c_bool, c_int, c_intptr_t, c_null_ptr, c_ptr, c_size_t
  use, intrinsic :: iso_fortran_env, only: error_unit, output_unit
  use rmm
  implicit none
  private
  public :: expect, expect_ok, expect_status, expect_equal, ftest_simulated, &
    ftest_device_count, ftest_finish, code_name, address_of, read_text_file, contains_text

  ! expect_equal(got, expected, what) for integers of kind c_int, c_size_t / c_int64_t.
  interface expect_equal
    module procedure expect_equal_int, expect_equal_size
  end interface expect_equal

contains

  function code_name(code) result(name)
    integer(c_int), intent(in) :: code
    character(len=:), allocatable :: name
    select case (code)
    case (RMM_SUCCESS)
      name = 'RMM_SUCCESS'
    case (RMM_ERROR_CUDA_ERROR)
      name = 'RMM_ERROR_CUDA_ERROR'
    case (RMM_ERROR_INVALID_ARGUMENT)
      name = 'RMM_ERROR_INVALID_ARGUMENT'
    case (RMM_ERROR_NOT_INITIALIZED)
      name = 'RMM_ERROR_NOT_INITIALIZED'
    case (RMM_ERROR_OUT_OF_MEMORY)
      name = 'RMM_ERROR_OUT_OF_MEMORY'
    case (RMM_ERROR_UNKNOWN)
      name = 'RMM_ERROR_UNKNOWN'
    case (RMM_ERROR_IO)
      name = 'RMM_ERROR_IO'
    case (RMM_ERROR_NOT_SUPPORTED)
      name = 'RMM_ERROR_NOT_SUPPORTED'
    case (RMM_ERROR_INVALID_HANDLE)
      name = 'RMM_ERROR_INVALID_HANDLE'
    case (RMM_ERROR_ALREADY_INITIALIZED)
      name = 'RMM_ERROR_ALREADY_INITIALIZED'
    case default
      name = '(not an rmmError_t)'
    end select
  end function code_name

  subroutine failed(what)
    character(len=*), intent(in) :: what
    write (error_unit, '(a)') 'FAILED: ' // what
    write (error_unit, '(a)') '  rmm_last_error_message(): "' // rmm_last_error_message() // '"'
    flush (error_unit)
    error stop 1
  end subroutine failed

  ! A condition that must hold.
  subroutine expect(condition, what)
    logical, intent(in) :: condition
    character(len=*), intent(in) :: what
    if (.not. condition) call failed(what)
  end subroutine expect

  ! An rmm call that must return exactly `expected`; every failure must explain itself.
  subroutine expect_status(got, expected, what)
    integer(c_int), intent(in) :: got, expected
    character(len=*), intent(in) :: what
    character(len=32) :: numbers
    if (got /= expected) then
      write (numbers, '(i0, a, i0)') got, ' vs ', expected
      call failed(what // ': returned ' // code_name(got) // ', expected ' // &
        code_name(expected) // ' (' // trim(numbers) // ')')
    end if
    if (expected /= RMM_SUCCESS) then
      if (len(rmm_last_error_message()) == 0) then
        call failed(what // ': returned ' // code_name(got) // ' with no message')
      end if
    end if
  end subroutine expect_status

  ! An rmm call that must succeed.
  subroutine expect_ok(got, what)
    integer(c_int), intent(in) :: got
    character(len=*), intent(in) :: what
    call expect_status(got, RMM_SUCCESS, what)
  end subroutine expect_ok

  subroutine expect_equal_int(got, expected, what)
    integer(c_int), intent(in) :: got, expected
    character(len=*), intent(in) :: what
    character(len=64) :: numbers
    if (got /= expected) then
      write (numbers, '(i0, a, i0)') got, ', expected ', expected
      call failed(what // ': got ' // trim(numbers))
    end if
  end subroutine expect_equal_int

  subroutine expect_equal_size(got, expected, what)
    integer(c_size_t), intent(in) :: got, expected
    character(len=*), intent(in) :: what
    character(len=64) :: numbers
    if (got /= expected) then
      write (numbers, '(i0, a, i0)') got, ', expected ', expected
      call failed(what // ': got ' // trim(numbers))
    end if
  end subroutine expect_equal_size

  ! True on simulated devices (device memory is host memory: the tests may read and write
  ! it); rmm must agree with the environment (RMM_SIM_DEVICES).
  logical function ftest_simulated()
    logical(c_bool) :: simulated
    integer :: length, env_status
    call expect_ok(rmmIsSimulated(simulated), 'rmmIsSimulated')
    call get_environment_variable('RMM_SIM_DEVICES', length=length, status=env_status)
    call expect(logical(simulated) .eqv. (env_status == 0), &
      'rmmIsSimulated agrees with RMM_SIM_DEVICES')
    ftest_simulated = simulated
  end function ftest_simulated

  integer(c_int) function ftest_device_count()
    integer(c_size_t) :: free_bytes, total_bytes
    call expect_ok(rmmGetDeviceCount(ftest_device_count), 'rmmGetDeviceCount')
    call expect(ftest_device_count >= 1, 'at least one device')
    call expect_ok(rmmGetDeviceMemInfo(free_bytes, total_bytes, 0_c_int), 'rmmGetDeviceMemInfo')
    call expect(free_bytes <= total_bytes .and. total_bytes > 0, 'device 0 has memory')
    call expect_ok(rmmPrefetch(c_null_ptr, 0_c_size_t, 0_c_int, c_null_ptr), 'rmmPrefetch of nothing')
    call expect_ok(rmmDeviceRelease(0_c_int, c_null_ptr), 'rmmDeviceRelease')
    call expect(rmmResourceSetReleaseThreshold(c_null_ptr, 0_c_size_t) == RMM_ERROR_INVALID_HANDLE, &
      'rmmResourceSetReleaseThreshold refuses NULL')
  end function ftest_device_count

  ! The end of every test: on simulated devices the race checker must have found nothing.
  subroutine ftest_finish(name)
    character(len=*), intent(in) :: name
    integer(c_size_t) :: races
    integer(c_int) :: memory_type, device
    races = 12345
    memory_type = 99
    device = 99
    if (ftest_simulated()) then
      call expect_ok(rmmSimGetRaceCount(races), 'rmmSimGetRaceCount')
      call expect_equal(races, 0_c_size_t, 'stream-ordering races found by the simulator')
      ! A null pointer is no simulated memory (c_tests/test_devices.c checks the kinds).
      call expect_ok(rmmSimGetPointerAttributes(memory_type, device, c_null_ptr), &
        'rmmSimGetPointerAttributes')
      call expect_equal(memory_type, 0_c_int, 'a null pointer is unregistered host memory')
    else
      call expect_status(rmmSimGetRaceCount(races), RMM_ERROR_NOT_SUPPORTED, &
        'rmmSimGetRaceCount on real devices')
      call expect_status(rmmSimGetPointerAttributes(memory_type, device, c_null_ptr), &
        RMM_ERROR_NOT_SUPPORTED, 'rmmSimGetPointerAttributes on real devices')
    end if
    write (output_unit, '(a)') 'PASS: ' // name
    flush (output_unit)
  end subroutine ftest_finish

  ! The address a C pointer holds, as an integer.
  integer(c_intptr_t) function address_of(ptr)
    type(c_ptr), intent(in) :: ptr
    address_of = transfer(ptr, 0_c_intptr_t)
  end function address_of

  ! The whole text of a file, lines joined with new lines.
  function read_text_file(path) result(text)
    character(len=*), intent(in) :: path
    character(len=:), allocatable :: text
    character(len=4096) :: line
    integer :: unit, io
    text = ''
    open (newunit=unit, file=path, status='old', action='read', iostat=io)
    call expect(io == 0, 'open ' // path)
    do
      read (unit, '(a)', iostat=io) line
      if (io /= 0) exit
      text = text // trim(line) // new_line('a')
    end do
    close (unit)
  end function read_text_file

  pure logical function contains_text(text, part)
    character(len=*), intent(in) :: text, part
    contains_text = index(text, part) > 0
  end function contains_text

end module ftest
