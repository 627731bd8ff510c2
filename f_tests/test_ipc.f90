! IPC handles from Fortran, in one process: an allocation of a shareable expandable resource,
! its handle (a bind(c) type), opened again in this process (the same memory
! at another address), closed, and refused once the allocation is freed; its pages and their
! file descriptors (rmmIpcGetMemPages), mapped again from them (rmmIpcOpenMemPages); peer access granted
! to the resource's own device (nothing to do). The bytes are compared only on simulated
! devices, whose device memory is host memory.
program test_ipc
  use, intrinsic :: iso_c_binding
  use rmm
  use ftest
  implicit none

  integer(c_size_t), parameter :: BYTES = 4_c_size_t * 1024 * 1024
  type(rmmIpcMemHandle_t) :: handle, again
  type(c_ptr) :: resource, ptr, opened
  type(rmmIpcMemPages_t) :: pages
  integer(c_int), target :: fds(64)
  interface
    integer(c_int) function c_getpid() bind(c, name="getpid")
      import :: c_int
    end function c_getpid
  end interface
  integer(c_int8_t), pointer :: original(:) => null(), mapped(:) => null()

  call expect_ok(rmmSetDevice(0), 'rmmSetDevice(0)')
  call expect_ok(rmmIpcAllowOpeners(), 'rmmIpcAllowOpeners')
  resource = c_null_ptr
  call expect_ok(rmmIpcExpandableResourceCreate(resource, c_null_ptr), 'rmmIpcExpandableResourceCreate')
  call expect_ok(rmmExpandableResourceGrantPeerAccess(resource, 0_c_int), 'rmmExpandableResourceGrantPeerAccess(0)')
  ptr = c_null_ptr
  call expect_ok(rmmResourceAllocate(resource, ptr, BYTES, c_null_ptr), 'rmmResourceAllocate')
  if (ftest_simulated()) then
    call c_f_pointer(ptr, original, [BYTES])
    original = 42_c_int8_t
  end if
  call expect_ok(rmmIpcGetMemHandle(handle, ptr), 'rmmIpcGetMemHandle')
  call expect_ok(rmmIpcGetMemHandle(again, ptr), 'rmmIpcGetMemHandle(again)')
  call expect(all(handle%reserved == again%reserved), 'the same handle until the free')

  opened = c_null_ptr
  call expect_ok(rmmIpcOpenMemHandle(opened, handle), 'rmmIpcOpenMemHandle')
  call expect(c_associated(opened) .and. .not. c_associated(opened, ptr), 'opened at another address')
  if (ftest_simulated()) then
    call c_f_pointer(opened, mapped, [BYTES])
    call expect(all(mapped == 42_c_int8_t), 'the opened memory shows the same bytes')
    mapped(1:16) = 7_c_int8_t
    call expect(all(original(1:16) == 7_c_int8_t), 'writes through it reach the allocation')
  end if
  call expect_ok(rmmIpcCloseMemHandle(opened), 'rmmIpcCloseMemHandle')
  call expect_status(rmmIpcCloseMemHandle(opened), RMM_ERROR_INVALID_ARGUMENT, 'closed twice')

  call expect_ok(rmmIpcGetMemPages(pages, c_null_ptr, 0_c_size_t, ptr), 'rmmIpcGetMemPages(count)')
  call expect(pages%page_count >= 1 .and. pages%page_count <= 64, 'the pages that hold the allocation')
  call expect_ok(rmmIpcGetMemPages(pages, c_loc(fds), 64_c_size_t, ptr), 'rmmIpcGetMemPages')
  call expect_ok(rmmIpcOpenMemPages(opened, c_getpid(), pages%page_size, fds(1), pages%page_count), &
    'rmmIpcOpenMemPages')
  call expect(c_associated(opened) .and. .not. c_associated(opened, pages%first_page), 'pages mapped at another address')
  call expect_ok(rmmIpcCloseMemHandle(opened), 'rmmIpcCloseMemHandle(pages)')

  call expect_ok(rmmResourceDeallocate(resource, ptr, BYTES, c_null_ptr), 'rmmResourceDeallocate')
  call expect_status(rmmIpcOpenMemHandle(opened, handle), RMM_ERROR_INVALID_ARGUMENT, 'opened after the free')
  call expect_status(rmmIpcGetMemHandle(handle, ptr), RMM_ERROR_INVALID_ARGUMENT, 'a handle of freed memory')
  call expect_ok(rmmResourceDestroy(resource), 'rmmResourceDestroy')
  call ftest_finish('fortran ipc')
end program test_ipc
