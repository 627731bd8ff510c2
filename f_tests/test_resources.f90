! Resources from Fortran: a pool over a cuda resource registered as the current device's
! resource and as device 1's resource (per-device registry), rmmResourceAllocate /
! rmmResourceDeallocate on streams, the other device resources and suballocators, release and
! snapshots.
program test_resources
  use, intrinsic :: iso_c_binding
  use rmm
  use ftest
  implicit none

  integer(c_size_t), parameter :: MiB = 2_c_size_t**20
  logical :: simulated
  integer(c_int) :: count, device, s
  type(c_ptr) :: cuda, pool, current, handle
  type(c_ptr), target :: previous
  integer(c_size_t) :: held
  integer(c_size_t), target :: released
  real(c_float), pointer :: routed(:)

  simulated = ftest_simulated()
  count = ftest_device_count()
  call expect_ok(rmmSetDevice(0), 'rmmSetDevice(0)')

  ! A pool of 16 MiB, at most 64 MiB, over device memory.
  call expect_ok(rmmCudaResourceCreate(cuda), 'rmmCudaResourceCreate')
  call expect_ok(rmmPoolResourceCreate(pool, cuda, 16 * MiB, 64 * MiB), 'rmmPoolResourceCreate')
  call expect_name(cuda, 'cuda')
  call expect_name(pool, 'pool')
  call expect_ok(rmmResourceGetDevice(pool, device), 'rmmResourceGetDevice')
  call expect_equal(device, 0, 'the pool belongs to device 0')
  call expect_ok(rmmPoolResourceGetSize(pool, held), 'rmmPoolResourceGetSize')
  call expect_equal(held, 16 * MiB, 'the pool reserves its initial size')
  call expect_status(rmmPoolResourceGetSize(cuda, held), RMM_ERROR_NOT_SUPPORTED, &
    'rmmPoolResourceGetSize of a cuda resource')

  ! The pool as the current device's resource: rmm_allocate (rmmAlloc) goes through it, so
  ! more than its maximum is out of memory although the device has 1 GiB.
  previous = c_null_ptr
  call expect_ok(rmmSetCurrentDeviceResource(pool, c_loc(previous)), &
    'rmmSetCurrentDeviceResource(pool)')
  call expect(c_associated(previous), 'the replaced resource is handed back')
  call expect_name(previous, 'cuda')
  call expect_ok(rmmGetCurrentDeviceResource(current), 'rmmGetCurrentDeviceResource')
  call expect_name(current, 'pool')
  call expect_ok(rmmResourceDestroy(current), 'rmmResourceDestroy(current)')
  call rmm_allocate(routed, 1000)
  call rmm_free(routed)
  call rmm_allocate(routed, 100 * 2**20 / 4, status=s)
  call expect_status(s, RMM_ERROR_OUT_OF_MEMORY, '100 MiB from the current 64 MiB pool')
  call expect_ok(rmmSetCurrentDeviceResource(previous, c_null_ptr), &
    'rmmSetCurrentDeviceResource(previous)')
  call expect_ok(rmmResourceDestroy(previous), 'rmmResourceDestroy(previous)')
  call rmm_allocate(routed, 100 * 2**20 / 4, status=s)
  call expect_ok(s, '100 MiB from the restored cuda resource')
  call rmm_free(routed)

  call per_device()
  call allocate_on_streams()
  call suballocators()
  call device_resources()
  call pool_resources()
  call snapshots()
  call callback_resource()
  call aligned_allocations()

  ! Release: the pool's wholly free chunks go back upstream.
  released = 12345
  call expect_ok(rmmResourceRelease(pool, c_loc(released)), 'rmmResourceRelease(pool)')
  call expect(released <= 16 * MiB * 4, 'rmmResourceRelease figure')
  call expect_ok(rmmResourceRelease(cuda, c_null_ptr), 'rmmResourceRelease(cuda, c_null_ptr)')

  call expect_ok(rmmResourceDestroy(pool), 'rmmResourceDestroy(pool)')
  call expect_ok(rmmResourceDestroy(cuda), 'rmmResourceDestroy(cuda)')
  call expect_status(rmmResourceDestroy(pool), RMM_ERROR_INVALID_HANDLE, 'destroy twice')
  call ftest_finish('fortran resources')

