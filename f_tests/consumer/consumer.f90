! A minimal downstream Fortran program: the legacy API, a generic helper and a resource handle.
program consumer
  use, intrinsic :: iso_c_binding
  use rmm
  implicit none
  type(c_ptr) :: resource
  integer(c_int32_t), pointer :: values(:)
  character(len=:), allocatable :: name

  call rmm_check(rmmInitialize(c_null_ptr))
  call rmm_allocate(values, 1000)
  call rmm_free(values)
  call rmm_check(rmmCudaResourceCreate(resource))
  call rmm_check(rmm_resource_get_name(resource, name))
  call rmm_allocate(values, 4096_c_int64_t, resource=resource)
  call rmm_free(values, resource=resource)
  call rmm_check(rmmResourceDestroy(resource))
  call rmm_check(rmmFinalize())
  print '(a)', 'consumer (Fortran): allocated from a ' // name // ' resource'
end program consumer