contains

  ! An allocator that never has memory, as a Fortran program would hand one to rmm. It notes
  ! in user_data (an integer(c_size_t) array) its calls, the bytes asked for and whether a
  ! stream came with them.
  type(c_ptr) function no_memory(bytes, stream, user_data) bind(c)
    integer(c_size_t), value :: bytes
    type(c_ptr), value :: stream, user_data
    integer(c_size_t), pointer :: seen(:)
    call c_f_pointer(user_data, seen, [3])
    seen(1) = seen(1) + 1
    seen(2) = bytes
    seen(3) = merge(1_c_size_t, 0_c_size_t, c_associated(stream))
    no_memory = c_null_ptr
  end function no_memory

  ! Counts its calls in user_data(1) by thousands: nothing was handed out, so none may come.
  subroutine give_back(ptr, bytes, stream, user_data) bind(c)
    type(c_ptr), value :: ptr, stream, user_data
    integer(c_size_t), value :: bytes
    integer(c_size_t), pointer :: seen(:)
    call c_f_pointer(user_data, seen, [3])
    seen(1) = seen(1) + 1000
    seen(2) = bytes
    seen(3) = merge(1_c_size_t, 0_c_size_t, c_associated(ptr) .or. c_associated(stream))
  end subroutine give_back

  ! Counts in user_data(1) by millions that the resource went.
  subroutine count_release(user_data) bind(c)
    type(c_ptr), value :: user_data
    integer(c_size_t), pointer :: seen(:)
    call c_f_pointer(user_data, seen, [3])
    seen(1) = seen(1) + 1000000
  end subroutine count_release

  ! rmmCallbackResourceCreate with Fortran callbacks: NULL from the allocator is out of memory.
  subroutine callback_resource()
    type(c_ptr) :: resource, ptr
    integer(c_size_t), target :: seen(3)
    seen = 0
    call expect_ok(rmmCallbackResourceCreate(c_funloc(no_memory), c_funloc(give_back), &
      c_loc(seen), 0_c_int, resource), 'rmmCallbackResourceCreate')
    call expect_name(resource, 'callback')
    call expect_status(rmmResourceAllocate(resource, ptr, 4096_c_size_t, c_null_ptr), &
      RMM_ERROR_OUT_OF_MEMORY, 'a callback that returns NULL')
    call expect(seen(1) >= 1 .and. seen(1) < 1000 .and. seen(2) == 4096 .and. seen(3) == 0, &
      'the allocate callback, and only it, was called with the bytes and no stream')
    call expect_status(rmmCallbackResourceCreate(c_null_funptr, c_funloc(give_back), &
      c_null_ptr, 0_c_int, resource), RMM_ERROR_INVALID_ARGUMENT, 'a NULL allocate callback')
    call expect_ok(rmmResourceDestroy(resource), 'rmmResourceDestroy(callback)')
    call expect(seen(1) < 1000, 'the deallocate callback was never called')
    ! With a release function: called once, when the resource goes.
    seen = 0
    call expect_ok(rmmCallbackResourceCreateWithRelease(c_funloc(no_memory), c_funloc(give_back), &
      c_funloc(count_release), c_loc(seen), 0_c_int, resource), 'rmmCallbackResourceCreateWithRelease')
    call expect(seen(1) == 0, 'not released while the handle lives')
    call expect_ok(rmmResourceDestroy(resource), 'rmmResourceDestroy(callback with release)')
    call expect(seen(1) == 1000000, 'released once when the resource went')
  end subroutine callback_resource

  ! The alignment-taking allocator: notes the alignment asked for in user_data(2), has no memory.
  type(c_ptr) function no_aligned_memory(bytes, alignment, stream, user_data) bind(c)
    integer(c_size_t), value :: bytes, alignment
    type(c_ptr), value :: stream, user_data
    integer(c_size_t), pointer :: seen(:)
    call c_f_pointer(user_data, seen, [3])
    seen(1) = seen(1) + 1
    seen(2) = alignment
    seen(3) = bytes + merge(1_c_size_t, 0_c_size_t, c_associated(stream))
    no_aligned_memory = c_null_ptr
  end function no_aligned_memory

  subroutine give_back_aligned(ptr, bytes, alignment, stream, user_data) bind(c)
    type(c_ptr), value :: ptr, stream, user_data
    integer(c_size_t), value :: bytes, alignment
    integer(c_size_t), pointer :: seen(:)
    call c_f_pointer(user_data, seen, [3])
    seen(1) = seen(1) + 1000
    seen(2) = alignment + bytes + merge(1_c_size_t, 0_c_size_t, c_associated(ptr) .or. c_associated(stream))
  end subroutine give_back_aligned

  ! rmmResourceAllocateAligned: the alignment reaches an alignment-taking callback resource; a
  ! pool places it itself, and the free names it again.
  subroutine aligned_allocations()
    type(c_ptr) :: resource, ptr
    integer(c_size_t), target :: seen(3)
    seen = 0
    call expect_ok(rmmCallbackResourceCreateAligned(c_funloc(no_aligned_memory), &
      c_funloc(give_back_aligned), c_null_funptr, c_loc(seen), 0_c_int, resource), &
      'rmmCallbackResourceCreateAligned')
    call expect_status(rmmResourceAllocateAligned(resource, ptr, 100_c_size_t, 4096_c_size_t, c_null_ptr), &
      RMM_ERROR_OUT_OF_MEMORY, 'an aligned callback that returns NULL')
    call expect(seen(1) >= 1 .and. seen(1) < 1000 .and. seen(2) == 4096 .and. seen(3) == 100, &
      'the allocate callback got the bytes and the alignment, and no stream')
    call expect_ok(rmmResourceDestroy(resource), 'rmmResourceDestroy(aligned callback)')
    call expect_ok(rmmResourceAllocateAligned(pool, ptr, 100_c_size_t, 65536_c_size_t, c_null_ptr), &
      'rmmResourceAllocateAligned(pool)')
    call expect(mod(transfer(ptr, 0_c_intptr_t), 65536_c_intptr_t) == 0, 'the pool placed the block at 64 KiB')
    call expect_ok(rmmResourceDeallocateAligned(pool, ptr, 100_c_size_t, 65536_c_size_t, c_null_ptr), &
      'rmmResourceDeallocateAligned(pool)')
  end subroutine aligned_allocations

  subroutine expect_name(resource, expected)
    type(c_ptr), intent(in) :: resource
    character(len=*), intent(in) :: expected
    character(len=:), allocatable :: got
    type(c_ptr) :: raw
    call expect_ok(rmm_resource_get_name(resource, got), 'rmm_resource_get_name')
    call expect(got == expected, 'resource name ' // got // ', expected ' // expected)
    call expect_ok(rmmResourceGetName(resource, raw), 'rmmResourceGetName')
    call expect(rmm_c_string(raw) == expected, 'rmmResourceGetName as a C string')
  end subroutine expect_name

  ! The registry: a pool of device 1 registered for device 1, found there, refused for
  ! device 0; the previous resource put back.
  subroutine per_device()
    type(c_ptr) :: cuda1, pool1, got
    type(c_ptr), target :: previous1
    real(c_double), pointer :: on1(:)
    integer(c_int) :: dev
    if (count < 2) then
      write (*, '(a)') 'note: one device: the registry of device 1 is not tested'
      return
    end if
    call expect_ok(rmmSetDevice(1), 'rmmSetDevice(1)')
    call expect_ok(rmmCudaResourceCreate(cuda1), 'rmmCudaResourceCreate on device 1')
    call expect_ok(rmmPoolResourceCreate(pool1, cuda1, 4 * MiB, 0_c_size_t), &
      'rmmPoolResourceCreate on device 1')
    call expect_ok(rmmSetDevice(0), 'rmmSetDevice(0)')
    call expect_ok(rmmResourceGetDevice(pool1, dev), 'rmmResourceGetDevice(pool1)')
    call expect_equal(dev, 1, 'a resource belongs to the device current at its creation')

    ! Registered from device 0 for device 1; the handle can be destroyed at once.
    call expect_ok(rmmSetPerDeviceResource(1, pool1, c_loc(previous1)), &
      'rmmSetPerDeviceResource(1, pool1)')
    call expect_name(previous1, 'cuda')
    call expect_ok(rmmResourceDestroy(pool1), 'rmmResourceDestroy(pool1): the registry keeps it')
    call expect_ok(rmmGetPerDeviceResource(1, got), 'rmmGetPerDeviceResource(1)')
    call expect_name(got, 'pool')
    call expect_ok(rmmResourceGetDevice(got, dev), 'rmmResourceGetDevice(got)')
    call expect_equal(dev, 1, 'device 1''s pool')
    ! Device 0's resource is untouched; device 1's pool cannot serve device 0.
    call expect_ok(rmmGetPerDeviceResource(0, handle), 'rmmGetPerDeviceResource(0)')
    call expect_name(handle, 'cuda')
    call expect_ok(rmmResourceDestroy(handle), 'rmmResourceDestroy')
    call expect_status(rmmSetPerDeviceResource(0, got, c_null_ptr), &
      RMM_ERROR_INVALID_ARGUMENT, 'rmmSetPerDeviceResource(0, a resource of device 1)')
    call expect_status(rmmSetPerDeviceResource(count, cuda, c_null_ptr), &
      RMM_ERROR_INVALID_ARGUMENT, 'rmmSetPerDeviceResource(no such device)')

    ! With device 1 current, rmm_allocate takes from its pool.
    call expect_ok(rmmSetDevice(1), 'rmmSetDevice(1)')
    call rmm_allocate(on1, 1000)
    if (simulated) then
      on1 = 2.5_c_double
      call expect(abs(sum(on1) - 2500) < 0.5, 'device 1 memory read back')
    end if
    call expect_ok(rmmSetDevice(0), 'rmmSetDevice(0)')
    ! rmmFree returns it to device 1's pool with device 0 current.
    call rmm_free(on1)

    call expect_ok(rmmSetPerDeviceResource(1, previous1, c_null_ptr), &
      'rmmSetPerDeviceResource(1, previous)')
    call expect_ok(rmmResourceDestroy(previous1), 'rmmResourceDestroy(previous1)')
    call expect_ok(rmmResourceDestroy(got), 'rmmResourceDestroy(got)')
    call expect_ok(rmmResourceDestroy(cuda1), 'rmmResourceDestroy(cuda1)')
  end subroutine per_device

  ! rmmResourceAllocate / rmmResourceDeallocate on a stream of our own, the memory written
  ! and read back.
  subroutine allocate_on_streams()
    type(c_ptr) :: stream, p, q
    integer(c_int64_t), pointer :: values(:)
    integer :: i
    call expect_ok(rmmStreamCreate(stream), 'rmmStreamCreate')
    call expect(c_associated(stream), 'a stream handle')
    call expect_ok(rmmResourceAllocate(pool, p, 8000_c_size_t, stream), 'rmmResourceAllocate')
    call expect_ok(rmmResourceAllocate(pool, q, 8000_c_size_t, stream), 'rmmResourceAllocate')
    call expect(c_associated(p) .and. c_associated(q) .and. .not. c_associated(p, q), &
      'two distinct blocks')
    if (simulated) then
      call expect_ok(rmmStreamSynchronize(stream), 'rmmStreamSynchronize')
      call c_f_pointer(p, values, [1000])
      values = [(int(i, c_int64_t) ** 3, i = 1, 1000)]
      call expect(values(1000) == 1000000000_c_int64_t .and. values(7) == 343, &
        'pool memory read back')
    end if
    call expect_status(rmmResourceDeallocate(pool, p, 4000_c_size_t, stream), &
      RMM_ERROR_INVALID_ARGUMENT, 'rmmResourceDeallocate with the wrong size')
    call expect_ok(rmmResourceDeallocate(pool, p, 8000_c_size_t, stream), 'rmmResourceDeallocate')
    call expect_ok(rmmResourceDeallocate(pool, q, 8000_c_size_t, stream), 'rmmResourceDeallocate')
    call expect_ok(rmmResourceDeallocate(pool, c_null_ptr, 0_c_size_t, stream), &
      'rmmResourceDeallocate(c_null_ptr) is a no-op')
    call expect_ok(rmmResourceAllocate(pool, p, 0_c_size_t, stream), 'zero bytes')
    call expect(.not. c_associated(p), 'zero bytes give c_null_ptr')
    call expect_ok(rmmStreamSynchronize(stream), 'rmmStreamSynchronize')
    call expect_ok(rmmStreamDestroy(stream), 'rmmStreamDestroy')
  end subroutine allocate_on_streams

  subroutine suballocators()
    type(c_ptr) :: arena, binning, fixed, bin
    integer(c_int32_t), pointer :: a(:), b(:, :), c(:), big(:)
    integer(c_int) :: s
    integer(c_size_t) :: size

    call expect_ok(rmmArenaResourceCreate(arena, cuda, 0_c_size_t), 'rmmArenaResourceCreate')
    call expect_name(arena, 'arena')
    call rmm_allocate(a, 100, resource=arena)
    call rmm_allocate(big, 2**20, resource=arena)
    if (simulated) then
      a = 7
      big = -1
      call expect(sum(a) == 700 .and. all(big == -1), 'arena memory read back')
    end if
    call rmm_free(a, resource=arena)
    call rmm_free(big, resource=arena)
    call expect_ok(rmmPoolResourceGetSize(arena, size), 'rmmPoolResourceGetSize(arena)')
    call expect(size > 0, 'the arena holds memory')

    ! Bins of 256 B .. 4 KiB over device memory, a 1 MiB bin of a new fixed-size resource
    ! (over device memory too), and a 64 KiB bin of our own fixed-size resource over the pool.
    call expect_ok(rmmBinningResourceCreate(binning, cuda, 8_c_int8_t, 12_c_int8_t), &
      'rmmBinningResourceCreate')
    call expect_name(binning, 'binning')
    call expect_ok(rmmBinningResourceAddBin(binning, MiB, c_null_ptr), 'rmmBinningResourceAddBin')
    call expect_ok(rmmFixedSizeResourceCreate(bin, pool, 64_c_size_t * 1024, 4_c_size_t), &
      'rmmFixedSizeResourceCreate(64 KiB)')
    call expect_ok(rmmBinningResourceAddBin(binning, 64_c_size_t * 1024, bin), &
      'rmmBinningResourceAddBin(bin)')
    call expect_ok(rmmResourceDestroy(bin), 'rmmResourceDestroy(bin): the binning keeps it')
    call rmm_allocate(a, 10, resource=binning)
    call rmm_allocate(b, 100, 100, resource=binning)
    call rmm_allocate(c, 200000, resource=binning)
    call rmm_allocate(big, 3 * 2**20, resource=binning)
    if (simulated) then
      a = 1
      b = 2
      c = 3
      big = 4
      call expect(sum(a) == 10 .and. sum(b) == 20000 .and. sum(c) == 600000 .and. &
        sum(big) == 12 * 2**20, 'binning memory read back')
    end if
    call rmm_free(a, resource=binning)
    call rmm_free(b, resource=binning)
    call rmm_free(c, resource=binning)
    call rmm_free(big, resource=binning)
    call expect_status(rmmBinningResourceCreate(handle, pool, 41_c_int8_t, 41_c_int8_t), &
      RMM_ERROR_INVALID_ARGUMENT, 'rmmBinningResourceCreate with an exponent over 40')

    ! Fixed-size blocks of 4 KiB: larger requests are invalid.
    call expect_ok(rmmFixedSizeResourceCreate(fixed, cuda, 4096_c_size_t, 16_c_size_t), &
      'rmmFixedSizeResourceCreate')
    call expect_name(fixed, 'fixed_size')
    call rmm_allocate(a, 1024, resource=fixed)
    call rmm_allocate(c, 1025, status=s, resource=fixed)
    call expect_status(s, RMM_ERROR_INVALID_ARGUMENT, 'more than a fixed-size block')
    call expect_ok(rmmPoolResourceGetSize(fixed, size), 'rmmPoolResourceGetSize(fixed)')
    call expect_equal(size, 16_c_size_t * 4096, 'the fixed-size resource preallocates')
    call rmm_free(a, resource=fixed)

    call expect_ok(rmmResourceDestroy(arena), 'rmmResourceDestroy(arena)')
    call expect_ok(rmmResourceDestroy(binning), 'rmmResourceDestroy(binning)')
    call expect_ok(rmmResourceDestroy(fixed), 'rmmResourceDestroy(fixed)')
  end subroutine suballocators

  ! Managed, pinned host, expandable and cuda_async resources (the last two where the driver
  ! supports them).
  ! The resources over driver pools and system memory: each made where rmmDeviceSupports says
  ! the device offers what it needs, refused with RMM_ERROR_NOT_SUPPORTED where not.
  subroutine pool_resources()
    type(c_ptr) :: owner, view, made, driver_pool
    integer(c_int) :: s, device
    call expect_ok(rmmGetDevice(device), 'rmmGetDevice')
    call expect_status(rmmAsyncViewResourceCreate(view, c_null_ptr), RMM_ERROR_INVALID_ARGUMENT, &
      'rmmAsyncViewResourceCreate(NULL pool)')
    if (rmmAsyncResourceCreate(owner, 0_c_size_t, -1_c_size_t) == RMM_SUCCESS) then
      call expect_ok(rmmAsyncResourceGetPool(owner, driver_pool), 'rmmAsyncResourceGetPool')
      call expect_ok(rmmAsyncViewResourceCreate(view, driver_pool), 'rmmAsyncViewResourceCreate')
      call expect_name(view, 'cuda_async_view')
      call expect_ok(rmmResourceDestroy(view), 'rmmResourceDestroy(view)')
      call expect_ok(rmmResourceDestroy(owner), 'rmmResourceDestroy(owner)')
    end if
    s = rmmAsyncManagedResourceCreate(made)
    call made_or_refused(s, made, RMM_CAPABILITY_MANAGED_MEMORY_POOLS, 'cuda_async_managed', device)
    s = rmmAsyncPinnedHostResourceCreate(made, 0_c_size_t, -1_c_size_t)
    call made_or_refused(s, made, RMM_CAPABILITY_HOST_MEMORY_POOLS, 'cuda_async_pinned_host', device)
    s = rmmAsyncResourceCreateWithFlags(made, 0_c_size_t, -1_c_size_t, 0_c_int32_t, &
      int(RMM_ASYNC_HW_DECOMPRESS, c_int32_t))
    call made_or_refused(s, made, RMM_CAPABILITY_HW_DECOMPRESS, 'cuda_async', device)
    s = rmmSystemResourceCreate(made)
    call made_or_refused(s, made, RMM_CAPABILITY_PAGEABLE_MEMORY_ACCESS, 'system', device)
    s = rmmSamHeadroomResourceCreate(made, MiB)
    call made_or_refused(s, made, RMM_CAPABILITY_PAGEABLE_MEMORY_ACCESS, 'sam_headroom', device)
  end subroutine pool_resources

  subroutine made_or_refused(status, resource, capability, name, device)
    integer(c_int), intent(in) :: status
    type(c_ptr), intent(in) :: resource
    integer(c_int32_t), intent(in) :: capability
    character(len=*), intent(in) :: name
    integer(c_int), intent(in) :: device
    integer(c_int), target :: supported
    call expect_ok(rmmDeviceSupports(c_loc(supported), capability, device), 'rmmDeviceSupports')
    if (supported == 1) then
      call expect_ok(status, name)
      call expect_name(resource, name)
      call expect_ok(rmmResourceDestroy(resource), 'rmmResourceDestroy(' // name // ')')
    else
      call expect_status(status, RMM_ERROR_NOT_SUPPORTED, name // ' refused')
    end if
  end subroutine made_or_refused

  subroutine device_resources()
    type(c_ptr) :: managed, pinned, async, expandable, driver_pool
    type(rmmExpandableOptions_t), target :: options
    type(rmmFootprint_t) :: footprint
    real(c_double), pointer :: m(:, :), h(:), d(:)
    integer(c_int) :: s
    s = rmmExpandableResourceCreate(expandable, 0_c_size_t)
    if (s == RMM_ERROR_NOT_SUPPORTED) then
      write (*, '(a)') 'note: rmmExpandableResourceCreate: not supported here: ' // &
        rmm_last_error_message()
    else
      call expect_ok(s, 'rmmExpandableResourceCreate(0)')
      call expect_name(expandable, 'expandable')
      call rmm_allocate(d, 1000, resource=expandable)
      call rmm_free(d, resource=expandable)
      call expect_ok(rmmResourceDestroy(expandable), 'rmmResourceDestroy(expandable)')
      ! Every option: pages go back above a 4 MiB threshold; the footprint shows the peak.
      options%release_free_pages = 1
      options%release_threshold = 4 * 2_c_size_t**20
      call expect_ok(rmmExpandableResourceCreateWithOptions(expandable, c_loc(options)), &
        'rmmExpandableResourceCreateWithOptions')
      call rmm_allocate(d, 2**20, resource=expandable)
      call rmm_free(d, resource=expandable)
      call expect_ok(rmmResourceGetFootprint(expandable, footprint), 'rmmResourceGetFootprint')
      call expect(footprint%peak_live_bytes >= 8 * 2_c_size_t**20, 'footprint: the peak of 8 MiB in use')
      call expect(footprint%reserved_bytes <= 4 * 2_c_size_t**20, 'footprint: released above the threshold')
      call expect_ok(rmmResourceDestroy(expandable), 'rmmResourceDestroy(expandable with options)')
    end if
    call expect_ok(rmmManagedResourceCreate(managed), 'rmmManagedResourceCreate')
    call expect_name(managed, 'managed')
    call rmm_allocate(m, 64, 64, resource=managed)
    m = 1.5_c_double ! managed memory is host accessible on real GPUs too
    call expect(abs(sum(m) - 6144) < 0.5, 'managed memory read back')
    call rmm_free(m, resource=managed)
    call expect_ok(rmmResourceDestroy(managed), 'rmmResourceDestroy(managed)')

    call expect_ok(rmmPinnedHostResourceCreate(pinned), 'rmmPinnedHostResourceCreate')
    call expect_name(pinned, 'pinned_host')
    call rmm_allocate(h, 4096, resource=pinned)
    h = -2.0_c_double ! pinned host memory is host memory
    call expect(abs(sum(h) + 8192) < 0.5, 'pinned host memory read back')
    call rmm_free(h, resource=pinned)
    call expect_ok(rmmResourceDestroy(pinned), 'rmmResourceDestroy(pinned)')

    s = rmmAsyncResourceCreate(async, MiB, -1_c_size_t)
    if (s == RMM_ERROR_NOT_SUPPORTED) then
      write (*, '(a)') 'note: rmmAsyncResourceCreate: not supported here: ' // &
        rmm_last_error_message()
      return
    end if
    call expect_ok(s, 'rmmAsyncResourceCreate(1 MiB, SIZE_MAX)')
    call expect_name(async, 'cuda_async')
    call expect_ok(rmmAsyncResourceGetPool(async, driver_pool), 'rmmAsyncResourceGetPool')
    call expect(c_associated(driver_pool), 'a cuda_async resource has a driver pool')
    call rmm_allocate(d, 1000, resource=async)
    if (simulated) then
      d = 3
      call expect(abs(sum(d) - 3000) < 0.5, 'cuda_async memory read back')
    end if
    call rmm_free(d, resource=async)
    call expect_ok(rmmResourceDestroy(async), 'rmmResourceDestroy(async)')

    ! Pool memory other processes can map: simulated devices export POSIX file descriptors.
    s = rmmAsyncResourceCreateExportable(async, MiB, -1_c_size_t, &
      int(RMM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, c_int32_t))
    if (simulated .or. s /= RMM_ERROR_NOT_SUPPORTED) then
      call expect_ok(s, 'rmmAsyncResourceCreateExportable(POSIX file descriptor)')
      call rmm_allocate(d, 1000, resource=async)
      call rmm_free(d, resource=async)
      call expect_ok(rmmResourceDestroy(async), 'rmmResourceDestroy(exportable async)')
    end if
  end subroutine device_resources

  ! The JSON snapshot of the pool: through the wrapper, by length then copy, to a file.
  subroutine snapshots()
    character(len=:), allocatable :: json, from_file
    integer(c_size_t), target :: length
    character(kind=c_char), allocatable, target :: buffer(:)
    type(c_ptr) :: p
    call expect_ok(rmmResourceAllocate(pool, p, 1000_c_size_t, c_null_ptr), &
      'rmmResourceAllocate')
    call expect_ok(rmm_resource_get_snapshot(pool, json), 'rmm_resource_get_snapshot')
    call expect(contains_text(json, '"reserved_bytes"') .and. &
      contains_text(json, '"largest_free_block"') .and. contains_text(json, '"pool"') .and. &
      contains_text(json, '"upstream"'), 'the snapshot of a pool: ' // json)
    length = 0
    call expect_ok(rmmResourceGetSnapshot(pool, c_null_ptr, 0_c_size_t, c_loc(length)), &
      'rmmResourceGetSnapshot(length only)')
    call expect(length == len(json), 'the snapshot length')
    allocate (buffer(length + 1))
    call expect_ok(rmmResourceGetSnapshot(pool, c_loc(buffer), size(buffer, kind=c_size_t), &
      c_null_ptr), 'rmmResourceGetSnapshot(buffer)')
    call expect(rmm_c_string(buffer) == json, 'the same snapshot twice')
    call expect_status(rmmResourceGetSnapshot(pool, c_loc(buffer), 4_c_size_t, c_loc(length)), &
      RMM_ERROR_INVALID_ARGUMENT, 'rmmResourceGetSnapshot into a buffer too small')

    call expect_ok(rmm_resource_write_snapshot(pool, 'fortran_snapshot.json'), &
      'rmm_resource_write_snapshot')
    from_file = read_text_file('fortran_snapshot.json')
    call expect(contains_text(from_file, '"reserved_bytes"'), 'the snapshot file')
    call expect_ok(rmmResourceWriteSnapshot(pool, 'fortran_snapshot2.json' // c_null_char), &
      'rmmResourceWriteSnapshot')
    call expect_status(rmm_resource_write_snapshot(pool, '/nonexistent-dir/snapshot.json'), &
      RMM_ERROR_IO, 'rmm_resource_write_snapshot to a folder that does not exist')
    call expect_ok(rmmResourceDeallocate(pool, p, 1000_c_size_t, c_null_ptr), &
      'rmmResourceDeallocate')
  end subroutine snapshots

end program test_resources
