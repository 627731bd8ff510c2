! rmm.f90: the Fortran binding of rmm-rs, the RAPIDS Memory Manager in Rust (module rmm).
!
! Shipped as source because .mod files are compiler-specific: compile it with the compiler and
! flags of your program and link librmm, e.g.
!     gfortran -c rmm.f90 && gfortran app.f90 rmm.o -lrmm
! CMake projects get it compiled by the rmm::fortran target (find_package(rmm) or
! add_subdirectory, with Fortran enabled) or rmm_add_fortran_module(<target>). Standard
! Fortran 2008 (iso_c_binding) only; it builds with gfortran -std=f2008 -Wall -Wextra -Werror.
!
! Contents:
! - An interface for every function of rmm.h, under its C name (bind(c, name="rmm...")), and
!   the error codes, allocation modes and structs (bind(c) types of the same layout). Each
!   function's contract is its comment in rmm.h.
! - rmm_check(status): stops the program with the error's text and message unless status is
!   RMM_SUCCESS. rmm_error_string, rmm_last_error_message and rmm_c_string give C strings as
!   Fortran strings.
! - rmm_allocate / rmm_free: generic over real(c_float), real(c_double), integer(c_int32_t)
!   and integer(c_int64_t) arrays of rank 1 to 3; they return Fortran pointers to rmm memory.
! - Wrappers that add the NUL to strings (rmm_configure, rmm_write_log,
!   rmm_logging_adaptor_create, rmm_resource_write_snapshot) and give text results as
!   allocatable strings (rmm_resource_get_name, rmm_resource_get_snapshot,
!   rmm_tracking_adaptor_get_report, rmm_get_report, rmm_get_log).
!
! How C types map:
! - rmmResource_t, rmmDeviceBuffer_t and cudaStream_t are type(c_ptr); the default stream is
!   c_null_ptr.
! - Every fallible call returns an integer(c_int) status (an rmmError_t). The framework entry
!   points (rmmTorchAllocate, rmmCupyAllocate) return a type(c_ptr), c_null_ptr on failure;
!   their void deallocate functions are subroutines.
! - An out-pointer is a by-reference argument with intent(inout): rmm writes it only on
!   success, so a value it had before a failed call stays (intent(out) would let the compiler
!   drop that value).
! - A pointer argument that rmm.h allows to be NULL (options, `previous`, `popped`,
!   `released`, `length`, report and snapshot buffers, `records`, the logging path, `conf`,
!   the `file` of rmmAlloc/rmmRealloc/rmmFree, the `capacity` of rmmDeviceBufferSize) is
!   type(c_ptr), value: pass c_null_ptr, or c_loc(x) of a variable x with the TARGET
!   attribute. So are void* data arguments (memory, `host`, `dst`, `src`, `param`).
! - size_t is integer(c_size_t), int is integer(c_int), bool is logical(c_bool), int8_t is
!   integer(c_int8_t), int32_t is integer(c_int32_t), ptrdiff_t is integer(c_intptr_t)
!   (c_ptrdiff_t is Fortran 2018),
!   unsigned int (`line`) is integer(c_int) and uint64_t (`thread`) is integer(c_int64_t).
!   Fortran has no unsigned integers: SIZE_MAX is -1_c_size_t.
! - const char* arguments that may not be NULL are character(kind=c_char) arrays: pass
!   "text"//c_null_char. const char* results are type(c_ptr): rmm_c_string converts them.
! - Allocation modes combine with ior(), e.g. ior(PoolAllocation, CudaManagedMemory).
! - A failure callback is a bind(c) function of interface rmmFailureCallback_t, passed as
!   c_funloc(callback).
!
! Device memory: rmmAlloc, rmmResourceAllocate and rmm_allocate hand out memory of the
! resource, which for device resources the host cannot read or write on a real GPU: give it to
! device code (CUDA Fortran, OpenACC `deviceptr`, kernels in CUDA C) or copy it with CUDA.
! Managed and pinned host memory is host accessible. On simulated devices (RMM_SIM_DEVICES)
! device memory is host memory, so the host may read and write it, as the tests do.
module rmm
  use, intrinsic :: iso_c_binding, only: c_bool, c_char, c_double, c_float, c_funptr, &
    c_f_pointer, c_int, c_int8_t, c_int32_t, c_int64_t, c_intptr_t, c_loc, c_null_char, &
    c_null_ptr, c_ptr, c_size_t, c_associated
  use, intrinsic :: iso_fortran_env, only: error_unit
  implicit none
  private

  ! --- Constants of rmm.h --------------------------------------------------------------------
  public :: RMM_SUCCESS, RMM_ERROR_CUDA_ERROR, RMM_ERROR_INVALID_ARGUMENT, &
    RMM_ERROR_NOT_INITIALIZED, RMM_ERROR_OUT_OF_MEMORY, RMM_ERROR_UNKNOWN, RMM_ERROR_IO, &
    RMM_ERROR_NOT_SUPPORTED, RMM_ERROR_INVALID_HANDLE, RMM_ERROR_ALREADY_INITIALIZED
  public :: RMM_MAX_DEVICES, CudaDefaultAllocation, PoolAllocation, CudaManagedMemory, &
    CudaAsyncAllocation

  ! Error codes (rmmError_t): the values of rmm.h.
  ! The call succeeded.
  integer(c_int), parameter :: RMM_SUCCESS = 0
  ! The CUDA driver reported an error, or no usable driver was found.
  integer(c_int), parameter :: RMM_ERROR_CUDA_ERROR = 1
  ! An argument was invalid: NULL where a value is needed, a pointer rmm-rs did not hand out,
  ! a double free, a size that does not match the allocation.
  integer(c_int), parameter :: RMM_ERROR_INVALID_ARGUMENT = 2
  ! The call needs rmmInitialize (it came after rmmFinalize).
  integer(c_int), parameter :: RMM_ERROR_NOT_INITIALIZED = 3
  ! The resource could not satisfy the allocation.
  integer(c_int), parameter :: RMM_ERROR_OUT_OF_MEMORY = 4
  ! An unexpected internal failure (a bug: please report it).
  integer(c_int), parameter :: RMM_ERROR_UNKNOWN = 5
  ! Reading or writing a file failed.
  integer(c_int), parameter :: RMM_ERROR_IO = 6
  ! The operation is not supported by this resource, device or driver.
  integer(c_int), parameter :: RMM_ERROR_NOT_SUPPORTED = 7
  ! The handle was destroyed, or never was a handle.
  integer(c_int), parameter :: RMM_ERROR_INVALID_HANDLE = 8
  ! rmmInitialize was called again without rmmFinalize in between.
  integer(c_int), parameter :: RMM_ERROR_ALREADY_INITIALIZED = 9

  ! Most devices rmmOptions_t%devices can list.
  integer(c_int32_t), parameter :: RMM_MAX_DEVICES = 64

  ! Legacy allocation-mode flags (rmmAllocationMode_t, a uint32_t): combine with ior().
  ! Device memory from cudaMalloc (the driver's cuMemAlloc), no pool.
  integer(c_int32_t), parameter :: CudaDefaultAllocation = 0
  ! A pool suballocator over the base allocation.
  integer(c_int32_t), parameter :: PoolAllocation = 1
  ! Managed (unified) memory as the base allocation.
  integer(c_int32_t), parameter :: CudaManagedMemory = 2
  ! The driver's stream-ordered allocator (cudaMallocAsync) with a pool of its own.
  integer(c_int32_t), parameter :: CudaAsyncAllocation = 4

  ! --- Structs of rmm.h (same layout) --------------------------------------------------------
  public :: rmmStatistics_t, rmmAllocationRecord_t, rmmOptions_t, rmmFailureCallback_t

  ! Allocation figures of a statistics adaptor's innermost scope: bytes as requested,
  ! allocations as calls. Current values can be negative within a scope that frees memory
  ! allocated before it.
  type, bind(c) :: rmmStatistics_t
    integer(c_int64_t) :: current_bytes = 0
    integer(c_int64_t) :: peak_bytes = 0
    integer(c_int64_t) :: total_bytes = 0
    integer(c_int64_t) :: current_count = 0
    integer(c_int64_t) :: peak_count = 0
    integer(c_int64_t) :: total_count = 0
  end type rmmStatistics_t

  ! One outstanding allocation of a tracking adaptor. `thread` is a uint64_t and `line` a
  ! uint32_t in C; `file` is NUL-terminated ("" when unknown): rmm_c_string(record%file).
  type, bind(c) :: rmmAllocationRecord_t
    type(c_ptr) :: ptr = c_null_ptr
    integer(c_size_t) :: size = 0
    type(c_ptr) :: stream = c_null_ptr
    integer(c_int64_t) :: thread = 0
    integer(c_int32_t) :: line = 0
    character(kind=c_char) :: file(256) = c_null_char
  end type rmmAllocationRecord_t

  ! Options of rmmInitialize. The default value is what rmmInitialize(c_null_ptr) uses:
  ! device memory, no logging, the current device.
  type, bind(c) :: rmmOptions_t
    ! CudaDefaultAllocation, PoolAllocation, CudaManagedMemory, CudaAsyncAllocation, or
    ! ior(PoolAllocation, CudaManagedMemory).
    integer(c_int32_t) :: allocation_mode = CudaDefaultAllocation
    ! Bytes the pool starts with (0: half of the free device memory, as legacy RMM did).
    integer(c_size_t) :: initial_pool_size = 0
    ! Bytes the pool may grow to (0: no limit).
    integer(c_size_t) :: maximum_pool_size = 0
    ! Record allocation events for rmmWriteLog.
    logical(c_bool) :: enable_logging = .false.
    ! How many entries of `devices` to set up; 0 sets up the calling thread's current device.
    integer(c_int32_t) :: num_devices = 0
    ! Device ordinals to set up.
    integer(c_int32_t) :: devices(RMM_MAX_DEVICES) = 0
  end type rmmOptions_t

  ! The failure callback of rmmFailureCallbackAdaptorCreate: called with the bytes asked for
  ! and the `arg` given at creation; returning .true. retries the allocation. Write it as
  !     function on_oom(bytes, arg) bind(c) result(retry)
  ! with the dummies and result declared as here, and pass c_funloc(on_oom).
  abstract interface
    function rmmFailureCallback_t(bytes, arg) bind(c)
      import :: c_bool, c_ptr, c_size_t
      integer(c_size_t), value :: bytes
      type(c_ptr), value :: arg
      logical(c_bool) :: rmmFailureCallback_t
    end function rmmFailureCallback_t
  end interface

  ! --- The functions of rmm.h, in its order ---------------------------------------------------
  public :: rmmStatisticsAdaptorCreate, rmmStatisticsAdaptorGetCounts, &
    rmmStatisticsAdaptorPushCounters, rmmStatisticsAdaptorPopCounters, rmmLoggingAdaptorCreate, &
    rmmLoggingAdaptorFlush, rmmLimitingAdaptorCreate, rmmLimitingAdaptorGetAllocatedBytes, &
    rmmTrackingAdaptorCreate, rmmTrackingAdaptorGetOutstanding, rmmTrackingAdaptorGetReport, &
    rmmFailureCallbackAdaptorCreate, rmmAlignedAdaptorCreate, rmmPrefetchAdaptorCreate
  public :: rmmConfigure, rmmGetReport
  public :: rmmDeviceBufferCreate, rmmDeviceBufferCreateFromHost, rmmDeviceBufferCopyToHost, &
    rmmDeviceBufferResize, rmmDeviceBufferShrinkToFit, rmmDeviceBufferCopy, &
    rmmDeviceBufferData, rmmDeviceBufferSize, rmmDeviceBufferSetStream, rmmDeviceBufferDestroy
  public :: rmmSetPerDeviceResource, rmmGetPerDeviceResource, rmmSetCurrentDeviceResource, &
    rmmGetCurrentDeviceResource, rmmGetDevice, rmmSetDevice, rmmGetDeviceCount, rmmIsSimulated, &
    rmmSimGetRaceCount
  public :: rmmTorchAllocate, rmmTorchDeallocate, rmmCupyAllocate, rmmCupyDeallocate
  public :: rmmInitialize, rmmFinalize, rmmIsInitialized, rmmAlloc, rmmRealloc, rmmFree, &
    rmmWriteLog, rmmLogSize, rmmGetLog, rmmGetInfo, rmmGetAllocationOffset, rmmGetErrorString, &
    rmmGetErrorName, rmmGetLastErrorMessage
  public :: rmmCudaResourceCreate, rmmManagedResourceCreate, rmmAsyncResourceCreate, &
    rmmPinnedHostResourceCreate, rmmResourceDestroy, rmmResourceAllocate, &
    rmmResourceDeallocate, rmmResourceGetDevice, rmmResourceGetName, rmmResourceGetSnapshot, &
    rmmResourceWriteSnapshot, rmmStreamCreate, rmmStreamDestroy, rmmStreamSynchronize, &
    rmmMemcpyAsync
  public :: rmmPoolResourceCreate, rmmPoolResourceGetSize, rmmPoolResourceGetFree, &
    rmmResourceRelease, &
    rmmArenaResourceCreate, rmmBinningResourceCreate, rmmBinningResourceAddBin, &
    rmmFixedSizeResourceCreate

  interface
    ! --- Adaptors ---
    ! A statistics adaptor over `upstream` (rmmStatistics_t figures).
    integer(c_int) function rmmStatisticsAdaptorCreate(resource, upstream) &
        bind(c, name="rmmStatisticsAdaptorCreate")
      import
      type(c_ptr), intent(inout) :: resource
      type(c_ptr), value :: upstream
    end function rmmStatisticsAdaptorCreate

    ! The figures of the innermost scope of a statistics adaptor.
    integer(c_int) function rmmStatisticsAdaptorGetCounts(resource, counts) &
        bind(c, name="rmmStatisticsAdaptorGetCounts")
      import
      type(c_ptr), value :: resource
      type(rmmStatistics_t), intent(inout) :: counts
    end function rmmStatisticsAdaptorGetCounts

    ! Starts a nested scope of a statistics adaptor.
    integer(c_int) function rmmStatisticsAdaptorPushCounters(resource) &
        bind(c, name="rmmStatisticsAdaptorPushCounters")
      import
      type(c_ptr), value :: resource
    end function rmmStatisticsAdaptorPushCounters

    ! Ends the innermost scope; `popped`: c_loc(an rmmStatistics_t target) or c_null_ptr.
    integer(c_int) function rmmStatisticsAdaptorPopCounters(resource, popped) &
        bind(c, name="rmmStatisticsAdaptorPopCounters")
      import
      type(c_ptr), value :: resource
      type(c_ptr), value :: popped
    end function rmmStatisticsAdaptorPopCounters

    ! A logging adaptor writing RAPIDS RMM's CSV to `path`: c_loc of a NUL-terminated
    ! character(kind=c_char) target, or c_null_ptr for $RMM_LOG_FILE. Easier:
    ! rmm_logging_adaptor_create.
    integer(c_int) function rmmLoggingAdaptorCreate(resource, upstream, path) &
        bind(c, name="rmmLoggingAdaptorCreate")
      import
      type(c_ptr), intent(inout) :: resource
      type(c_ptr), value :: upstream
      type(c_ptr), value :: path
    end function rmmLoggingAdaptorCreate

    ! Writes the buffered lines of a logging adaptor to its file.
    integer(c_int) function rmmLoggingAdaptorFlush(resource) bind(c, name="rmmLoggingAdaptorFlush")
      import
      type(c_ptr), value :: resource
    end function rmmLoggingAdaptorFlush

    ! A limiting adaptor: RMM_ERROR_OUT_OF_MEMORY past `limit` bytes.
    integer(c_int) function rmmLimitingAdaptorCreate(resource, upstream, limit) &
        bind(c, name="rmmLimitingAdaptorCreate")
      import
      type(c_ptr), intent(inout) :: resource
      type(c_ptr), value :: upstream
      integer(c_size_t), value :: limit
    end function rmmLimitingAdaptorCreate

    ! The bytes a limiting adaptor counts as allocated.
    integer(c_int) function rmmLimitingAdaptorGetAllocatedBytes(resource, bytes) &
        bind(c, name="rmmLimitingAdaptorGetAllocatedBytes")
      import
      type(c_ptr), value :: resource
      integer(c_size_t), intent(inout) :: bytes
    end function rmmLimitingAdaptorGetAllocatedBytes

    ! A tracking adaptor recording every outstanding allocation.
    integer(c_int) function rmmTrackingAdaptorCreate(resource, upstream, capture_stacks) &
        bind(c, name="rmmTrackingAdaptorCreate")
      import
      type(c_ptr), intent(inout) :: resource
      type(c_ptr), value :: upstream
      logical(c_bool), value :: capture_stacks
    end function rmmTrackingAdaptorCreate

    ! The outstanding allocations of a tracking adaptor: `records` is c_loc(an array of
    ! `capacity` rmmAllocationRecord_t, TARGET) or c_null_ptr with capacity 0.
    integer(c_int) function rmmTrackingAdaptorGetOutstanding(resource, records, capacity, count) &
        bind(c, name="rmmTrackingAdaptorGetOutstanding")
      import
      type(c_ptr), value :: resource
      type(c_ptr), value :: records
      integer(c_size_t), value :: capacity
      integer(c_size_t), intent(inout) :: count
    end function rmmTrackingAdaptorGetOutstanding

    ! The leak report of a tracking adaptor into `buffer` (c_loc of `size` characters, or
    ! c_null_ptr to ask the length into `length`, itself c_loc(an integer(c_size_t)) or
    ! c_null_ptr). Easier: rmm_tracking_adaptor_get_report.
    integer(c_int) function rmmTrackingAdaptorGetReport(resource, buffer, size, length) &
        bind(c, name="rmmTrackingAdaptorGetReport")
      import
      type(c_ptr), value :: resource
      type(c_ptr), value :: buffer
      integer(c_size_t), value :: size
      type(c_ptr), value :: length
    end function rmmTrackingAdaptorGetReport

    ! A failure-callback adaptor: `callback` is c_funloc of an rmmFailureCallback_t function.
    integer(c_int) function rmmFailureCallbackAdaptorCreate(resource, upstream, callback, arg) &
        bind(c, name="rmmFailureCallbackAdaptorCreate")
      import
      type(c_ptr), intent(inout) :: resource
      type(c_ptr), value :: upstream
      type(c_funptr), value :: callback
      type(c_ptr), value :: arg
    end function rmmFailureCallbackAdaptorCreate

    ! An aligned adaptor: allocations of at least `threshold` bytes aligned to `alignment`.
    integer(c_int) function rmmAlignedAdaptorCreate(resource, upstream, alignment, threshold) &
        bind(c, name="rmmAlignedAdaptorCreate")
      import
      type(c_ptr), intent(inout) :: resource
      type(c_ptr), value :: upstream
      integer(c_size_t), value :: alignment
      integer(c_size_t), value :: threshold
    end function rmmAlignedAdaptorCreate

    ! A prefetch adaptor: managed memory migrated to the device on allocation.
    integer(c_int) function rmmPrefetchAdaptorCreate(resource, upstream) &
        bind(c, name="rmmPrefetchAdaptorCreate")
      import
      type(c_ptr), intent(inout) :: resource
      type(c_ptr), value :: upstream
    end function rmmPrefetchAdaptorCreate

    ! --- Configuration by string (RMM_ALLOC_CONF) ---
    ! Sets up the resource stack devices get on first use from `conf`: c_loc of a
    ! NUL-terminated character(kind=c_char) target such as "resource:pool,stats:1", or
    ! c_null_ptr for $RMM_ALLOC_CONF. Easier: rmm_configure.
    integer(c_int) function rmmConfigure(conf) bind(c, name="rmmConfigure")
      import
      type(c_ptr), value :: conf
    end function rmmConfigure

    ! The report of `report:1` into `buffer` (as rmmTrackingAdaptorGetReport). Easier:
    ! rmm_get_report.
    integer(c_int) function rmmGetReport(buffer, size, length) bind(c, name="rmmGetReport")
      import
      type(c_ptr), value :: buffer
      integer(c_size_t), value :: size
      type(c_ptr), value :: length
    end function rmmGetReport

    ! --- Device buffers (rmmDeviceBuffer_t: type(c_ptr)) ---
    ! A buffer of `size` uninitialized bytes from `resource` (c_null_ptr: the current
    ! device's resource), ordered on `stream`. Destroy it with rmmDeviceBufferDestroy.
    integer(c_int) function rmmDeviceBufferCreate(buffer, size, stream, resource) &
        bind(c, name="rmmDeviceBufferCreate")
      import
      type(c_ptr), intent(inout) :: buffer
      integer(c_size_t), value :: size
      type(c_ptr), value :: stream
      type(c_ptr), value :: resource
    end function rmmDeviceBufferCreate

    ! A buffer holding a copy of the `size` bytes at `host` (c_loc of a TARGET array;
    ! c_null_ptr only with size 0), complete on return.
    integer(c_int) function rmmDeviceBufferCreateFromHost(buffer, host, size, stream, resource) &
        bind(c, name="rmmDeviceBufferCreateFromHost")
      import
      type(c_ptr), intent(inout) :: buffer
      type(c_ptr), value :: host
      integer(c_size_t), value :: size
      type(c_ptr), value :: stream
      type(c_ptr), value :: resource
    end function rmmDeviceBufferCreateFromHost

    ! Copies the buffer to `host` (c_loc of a TARGET array of `host_size` bytes, at least the
    ! buffer's size) and waits for the copy.
    integer(c_int) function rmmDeviceBufferCopyToHost(buffer, host, host_size, stream) &
        bind(c, name="rmmDeviceBufferCopyToHost")
      import
      type(c_ptr), value :: buffer
      type(c_ptr), value :: host
      integer(c_size_t), value :: host_size
      type(c_ptr), value :: stream
    end function rmmDeviceBufferCopyToHost

    ! Sets the buffer's size (beyond its capacity the contents move to a new allocation).
    integer(c_int) function rmmDeviceBufferResize(buffer, size, stream) &
        bind(c, name="rmmDeviceBufferResize")
      import
      type(c_ptr), value :: buffer
      integer(c_size_t), value :: size
      type(c_ptr), value :: stream
    end function rmmDeviceBufferResize

    ! Gives back the capacity beyond the size.
    integer(c_int) function rmmDeviceBufferShrinkToFit(buffer, stream) &
        bind(c, name="rmmDeviceBufferShrinkToFit")
      import
      type(c_ptr), value :: buffer
      type(c_ptr), value :: stream
    end function rmmDeviceBufferShrinkToFit

    ! A new buffer in `copy` with the contents of `source`, from `resource` (c_null_ptr: the
    ! source's resource).
    integer(c_int) function rmmDeviceBufferCopy(copy, source, stream, resource) &
        bind(c, name="rmmDeviceBufferCopy")
      import
      type(c_ptr), intent(inout) :: copy
      type(c_ptr), value :: source
      type(c_ptr), value :: stream
      type(c_ptr), value :: resource
    end function rmmDeviceBufferCopy

    ! The buffer's device address (c_null_ptr for an empty buffer).
    integer(c_int) function rmmDeviceBufferData(buffer, data) bind(c, name="rmmDeviceBufferData")
      import
      type(c_ptr), value :: buffer
      type(c_ptr), intent(inout) :: data
    end function rmmDeviceBufferData

    ! The buffer's size in bytes; `capacity`: c_loc(an integer(c_size_t) target) or c_null_ptr.
    integer(c_int) function rmmDeviceBufferSize(buffer, size, capacity) &
        bind(c, name="rmmDeviceBufferSize")
      import
      type(c_ptr), value :: buffer
      integer(c_size_t), intent(inout) :: size
      type(c_ptr), value :: capacity
    end function rmmDeviceBufferSize

    ! Makes `stream` the buffer's stream (later resizes and the free are ordered on it).
    integer(c_int) function rmmDeviceBufferSetStream(buffer, stream) &
        bind(c, name="rmmDeviceBufferSetStream")
      import
      type(c_ptr), value :: buffer
      type(c_ptr), value :: stream
    end function rmmDeviceBufferSetStream

    ! Frees the buffer in the order of its stream and destroys the handle (c_null_ptr: no-op).
    integer(c_int) function rmmDeviceBufferDestroy(buffer) bind(c, name="rmmDeviceBufferDestroy")
      import
      type(c_ptr), value :: buffer
    end function rmmDeviceBufferDestroy

    ! --- Devices and the per-device registry ---
    ! Makes `resource` the resource of `device`; `previous`: c_loc(a type(c_ptr) target) to
    ! receive the replaced resource's new handle, or c_null_ptr.
    integer(c_int) function rmmSetPerDeviceResource(device, resource, previous) &
        bind(c, name="rmmSetPerDeviceResource")
      import
      integer(c_int), value :: device
      type(c_ptr), value :: resource
      type(c_ptr), value :: previous
    end function rmmSetPerDeviceResource

    ! A new handle to `device`'s resource.
    integer(c_int) function rmmGetPerDeviceResource(device, resource) &
        bind(c, name="rmmGetPerDeviceResource")
      import
      integer(c_int), value :: device
      type(c_ptr), intent(inout) :: resource
    end function rmmGetPerDeviceResource

    ! rmmSetPerDeviceResource for the current device.
    integer(c_int) function rmmSetCurrentDeviceResource(resource, previous) &
        bind(c, name="rmmSetCurrentDeviceResource")
      import
      type(c_ptr), value :: resource
      type(c_ptr), value :: previous
    end function rmmSetCurrentDeviceResource

    ! rmmGetPerDeviceResource for the current device.
    integer(c_int) function rmmGetCurrentDeviceResource(resource) &
        bind(c, name="rmmGetCurrentDeviceResource")
      import
      type(c_ptr), intent(inout) :: resource
    end function rmmGetCurrentDeviceResource

    ! The calling thread's current device.
    integer(c_int) function rmmGetDevice(device) bind(c, name="rmmGetDevice")
      import
      integer(c_int), intent(inout) :: device
    end function rmmGetDevice

    ! Makes `device` current on the calling thread.
    integer(c_int) function rmmSetDevice(device) bind(c, name="rmmSetDevice")
      import
      integer(c_int), value :: device
    end function rmmSetDevice

    ! The number of devices.
    integer(c_int) function rmmGetDeviceCount(count) bind(c, name="rmmGetDeviceCount")
      import
      integer(c_int), intent(inout) :: count
    end function rmmGetDeviceCount

    ! .true. on simulated devices (RMM_SIM_DEVICES), .false. on the CUDA driver.
    integer(c_int) function rmmIsSimulated(simulated) bind(c, name="rmmIsSimulated")
      import
      logical(c_bool), intent(inout) :: simulated
    end function rmmIsSimulated

    ! The stream-ordering races the simulator found (RMM_SIM_ON_RACE=count).
    integer(c_int) function rmmSimGetRaceCount(count) bind(c, name="rmmSimGetRaceCount")
      import
      integer(c_size_t), intent(inout) :: count
    end function rmmSimGetRaceCount

    ! --- Framework entry points (PyTorch, CuPy): no status; failures leave the message ---
    ! PyTorch's allocate: `size` bytes on `device` for `stream`; c_null_ptr on failure.
    type(c_ptr) function rmmTorchAllocate(size, device, stream) bind(c, name="rmmTorchAllocate")
      import
      integer(c_intptr_t), value :: size
      integer(c_int32_t), value :: device
      type(c_ptr), value :: stream
    end function rmmTorchAllocate

    ! PyTorch's free: returns `ptr` (from rmmTorchAllocate) in the order of `stream`.
    subroutine rmmTorchDeallocate(ptr, size, device, stream) bind(c, name="rmmTorchDeallocate")
      import
      type(c_ptr), value :: ptr
      integer(c_intptr_t), value :: size
      integer(c_int32_t), value :: device
      type(c_ptr), value :: stream
    end subroutine rmmTorchDeallocate

    ! CuPy's malloc: `size` bytes on `device` from the resource `param` (c_null_ptr: the
    ! device's current resource), on the legacy default stream; c_null_ptr on failure.
    type(c_ptr) function rmmCupyAllocate(param, size, device) bind(c, name="rmmCupyAllocate")
      import
      type(c_ptr), value :: param
      integer(c_size_t), value :: size
      integer(c_int32_t), value :: device
    end function rmmCupyAllocate

    ! CuPy's free: returns `ptr` (from rmmCupyAllocate) on the legacy default stream.
    subroutine rmmCupyDeallocate(param, ptr, device) bind(c, name="rmmCupyDeallocate")
      import
      type(c_ptr), value :: param
      type(c_ptr), value :: ptr
      integer(c_int32_t), value :: device
    end subroutine rmmCupyDeallocate

    ! --- Legacy API ---
    ! `options`: c_loc(an rmmOptions_t target), or c_null_ptr for the defaults.
    integer(c_int) function rmmInitialize(options) bind(c, name="rmmInitialize")
      import
      type(c_ptr), value :: options
    end function rmmInitialize

    ! Ends what rmmInitialize set up.
    integer(c_int) function rmmFinalize() bind(c, name="rmmFinalize")
      import
    end function rmmFinalize

    ! .true. when initialized; copies the options in force to `options` (c_loc(an rmmOptions_t
    ! target)) unless it is c_null_ptr.
    logical(c_bool) function rmmIsInitialized(options) bind(c, name="rmmIsInitialized")
      import
      type(c_ptr), value :: options
    end function rmmIsInitialized

    ! `size` bytes from the current device's resource. `file`: c_loc of a NUL-terminated
    ! character(kind=c_char) target naming the call site, or c_null_ptr with `line` 0.
    integer(c_int) function rmmAlloc(ptr, size, stream, file, line) bind(c, name="rmmAlloc")
      import
      type(c_ptr), intent(inout) :: ptr
      integer(c_size_t), value :: size
      type(c_ptr), value :: stream
      type(c_ptr), value :: file
      integer(c_int), value :: line
    end function rmmAlloc

    ! Resizes the allocation at `ptr` (updated on success).
    integer(c_int) function rmmRealloc(ptr, new_size, stream, file, line) &
        bind(c, name="rmmRealloc")
      import
      type(c_ptr), intent(inout) :: ptr
      integer(c_size_t), value :: new_size
      type(c_ptr), value :: stream
      type(c_ptr), value :: file
      integer(c_int), value :: line
    end function rmmRealloc

    ! Frees memory rmm allocated, in the order of `stream`.
    integer(c_int) function rmmFree(ptr, stream, file, line) bind(c, name="rmmFree")
      import
      type(c_ptr), value :: ptr
      type(c_ptr), value :: stream
      type(c_ptr), value :: file
      integer(c_int), value :: line
    end function rmmFree

    ! Writes the event log to `filename` ("name"//c_null_char). Easier: rmm_write_log.
    integer(c_int) function rmmWriteLog(filename) bind(c, name="rmmWriteLog")
      import
      character(kind=c_char), dimension(*), intent(in) :: filename
    end function rmmWriteLog

    ! The length in bytes of the event log's CSV text.
    integer(c_size_t) function rmmLogSize() bind(c, name="rmmLogSize")
      import
    end function rmmLogSize

    ! Copies the event log's CSV text into `buffer` (at most buffer_size characters, plus a
    ! NUL when there is room). Easier: rmm_get_log.
    integer(c_int) function rmmGetLog(buffer, buffer_size) bind(c, name="rmmGetLog")
      import
      character(kind=c_char), dimension(*), intent(inout) :: buffer
      integer(c_size_t), value :: buffer_size
    end function rmmGetLog

    ! The free and total bytes of the current device.
    integer(c_int) function rmmGetInfo(free_size, total_size, stream) bind(c, name="rmmGetInfo")
      import
      integer(c_size_t), intent(inout) :: free_size
      integer(c_size_t), intent(inout) :: total_size
      type(c_ptr), value :: stream
    end function rmmGetInfo

    ! How far `ptr` lies from the start of its device allocation.
    integer(c_int) function rmmGetAllocationOffset(offset, ptr, stream) &
        bind(c, name="rmmGetAllocationOffset")
      import
      integer(c_intptr_t), intent(inout) :: offset
      type(c_ptr), value :: ptr
      type(c_ptr), value :: stream
    end function rmmGetAllocationOffset

    ! A static description of an error code (a C string). Easier: rmm_error_string.
    type(c_ptr) function rmmGetErrorString(errcode) bind(c, name="rmmGetErrorString")
      import
      integer(c_int32_t), value :: errcode
    end function rmmGetErrorString

    ! The name of an error code ("RMM_ERROR_OUT_OF_MEMORY"; a C string).
    type(c_ptr) function rmmGetErrorName(errcode) bind(c, name="rmmGetErrorName")
      import
      integer(c_int32_t), value :: errcode
    end function rmmGetErrorName

    ! The message of the thread's last failed call (a C string). Easier:
    ! rmm_last_error_message.
    type(c_ptr) function rmmGetLastErrorMessage() bind(c, name="rmmGetLastErrorMessage")
      import
    end function rmmGetLastErrorMessage

    ! --- Resources ---
    ! A cuda (device memory) resource of the current device.
    integer(c_int) function rmmCudaResourceCreate(resource) bind(c, name="rmmCudaResourceCreate")
      import
      type(c_ptr), intent(inout) :: resource
    end function rmmCudaResourceCreate

    ! A managed-memory resource of the current device.
    integer(c_int) function rmmManagedResourceCreate(resource) &
        bind(c, name="rmmManagedResourceCreate")
      import
      type(c_ptr), intent(inout) :: resource
    end function rmmManagedResourceCreate

    ! A cudaMallocAsync resource with a driver pool of its own (-1_c_size_t: SIZE_MAX).
    integer(c_int) function rmmAsyncResourceCreate(resource, initial_pool_size, release_threshold) &
        bind(c, name="rmmAsyncResourceCreate")
      import
      type(c_ptr), intent(inout) :: resource
      integer(c_size_t), value :: initial_pool_size
      integer(c_size_t), value :: release_threshold
    end function rmmAsyncResourceCreate

    ! A pinned host memory resource.
    integer(c_int) function rmmPinnedHostResourceCreate(resource) &
        bind(c, name="rmmPinnedHostResourceCreate")
      import
      type(c_ptr), intent(inout) :: resource
    end function rmmPinnedHostResourceCreate

    ! Releases the caller's handle (c_null_ptr: no-op).
    integer(c_int) function rmmResourceDestroy(resource) bind(c, name="rmmResourceDestroy")
      import
      type(c_ptr), value :: resource
    end function rmmResourceDestroy

    ! `bytes` from `resource`, for use on `stream`.
    integer(c_int) function rmmResourceAllocate(resource, ptr, bytes, stream) &
        bind(c, name="rmmResourceAllocate")
      import
      type(c_ptr), value :: resource
      type(c_ptr), intent(inout) :: ptr
      integer(c_size_t), value :: bytes
      type(c_ptr), value :: stream
    end function rmmResourceAllocate

    ! Returns `ptr`, allocated from `resource` with size `bytes`.
    integer(c_int) function rmmResourceDeallocate(resource, ptr, bytes, stream) &
        bind(c, name="rmmResourceDeallocate")
      import
      type(c_ptr), value :: resource
      type(c_ptr), value :: ptr
      integer(c_size_t), value :: bytes
      type(c_ptr), value :: stream
    end function rmmResourceDeallocate

    ! The device whose memory `resource` hands out.
    integer(c_int) function rmmResourceGetDevice(resource, device) &
        bind(c, name="rmmResourceGetDevice")
      import
      type(c_ptr), value :: resource
      integer(c_int), intent(inout) :: device
    end function rmmResourceGetDevice

    ! The kind of `resource` as a static C string. Easier: rmm_resource_get_name.
    integer(c_int) function rmmResourceGetName(resource, name) bind(c, name="rmmResourceGetName")
      import
      type(c_ptr), value :: resource
      type(c_ptr), intent(inout) :: name
    end function rmmResourceGetName

    ! The JSON snapshot of `resource` into `buffer` (as rmmTrackingAdaptorGetReport).
    ! Easier: rmm_resource_get_snapshot.
    integer(c_int) function rmmResourceGetSnapshot(resource, buffer, size, length) &
        bind(c, name="rmmResourceGetSnapshot")
      import
      type(c_ptr), value :: resource
      type(c_ptr), value :: buffer
      integer(c_size_t), value :: size
      type(c_ptr), value :: length
    end function rmmResourceGetSnapshot

    ! Writes the snapshot of `resource` to `path` ("name"//c_null_char). Easier:
    ! rmm_resource_write_snapshot.
    integer(c_int) function rmmResourceWriteSnapshot(resource, path) &
        bind(c, name="rmmResourceWriteSnapshot")
      import
      type(c_ptr), value :: resource
      character(kind=c_char), dimension(*), intent(in) :: path
    end function rmmResourceWriteSnapshot

    ! --- Streams ---
    ! A stream on the current device.
    integer(c_int) function rmmStreamCreate(stream) bind(c, name="rmmStreamCreate")
      import
      type(c_ptr), intent(inout) :: stream
    end function rmmStreamCreate

    ! Destroys a stream made by rmmStreamCreate.
    integer(c_int) function rmmStreamDestroy(stream) bind(c, name="rmmStreamDestroy")
      import
      type(c_ptr), value :: stream
    end function rmmStreamDestroy

    ! Waits until all work enqueued on `stream` has finished.
    integer(c_int) function rmmStreamSynchronize(stream) bind(c, name="rmmStreamSynchronize")
      import
      type(c_ptr), value :: stream
    end function rmmStreamSynchronize

    ! Copies `bytes` from `src` to `dst` (device or host memory) in the order of `stream`;
    ! rmmStreamSynchronize before the host uses `dst`.
    integer(c_int) function rmmMemcpyAsync(dst, src, bytes, stream) bind(c, name="rmmMemcpyAsync")
      import
      type(c_ptr), value :: dst
      type(c_ptr), value :: src
      integer(c_size_t), value :: bytes
      type(c_ptr), value :: stream
    end function rmmMemcpyAsync

    ! --- Suballocators ---
    ! A pool over `upstream` (maximum_size 0: no limit).
    integer(c_int) function rmmPoolResourceCreate(resource, upstream, initial_size, maximum_size) &
        bind(c, name="rmmPoolResourceCreate")
      import
      type(c_ptr), intent(inout) :: resource
      type(c_ptr), value :: upstream
      integer(c_size_t), value :: initial_size
      integer(c_size_t), value :: maximum_size
    end function rmmPoolResourceCreate

    ! The bytes a pool, arena or fixed-size resource holds from its upstream.
    integer(c_int) function rmmPoolResourceGetSize(resource, size) &
        bind(c, name="rmmPoolResourceGetSize")
      import
      type(c_ptr), value :: resource
      integer(c_size_t), intent(inout) :: size
    end function rmmPoolResourceGetSize

    ! The bytes a pool-like resource (or a stack over one) holds but has free.
    integer(c_int) function rmmPoolResourceGetFree(resource, size) &
        bind(c, name="rmmPoolResourceGetFree")
      import
      type(c_ptr), value :: resource
      integer(c_size_t), intent(inout) :: size
    end function rmmPoolResourceGetFree

    ! Gives unused memory back upstream; `released`: c_loc(an integer(c_size_t) target) or
    ! c_null_ptr.
    integer(c_int) function rmmResourceRelease(resource, released) &
        bind(c, name="rmmResourceRelease")
      import
      type(c_ptr), value :: resource
      type(c_ptr), value :: released
    end function rmmResourceRelease

    ! An arena over `upstream` (arena_size 0: grows on demand).
    integer(c_int) function rmmArenaResourceCreate(resource, upstream, arena_size) &
        bind(c, name="rmmArenaResourceCreate")
      import
      type(c_ptr), intent(inout) :: resource
      type(c_ptr), value :: upstream
      integer(c_size_t), value :: arena_size
    end function rmmArenaResourceCreate

    ! A binning resource with bins of 2**min_size_exponent .. 2**max_size_exponent bytes.
    integer(c_int) function rmmBinningResourceCreate(resource, upstream, min_size_exponent, &
        max_size_exponent) bind(c, name="rmmBinningResourceCreate")
      import
      type(c_ptr), intent(inout) :: resource
      type(c_ptr), value :: upstream
      integer(c_int8_t), value :: min_size_exponent
      integer(c_int8_t), value :: max_size_exponent
    end function rmmBinningResourceCreate

    ! Adds the bin for requests up to `allocation_size` bytes (`bin` c_null_ptr: a new
    ! fixed-size resource).
    integer(c_int) function rmmBinningResourceAddBin(resource, allocation_size, bin) &
        bind(c, name="rmmBinningResourceAddBin")
      import
      type(c_ptr), value :: resource
      integer(c_size_t), value :: allocation_size
      type(c_ptr), value :: bin
    end function rmmBinningResourceAddBin

    ! A resource of fixed-size blocks over `upstream`.
    integer(c_int) function rmmFixedSizeResourceCreate(resource, upstream, block_size, &
        blocks_to_preallocate) bind(c, name="rmmFixedSizeResourceCreate")
      import
      type(c_ptr), intent(inout) :: resource
      type(c_ptr), value :: upstream
      integer(c_size_t), value :: block_size
      integer(c_size_t), value :: blocks_to_preallocate
    end function rmmFixedSizeResourceCreate
  end interface

  ! The C library's strlen, to convert C strings.
  interface
    integer(c_size_t) function rmm_strlen(string) bind(c, name="strlen")
      import :: c_ptr, c_size_t
      type(c_ptr), value :: string
    end function rmm_strlen
  end interface

  ! --- Fortran helpers ------------------------------------------------------------------------
  public :: rmm_check, rmm_error_string, rmm_last_error_message, rmm_c_string
  public :: rmm_logging_adaptor_create, rmm_write_log, rmm_resource_write_snapshot, &
    rmm_configure, rmm_resource_get_name, rmm_resource_get_snapshot, &
    rmm_tracking_adaptor_get_report, rmm_get_report, rmm_get_log
  public :: rmm_allocate, rmm_free

  ! The texts rmm_get_text fetches.
  integer, parameter :: TEXT_SNAPSHOT = 1, TEXT_TRACKING_REPORT = 2, TEXT_REPORT = 3

  ! rmm_c_string(x): a Fortran string from a C string, x a type(c_ptr) (c_null_ptr gives "")
  ! or a NUL-terminated character(kind=c_char) array such as rmmAllocationRecord_t%file.
  interface rmm_c_string
    module procedure rmm_c_string_from_ptr, rmm_c_string_from_chars
  end interface rmm_c_string

  ! BEGIN GENERATED INTERFACES (f_tests/generate_helpers.py; do not edit by hand)
  ! call rmm_allocate(array, n1 [, n2 [, n3]] [, stream] [, status] [, resource])
  !   Points `array`, a pointer array of real(c_float), real(c_double), integer(c_int32_t) or
  !   integer(c_int64_t) of rank 1 to 3, at new rmm memory of extents n1, n2, n3 (lower bounds
  !   1; all of kind c_int32_t or all of kind c_int64_t). The memory comes from `resource`
  !   (rmmResourceAllocate) when it is given, otherwise from the current device's resource
  !   (rmmAlloc), for use on `stream` (default: the default stream, c_null_ptr). Zero or
  !   negative extents give a zero-size array, as ALLOCATE does, without device memory.
  !   On failure `array` is nullified and `status` receives the error; without `status` a
  !   failure stops the program (rmm_check).
  interface rmm_allocate
    module procedure rmm_allocate_real32_1d_i32, rmm_allocate_real32_1d_i64, &
      rmm_allocate_real32_2d_i32, rmm_allocate_real32_2d_i64, rmm_allocate_real32_3d_i32, &
      rmm_allocate_real32_3d_i64, rmm_allocate_real64_1d_i32, rmm_allocate_real64_1d_i64, &
      rmm_allocate_real64_2d_i32, rmm_allocate_real64_2d_i64, rmm_allocate_real64_3d_i32, &
      rmm_allocate_real64_3d_i64, rmm_allocate_int32_1d_i32, rmm_allocate_int32_1d_i64, &
      rmm_allocate_int32_2d_i32, rmm_allocate_int32_2d_i64, rmm_allocate_int32_3d_i32, &
      rmm_allocate_int32_3d_i64, rmm_allocate_int64_1d_i32, rmm_allocate_int64_1d_i64, &
      rmm_allocate_int64_2d_i32, rmm_allocate_int64_2d_i64, rmm_allocate_int64_3d_i32, &
      rmm_allocate_int64_3d_i64
  end interface rmm_allocate

  ! call rmm_free(array [, stream] [, status] [, resource])
  !   Returns the memory of a pointer from rmm_allocate, in the order of `stream`, and
  !   nullifies `array`: with rmmResourceDeallocate on `resource` when it is given (it must be
  !   the resource that allocated), otherwise with rmmFree. A disassociated `array` is a no-op
  !   (the pointer must not be undefined). On failure `array` stays associated and `status`
  !   receives the error (a pointer freed twice, through a copy of it:
  !   RMM_ERROR_INVALID_ARGUMENT); without `status` a failure stops the program.
  interface rmm_free
    module procedure rmm_free_real32_1d, rmm_free_real32_2d, rmm_free_real32_3d, &
      rmm_free_real64_1d, rmm_free_real64_2d, rmm_free_real64_3d, rmm_free_int32_1d, &
      rmm_free_int32_2d, rmm_free_int32_3d, rmm_free_int64_1d, rmm_free_int64_2d, &
      rmm_free_int64_3d
  end interface rmm_free

  ! The targets of zero-size arrays from rmm_allocate.
  real(c_float), target, save :: rmm_empty_real32(0)
  real(c_double), target, save :: rmm_empty_real64(0)
  integer(c_int32_t), target, save :: rmm_empty_int32(0)
  integer(c_int64_t), target, save :: rmm_empty_int64(0)
  ! END GENERATED INTERFACES

contains

  ! Stops the program (error stop) when `status` is not RMM_SUCCESS, after writing the error's
  ! text, rmmGetLastErrorMessage() and `context` (when given) to standard error.
  subroutine rmm_check(status, context)
    integer(c_int), intent(in) :: status
    character(len=*), intent(in), optional :: context
    if (status == RMM_SUCCESS) return
    if (present(context)) then
      write (error_unit, '(a)') 'rmm: ' // context // ': ' // rmm_error_string(status) // &
        ': ' // rmm_last_error_message()
    else
      write (error_unit, '(a)') 'rmm: ' // rmm_error_string(status) // ': ' // &
        rmm_last_error_message()
    end if
    flush (error_unit)
    error stop 1
  end subroutine rmm_check

  ! rmmGetErrorString(code) as a Fortran string.
  function rmm_error_string(code) result(text)
    integer(c_int), intent(in) :: code
    character(len=:), allocatable :: text
    text = rmm_c_string_from_ptr(rmmGetErrorString(int(code, c_int32_t)))
  end function rmm_error_string

  ! rmmGetLastErrorMessage() as a Fortran string ("" if no call failed on this thread).
  function rmm_last_error_message() result(text)
    character(len=:), allocatable :: text
    text = rmm_c_string_from_ptr(rmmGetLastErrorMessage())
  end function rmm_last_error_message

  function rmm_c_string_from_ptr(string) result(text)
    type(c_ptr), intent(in) :: string
    character(len=:), allocatable :: text
    character(kind=c_char), pointer :: chars(:)
    integer(c_size_t) :: length, i
    if (.not. c_associated(string)) then
      text = ''
      return
    end if
    length = rmm_strlen(string)
    call c_f_pointer(string, chars, [length])
    allocate (character(len=length) :: text)
    do i = 1, length
      text(i:i) = chars(i)
    end do
  end function rmm_c_string_from_ptr

  pure function rmm_c_string_from_chars(chars) result(text)
    character(kind=c_char), intent(in) :: chars(:)
    character(len=:), allocatable :: text
    integer :: length, i
    length = size(chars)
    do i = 1, size(chars)
      if (chars(i) == c_null_char) then
        length = i - 1
        exit
      end if
    end do
    allocate (character(len=length) :: text)
    do i = 1, length
      text(i:i) = chars(i)
    end do
  end function rmm_c_string_from_chars

  ! `text` with a NUL appended, as a character(kind=c_char) array for C.
  subroutine rmm_to_c_chars(text, chars)
    character(len=*), intent(in) :: text
    character(kind=c_char), allocatable, intent(out) :: chars(:)
    integer :: i
    allocate (chars(len(text) + 1))
    do i = 1, len(text)
      chars(i) = text(i:i)
    end do
    chars(len(text) + 1) = c_null_char
  end subroutine rmm_to_c_chars

  ! rmmLoggingAdaptorCreate with a Fortran file name; without `path`, $RMM_LOG_FILE.
  function rmm_logging_adaptor_create(resource, upstream, path) result(status)
    type(c_ptr), intent(inout) :: resource
    type(c_ptr), intent(in) :: upstream
    character(len=*), intent(in), optional :: path
    integer(c_int) :: status
    character(kind=c_char), allocatable, target :: chars(:)
    if (present(path)) then
      call rmm_to_c_chars(path, chars)
      status = rmmLoggingAdaptorCreate(resource, upstream, c_loc(chars))
    else
      status = rmmLoggingAdaptorCreate(resource, upstream, c_null_ptr)
    end if
  end function rmm_logging_adaptor_create

  ! rmmConfigure with a Fortran string; without `conf`, $RMM_ALLOC_CONF.
  function rmm_configure(conf) result(status)
    character(len=*), intent(in), optional :: conf
    integer(c_int) :: status
    character(kind=c_char), allocatable, target :: chars(:)
    if (present(conf)) then
      call rmm_to_c_chars(conf, chars)
      status = rmmConfigure(c_loc(chars))
    else
      status = rmmConfigure(c_null_ptr)
    end if
  end function rmm_configure

  ! rmmWriteLog with a Fortran file name.
  function rmm_write_log(filename) result(status)
    character(len=*), intent(in) :: filename
    integer(c_int) :: status
    character(kind=c_char), allocatable :: chars(:)
    call rmm_to_c_chars(filename, chars)
    status = rmmWriteLog(chars)
  end function rmm_write_log

  ! rmmResourceWriteSnapshot with a Fortran file name.
  function rmm_resource_write_snapshot(resource, path) result(status)
    type(c_ptr), intent(in) :: resource
    character(len=*), intent(in) :: path
    integer(c_int) :: status
    character(kind=c_char), allocatable :: chars(:)
    call rmm_to_c_chars(path, chars)
    status = rmmResourceWriteSnapshot(resource, chars)
  end function rmm_resource_write_snapshot

  ! rmmResourceGetName as a Fortran string ("pool", "cuda", ...); "" on failure.
  function rmm_resource_get_name(resource, name) result(status)
    type(c_ptr), intent(in) :: resource
    character(len=:), allocatable, intent(out) :: name
    integer(c_int) :: status
    type(c_ptr) :: string
    string = c_null_ptr
    status = rmmResourceGetName(resource, string)
    name = rmm_c_string_from_ptr(string)
  end function rmm_resource_get_name

  ! rmmResourceGetSnapshot as a Fortran string (the JSON text); "" on failure.
  function rmm_resource_get_snapshot(resource, json) result(status)
    type(c_ptr), intent(in) :: resource
    character(len=:), allocatable, intent(out) :: json
    integer(c_int) :: status
    status = rmm_get_text(TEXT_SNAPSHOT, resource, json)
  end function rmm_resource_get_snapshot

  ! rmmTrackingAdaptorGetReport as a Fortran string ("" when nothing is outstanding, or on
  ! failure).
  function rmm_tracking_adaptor_get_report(resource, report) result(status)
    type(c_ptr), intent(in) :: resource
    character(len=:), allocatable, intent(out) :: report
    integer(c_int) :: status
    status = rmm_get_text(TEXT_TRACKING_REPORT, resource, report)
  end function rmm_tracking_adaptor_get_report

  ! rmmGetReport (the report of `report:1`) as a Fortran string; "" on failure.
  function rmm_get_report(report) result(status)
    character(len=:), allocatable, intent(out) :: report
    integer(c_int) :: status
    status = rmm_get_text(TEXT_REPORT, c_null_ptr, report)
  end function rmm_get_report

  ! The text of rmmResourceGetSnapshot, rmmTrackingAdaptorGetReport or rmmGetReport (`which`):
  ! asks the length, then copies; asks again should the text have grown in between.
  function rmm_get_text(which, resource, text) result(status)
    integer, intent(in) :: which
    type(c_ptr), intent(in) :: resource
    character(len=:), allocatable, intent(out) :: text
    integer(c_int) :: status
    integer(c_size_t), target :: length
    character(kind=c_char), allocatable, target :: chars(:)
    integer :: attempt
    text = ''
    length = 0
    do attempt = 1, 8
      status = rmm_text_call(which, resource, c_null_ptr, 0_c_size_t, c_loc(length))
      if (status /= RMM_SUCCESS) return
      allocate (chars(length + 1))
      status = rmm_text_call(which, resource, c_loc(chars), size(chars, kind=c_size_t), &
        c_loc(length))
      if (status == RMM_SUCCESS) then
        text = rmm_c_string_from_chars(chars)
        return
      end if
      deallocate (chars)
      if (status /= RMM_ERROR_INVALID_ARGUMENT) return
    end do
  end function rmm_get_text

  function rmm_text_call(which, resource, buffer, size, length) result(status)
    integer, intent(in) :: which
    type(c_ptr), intent(in) :: resource
    type(c_ptr), intent(in) :: buffer
    integer(c_size_t), intent(in) :: size
    type(c_ptr), intent(in) :: length
    integer(c_int) :: status
    select case (which)
    case (TEXT_SNAPSHOT)
      status = rmmResourceGetSnapshot(resource, buffer, size, length)
    case (TEXT_TRACKING_REPORT)
      status = rmmTrackingAdaptorGetReport(resource, buffer, size, length)
    case default
      status = rmmGetReport(buffer, size, length)
    end select
  end function rmm_text_call

  ! The event log (rmmGetLog) as a Fortran string; "" on failure.
  function rmm_get_log(text) result(status)
    character(len=:), allocatable, intent(out) :: text
    integer(c_int) :: status
    character(kind=c_char), allocatable :: chars(:)
    integer(c_size_t) :: length
    length = rmmLogSize()
    allocate (chars(length + 1))
    chars = c_null_char
    status = rmmGetLog(chars, size(chars, kind=c_size_t))
    if (status == RMM_SUCCESS) then
      text = rmm_c_string_from_chars(chars)
    else
      text = ''
    end if
  end function rmm_get_log

  ! --- Internals of rmm_allocate and rmm_free ---

  ! The bytes of an array of `extents` with elements of `element_bytes`: negative extents
  ! count as 0, as in ALLOCATE; -1 (SIZE_MAX for C, which no resource can give) when the
  ! product overflows.
  pure function rmm_array_bytes(extents, element_bytes) result(bytes)
    integer(c_int64_t), intent(in) :: extents(:)
    integer, intent(in) :: element_bytes
    integer(c_size_t) :: bytes
    integer(c_int64_t) :: total
    integer :: i
    bytes = 0
    if (any(extents <= 0)) return
    total = element_bytes
    do i = 1, size(extents)
      if (total > huge(total) / extents(i)) then
        bytes = -1
        return
      end if
      total = total * extents(i)
    end do
    if (total > huge(bytes)) then
      bytes = -1
    else
      bytes = int(total, c_size_t)
    end if
  end function rmm_array_bytes

  ! Allocates `bytes` from `resource` when it is present, otherwise with rmmAlloc from the
  ! current device's resource, on `stream` (default: the default stream).
  function rmm_helper_allocate(bytes, ptr, stream, resource) result(status)
    integer(c_size_t), intent(in) :: bytes
    type(c_ptr), intent(out) :: ptr
    type(c_ptr), intent(in), optional :: stream, resource
    integer(c_int) :: status
    type(c_ptr) :: on
    on = c_null_ptr
    if (present(stream)) on = stream
    ptr = c_null_ptr
    if (present(resource)) then
      status = rmmResourceAllocate(resource, ptr, bytes, on)
    else
      status = rmmAlloc(ptr, bytes, on, c_null_ptr, 0_c_int)
    end if
  end function rmm_helper_allocate

  ! Frees `ptr` of `bytes`: rmmResourceDeallocate on `resource` when present, otherwise
  ! rmmFree.
  function rmm_helper_free(ptr, bytes, stream, resource) result(status)
    type(c_ptr), intent(in) :: ptr
    integer(c_size_t), intent(in) :: bytes
    type(c_ptr), intent(in), optional :: stream, resource
    integer(c_int) :: status
    type(c_ptr) :: on
    on = c_null_ptr
    if (present(stream)) on = stream
    if (present(resource)) then
      status = rmmResourceDeallocate(resource, ptr, bytes, on)
    else
      status = rmmFree(ptr, on, c_null_ptr, 0_c_int)
    end if
  end function rmm_helper_free

  ! Hands `code` to the caller's `status`, or stops the program on failure without one.
  subroutine rmm_helper_status(code, status, context)
    integer(c_int), intent(in) :: code
    integer(c_int), intent(out), optional :: status
    character(len=*), intent(in) :: context
    if (present(status)) then
      status = code
    else
      call rmm_check(code, context)
    end if
  end subroutine rmm_helper_status

  ! BEGIN GENERATED PROCEDURES (f_tests/generate_helpers.py; do not edit by hand)
  subroutine rmm_allocate_real32_1d_i32(array, n1, stream, status, resource)
    real(c_float), pointer, intent(out) :: array(:)
    integer(c_int32_t), intent(in) :: n1
    type(c_ptr), intent(in), optional :: stream
    integer(c_int), intent(out), optional :: status
    type(c_ptr), intent(in), optional :: resource
    type(c_ptr) :: ptr
    integer(c_size_t) :: bytes
    integer(c_int) :: code
    bytes = rmm_array_bytes([int(n1, c_int64_t)], storage_size(0.0_c_float) / 8)
    code = rmm_helper_allocate(bytes, ptr, stream, resource)
    if (code /= RMM_SUCCESS) then
      nullify (array)
    else if (bytes == 0) then
      array(1:max(n1, 0_c_int32_t)) => rmm_empty_real32
    else
      call c_f_pointer(ptr, array, [n1])
    end if
    call rmm_helper_status(code, status, 'rmm_allocate')
  end subroutine rmm_allocate_real32_1d_i32

  subroutine rmm_allocate_real32_1d_i64(array, n1, stream, status, resource)
    real(c_float), pointer, intent(out) :: array(:)
    integer(c_int64_t), intent(in) :: n1
    type(c_ptr), intent(in), optional :: stream
    integer(c_int), intent(out), optional :: status
    type(c_ptr), intent(in), optional :: resource
    type(c_ptr) :: ptr
    integer(c_size_t) :: bytes
    integer(c_int) :: code
    bytes = rmm_array_bytes([int(n1, c_int64_t)], storage_size(0.0_c_float) / 8)
    code = rmm_helper_allocate(bytes, ptr, stream, resource)
    if (code /= RMM_SUCCESS) then
      nullify (array)
    else if (bytes == 0) then
      array(1:max(n1, 0_c_int64_t)) => rmm_empty_real32
    else
      call c_f_pointer(ptr, array, [n1])
    end if
    call rmm_helper_status(code, status, 'rmm_allocate')
  end subroutine rmm_allocate_real32_1d_i64

  subroutine rmm_free_real32_1d(array, stream, status, resource)
    real(c_float), pointer, intent(inout) :: array(:)
    type(c_ptr), intent(in), optional :: stream
    integer(c_int), intent(out), optional :: status
    type(c_ptr), intent(in), optional :: resource
    integer(c_int) :: code
    type(c_ptr) :: first
    integer(c_size_t) :: bytes
    code = RMM_SUCCESS
    if (associated(array)) then
      if (size(array, kind=c_size_t) > 0) then
        first = c_loc(array(lbound(array, 1)))
        bytes = size(array, kind=c_size_t) * int(storage_size(0.0_c_float) / 8, c_size_t)
        code = rmm_helper_free(first, bytes, stream, resource)
      end if
      if (code == RMM_SUCCESS) nullify (array)
    end if
    call rmm_helper_status(code, status, 'rmm_free')
  end subroutine rmm_free_real32_1d

  subroutine rmm_allocate_real32_2d_i32(array, n1, n2, stream, status, resource)
    real(c_float), pointer, intent(out) :: array(:, :)
    integer(c_int32_t), intent(in) :: n1, n2
    type(c_ptr), intent(in), optional :: stream
    integer(c_int), intent(out), optional :: status
    type(c_ptr), intent(in), optional :: resource
    type(c_ptr) :: ptr
    integer(c_size_t) :: bytes
    integer(c_int) :: code
    bytes = rmm_array_bytes([int(n1, c_int64_t), int(n2, c_int64_t)], storage_size(0.0_c_float) / 8)
    code = rmm_helper_allocate(bytes, ptr, stream, resource)
    if (code /= RMM_SUCCESS) then
      nullify (array)
    else if (bytes == 0) then
      array(1:max(n1, 0_c_int32_t), 1:max(n2, 0_c_int32_t)) => rmm_empty_real32
    else
      call c_f_pointer(ptr, array, [n1, n2])
    end if
    call rmm_helper_status(code, status, 'rmm_allocate')
  end subroutine rmm_allocate_real32_2d_i32

  subroutine rmm_allocate_real32_2d_i64(array, n1, n2, stream, status, resource)
    real(c_float), pointer, intent(out) :: array(:, :)
    integer(c_int64_t), intent(in) :: n1, n2
    type(c_ptr), intent(in), optional :: stream
    integer(c_int), intent(out), optional :: status
    type(c_ptr), intent(in), optional :: resource
    type(c_ptr) :: ptr
    integer(c_size_t) :: bytes
    integer(c_int) :: code
    bytes = rmm_array_bytes([int(n1, c_int64_t), int(n2, c_int64_t)], storage_size(0.0_c_float) / 8)
    code = rmm_helper_allocate(bytes, ptr, stream, resource)
    if (code /= RMM_SUCCESS) then
      nullify (array)
    else if (bytes == 0) then
      array(1:max(n1, 0_c_int64_t), 1:max(n2, 0_c_int64_t)) => rmm_empty_real32
    else
      call c_f_pointer(ptr, array, [n1, n2])
    end if
    call rmm_helper_status(code, status, 'rmm_allocate')
  end subroutine rmm_allocate_real32_2d_i64

  subroutine rmm_free_real32_2d(array, stream, status, resource)
    real(c_float), pointer, intent(inout) :: array(:, :)
    type(c_ptr), intent(in), optional :: stream
    integer(c_int), intent(out), optional :: status
    type(c_ptr), intent(in), optional :: resource
    integer(c_int) :: code
    type(c_ptr) :: first
    integer(c_size_t) :: bytes
    code = RMM_SUCCESS
    if (associated(array)) then
      if (size(array, kind=c_size_t) > 0) then
        first = c_loc(array(lbound(array, 1), lbound(array, 2)))
        bytes = size(array, kind=c_size_t) * int(storage_size(0.0_c_float) / 8, c_size_t)
        code = rmm_helper_free(first, bytes, stream, resource)
      end if
      if (code == RMM_SUCCESS) nullify (array)
    end if
    call rmm_helper_status(code, status, 'rmm_free')
  end subroutine rmm_free_real32_2d

  subroutine rmm_allocate_real32_3d_i32(array, n1, n2, n3, stream, status, resource)
    real(c_float), pointer, intent(out) :: array(:, :, :)
    integer(c_int32_t), intent(in) :: n1, n2, n3
    type(c_ptr), intent(in), optional :: stream
    integer(c_int), intent(out), optional :: status
    type(c_ptr), intent(in), optional :: resource
    type(c_ptr) :: ptr
    integer(c_size_t) :: bytes
    integer(c_int) :: code
    bytes = rmm_array_bytes([int(n1, c_int64_t), int(n2, c_int64_t), int(n3, c_int64_t)], &
      storage_size(0.0_c_float) / 8)
    code = rmm_helper_allocate(bytes, ptr, stream, resource)
    if (code /= RMM_SUCCESS) then
      nullify (array)
    else if (bytes == 0) then
      array(1:max(n1, 0_c_int32_t), 1:max(n2, 0_c_int32_t), &
        1:max(n3, 0_c_int32_t)) => rmm_empty_real32
    else
      call c_f_pointer(ptr, array, [n1, n2, n3])
    end if
    call rmm_helper_status(code, status, 'rmm_allocate')
  end subroutine rmm_allocate_real32_3d_i32

  subroutine rmm_allocate_real32_3d_i64(array, n1, n2, n3, stream, status, resource)
    real(c_float), pointer, intent(out) :: array(:, :, :)
    integer(c_int64_t), intent(in) :: n1, n2, n3
    type(c_ptr), intent(in), optional :: stream
    integer(c_int), intent(out), optional :: status
    type(c_ptr), intent(in), optional :: resource
    type(c_ptr) :: ptr
    integer(c_size_t) :: bytes
    integer(c_int) :: code
    bytes = rmm_array_bytes([int(n1, c_int64_t), int(n2, c_int64_t), int(n3, c_int64_t)], &
      storage_size(0.0_c_float) / 8)
    code = rmm_helper_allocate(bytes, ptr, stream, resource)
    if (code /= RMM_SUCCESS) then
      nullify (array)
    else if (bytes == 0) then
      array(1:max(n1, 0_c_int64_t), 1:max(n2, 0_c_int64_t), &
        1:max(n3, 0_c_int64_t)) => rmm_empty_real32
    else
      call c_f_pointer(ptr, array, [n1, n2, n3])
    end if
    call rmm_helper_status(code, status, 'rmm_allocate')
  end subroutine rmm_allocate_real32_3d_i64

  subroutine rmm_free_real32_3d(array, stream, status, resource)
    real(c_float), pointer, intent(inout) :: array(:, :, :)
    type(c_ptr), intent(in), optional :: stream
    integer(c_int), intent(out), optional :: status
    type(c_ptr), intent(in), optional :: resource
    integer(c_int) :: code
    type(c_ptr) :: first
    integer(c_size_t) :: bytes
    code = RMM_SUCCESS
    if (associated(array)) then
      if (size(array, kind=c_size_t) > 0) then
        first = c_loc(array(lbound(array, 1), lbound(array, 2), lbound(array, 3)))
        bytes = size(array, kind=c_size_t) * int(storage_size(0.0_c_float) / 8, c_size_t)
        code = rmm_helper_free(first, bytes, stream, resource)
      end if
      if (code == RMM_SUCCESS) nullify (array)
    end if
    call rmm_helper_status(code, status, 'rmm_free')
  end subroutine rmm_free_real32_3d

  subroutine rmm_allocate_real64_1d_i32(array, n1, stream, status, resource)
    real(c_double), pointer, intent(out) :: array(:)
    integer(c_int32_t), intent(in) :: n1
    type(c_ptr), intent(in), optional :: stream
    integer(c_int), intent(out), optional :: status
    type(c_ptr), intent(in), optional :: resource
    type(c_ptr) :: ptr
    integer(c_size_t) :: bytes
    integer(c_int) :: code
    bytes = rmm_array_bytes([int(n1, c_int64_t)], storage_size(0.0_c_double) / 8)
    code = rmm_helper_allocate(bytes, ptr, stream, resource)
    if (code /= RMM_SUCCESS) then
      nullify (array)
    else if (bytes == 0) then
      array(1:max(n1, 0_c_int32_t)) => rmm_empty_real64
    else
      call c_f_pointer(ptr, array, [n1])
    end if
    call rmm_helper_status(code, status, 'rmm_allocate')
  end subroutine rmm_allocate_real64_1d_i32

  subroutine rmm_allocate_real64_1d_i64(array, n1, stream, status, resource)
    real(c_double), pointer, intent(out) :: array(:)
    integer(c_int64_t), intent(in) :: n1
    type(c_ptr), intent(in), optional :: stream
    integer(c_int), intent(out), optional :: status
    type(c_ptr), intent(in), optional :: resource
    type(c_ptr) :: ptr
    integer(c_size_t) :: bytes
    integer(c_int) :: code
    bytes = rmm_array_bytes([int(n1, c_int64_t)], storage_size(0.0_c_double) / 8)
    code = rmm_helper_allocate(bytes, ptr, stream, resource)
    if (code /= RMM_SUCCESS) then
      nullify (array)
    else if (bytes == 0) then
      array(1:max(n1, 0_c_int64_t)) => rmm_empty_real64
    else
      call c_f_pointer(ptr, array, [n1])
    end if
    call rmm_helper_status(code, status, 'rmm_allocate')
  end subroutine rmm_allocate_real64_1d_i64

  subroutine rmm_free_real64_1d(array, stream, status, resource)
    real(c_double), pointer, intent(inout) :: array(:)
    type(c_ptr), intent(in), optional :: stream
    integer(c_int), intent(out), optional :: status
    type(c_ptr), intent(in), optional :: resource
    integer(c_int) :: code
    type(c_ptr) :: first
    integer(c_size_t) :: bytes
    code = RMM_SUCCESS
    if (associated(array)) then
      if (size(array, kind=c_size_t) > 0) then
        first = c_loc(array(lbound(array, 1)))
        bytes = size(array, kind=c_size_t) * int(storage_size(0.0_c_double) / 8, c_size_t)
        code = rmm_helper_free(first, bytes, stream, resource)
      end if
      if (code == RMM_SUCCESS) nullify (array)
    end if
    call rmm_helper_status(code, status, 'rmm_free')
  end subroutine rmm_free_real64_1d

  subroutine rmm_allocate_real64_2d_i32(array, n1, n2, stream, status, resource)
    real(c_double), pointer, intent(out) :: array(:, :)
    integer(c_int32_t), intent(in) :: n1, n2
    type(c_ptr), intent(in), optional :: stream
    integer(c_int), intent(out), optional :: status
    type(c_ptr), intent(in), optional :: resource
    type(c_ptr) :: ptr
    integer(c_size_t) :: bytes
    integer(c_int) :: code
    bytes = rmm_array_bytes([int(n1, c_int64_t), int(n2, c_int64_t)], &
      storage_size(0.0_c_double) / 8)
    code = rmm_helper_allocate(bytes, ptr, stream, resource)
    if (code /= RMM_SUCCESS) then
      nullify (array)
    else if (bytes == 0) then
      array(1:max(n1, 0_c_int32_t), 1:max(n2, 0_c_int32_t)) => rmm_empty_real64
    else
      call c_f_pointer(ptr, array, [n1, n2])
    end if
    call rmm_helper_status(code, status, 'rmm_allocate')
  end subroutine rmm_allocate_real64_2d_i32

  subroutine rmm_allocate_real64_2d_i64(array, n1, n2, stream, status, resource)
    real(c_double), pointer, intent(out) :: array(:, :)
    integer(c_int64_t), intent(in) :: n1, n2
    type(c_ptr), intent(in), optional :: stream
    integer(c_int), intent(out), optional :: status
    type(c_ptr), intent(in), optional :: resource
    type(c_ptr) :: ptr
    integer(c_size_t) :: bytes
    integer(c_int) :: code
    bytes = rmm_array_bytes([int(n1, c_int64_t), int(n2, c_int64_t)], &
      storage_size(0.0_c_double) / 8)
    code = rmm_helper_allocate(bytes, ptr, stream, resource)
    if (code /= RMM_SUCCESS) then
      nullify (array)
    else if (bytes == 0) then
      array(1:max(n1, 0_c_int64_t), 1:max(n2, 0_c_int64_t)) => rmm_empty_real64
    else
      call c_f_pointer(ptr, array, [n1, n2])
    end if
    call rmm_helper_status(code, status, 'rmm_allocate')
  end subroutine rmm_allocate_real64_2d_i64

  subroutine rmm_free_real64_2d(array, stream, status, resource)
    real(c_double), pointer, intent(inout) :: array(:, :)
    type(c_ptr), intent(in), optional :: stream
    integer(c_int), intent(out), optional :: status
    type(c_ptr), intent(in), optional :: resource
    integer(c_int) :: code
    type(c_ptr) :: first
    integer(c_size_t) :: bytes
    code = RMM_SUCCESS
    if (associated(array)) then
      if (size(array, kind=c_size_t) > 0) then
        first = c_loc(array(lbound(array, 1), lbound(array, 2)))
        bytes = size(array, kind=c_size_t) * int(storage_size(0.0_c_double) / 8, c_size_t)
        code = rmm_helper_free(first, bytes, stream, resource)
      end if
      if (code == RMM_SUCCESS) nullify (array)
    end if
    call rmm_helper_status(code, status, 'rmm_free')
  end subroutine rmm_free_real64_2d

  subroutine rmm_allocate_real64_3d_i32(array, n1, n2, n3, stream, status, resource)
    real(c_double), pointer, intent(out) :: array(:, :, :)
    integer(c_int32_t), intent(in) :: n1, n2, n3
    type(c_ptr), intent(in), optional :: stream
    integer(c_int), intent(out), optional :: status
    type(c_ptr), intent(in), optional :: resource
    type(c_ptr) :: ptr
    integer(c_size_t) :: bytes
    integer(c_int) :: code
    bytes = rmm_array_bytes([int(n1, c_int64_t), int(n2, c_int64_t), int(n3, c_int64_t)], &
      storage_size(0.0_c_double) / 8)
    code = rmm_helper_allocate(bytes, ptr, stream, resource)
    if (code /= RMM_SUCCESS) then
      nullify (array)
    else if (bytes == 0) then
      array(1:max(n1, 0_c_int32_t), 1:max(n2, 0_c_int32_t), &
        1:max(n3, 0_c_int32_t)) => rmm_empty_real64
    else
      call c_f_pointer(ptr, array, [n1, n2, n3])
    end if
    call rmm_helper_status(code, status, 'rmm_allocate')
  end subroutine rmm_allocate_real64_3d_i32

  subroutine rmm_allocate_real64_3d_i64(array, n1, n2, n3, stream, status, resource)
    real(c_double), pointer, intent(out) :: array(:, :, :)
    integer(c_int64_t), intent(in) :: n1, n2, n3
    type(c_ptr), intent(in), optional :: stream
    integer(c_int), intent(out), optional :: status
    type(c_ptr), intent(in), optional :: resource
    type(c_ptr) :: ptr
    integer(c_size_t) :: bytes
    integer(c_int) :: code
    bytes = rmm_array_bytes([int(n1, c_int64_t), int(n2, c_int64_t), int(n3, c_int64_t)], &
      storage_size(0.0_c_double) / 8)
    code = rmm_helper_allocate(bytes, ptr, stream, resource)
    if (code /= RMM_SUCCESS) then
      nullify (array)
    else if (bytes == 0) then
      array(1:max(n1, 0_c_int64_t), 1:max(n2, 0_c_int64_t), &
        1:max(n3, 0_c_int64_t)) => rmm_empty_real64
    else
      call c_f_pointer(ptr, array, [n1, n2, n3])
    end if
    call rmm_helper_status(code, status, 'rmm_allocate')
  end subroutine rmm_allocate_real64_3d_i64

  subroutine rmm_free_real64_3d(array, stream, status, resource)
    real(c_double), pointer, intent(inout) :: array(:, :, :)
    type(c_ptr), intent(in), optional :: stream
    integer(c_int), intent(out), optional :: status
    type(c_ptr), intent(in), optional :: resource
    integer(c_int) :: code
    type(c_ptr) :: first
    integer(c_size_t) :: bytes
    code = RMM_SUCCESS
    if (associated(array)) then
      if (size(array, kind=c_size_t) > 0) then
        first = c_loc(array(lbound(array, 1), lbound(array, 2), lbound(array, 3)))
        bytes = size(array, kind=c_size_t) * int(storage_size(0.0_c_double) / 8, c_size_t)
        code = rmm_helper_free(first, bytes, stream, resource)
      end if
      if (code == RMM_SUCCESS) nullify (array)
    end if
    call rmm_helper_status(code, status, 'rmm_free')
  end subroutine rmm_free_real64_3d

  subroutine rmm_allocate_int32_1d_i32(array, n1, stream, status, resource)
    integer(c_int32_t), pointer, intent(out) :: array(:)
    integer(c_int32_t), intent(in) :: n1
    type(c_ptr), intent(in), optional :: stream
    integer(c_int), intent(out), optional :: status
    type(c_ptr), intent(in), optional :: resource
    type(c_ptr) :: ptr
    integer(c_size_t) :: bytes
    integer(c_int) :: code
    bytes = rmm_array_bytes([int(n1, c_int64_t)], storage_size(0_c_int32_t) / 8)
    code = rmm_helper_allocate(bytes, ptr, stream, resource)
    if (code /= RMM_SUCCESS) then
      nullify (array)
    else if (bytes == 0) then
      array(1:max(n1, 0_c_int32_t)) => rmm_empty_int32
    else
      call c_f_pointer(ptr, array, [n1])
    end if
    call rmm_helper_status(code, status, 'rmm_allocate')
  end subroutine rmm_allocate_int32_1d_i32

  subroutine rmm_allocate_int32_1d_i64(array, n1, stream, status, resource)
    integer(c_int32_t), pointer, intent(out) :: array(:)
    integer(c_int64_t), intent(in) :: n1
    type(c_ptr), intent(in), optional :: stream
    integer(c_int), intent(out), optional :: status
    type(c_ptr), intent(in), optional :: resource
    type(c_ptr) :: ptr
    integer(c_size_t) :: bytes
    integer(c_int) :: code
    bytes = rmm_array_bytes([int(n1, c_int64_t)], storage_size(0_c_int32_t) / 8)
    code = rmm_helper_allocate(bytes, ptr, stream, resource)
    if (code /= RMM_SUCCESS) then
      nullify (array)
    else if (bytes == 0) then
      array(1:max(n1, 0_c_int64_t)) => rmm_empty_int32
    else
      call c_f_pointer(ptr, array, [n1])
    end if
    call rmm_helper_status(code, status, 'rmm_allocate')
  end subroutine rmm_allocate_int32_1d_i64

  subroutine rmm_free_int32_1d(array, stream, status, resource)
    integer(c_int32_t), pointer, intent(inout) :: array(:)
    type(c_ptr), intent(in), optional :: stream
    integer(c_int), intent(out), optional :: status
    type(c_ptr), intent(in), optional :: resource
    integer(c_int) :: code
    type(c_ptr) :: first
    integer(c_size_t) :: bytes
    code = RMM_SUCCESS
    if (associated(array)) then
      if (size(array, kind=c_size_t) > 0) then
        first = c_loc(array(lbound(array, 1)))
        bytes = size(array, kind=c_size_t) * int(storage_size(0_c_int32_t) / 8, c_size_t)
        code = rmm_helper_free(first, bytes, stream, resource)
      end if
      if (code == RMM_SUCCESS) nullify (array)
    end if
    call rmm_helper_status(code, status, 'rmm_free')
  end subroutine rmm_free_int32_1d

  subroutine rmm_allocate_int32_2d_i32(array, n1, n2, stream, status, resource)
    integer(c_int32_t), pointer, intent(out) :: array(:, :)
    integer(c_int32_t), intent(in) :: n1, n2
    type(c_ptr), intent(in), optional :: stream
    integer(c_int), intent(out), optional :: status
    type(c_ptr), intent(in), optional :: resource
    type(c_ptr) :: ptr
    integer(c_size_t) :: bytes
    integer(c_int) :: code
    bytes = rmm_array_bytes([int(n1, c_int64_t), int(n2, c_int64_t)], storage_size(0_c_int32_t) / 8)
    code = rmm_helper_allocate(bytes, ptr, stream, resource)
    if (code /= RMM_SUCCESS) then
      nullify (array)
    else if (bytes == 0) then
      array(1:max(n1, 0_c_int32_t), 1:max(n2, 0_c_int32_t)) => rmm_empty_int32
    else
      call c_f_pointer(ptr, array, [n1, n2])
    end if
    call rmm_helper_status(code, status, 'rmm_allocate')
  end subroutine rmm_allocate_int32_2d_i32

  subroutine rmm_allocate_int32_2d_i64(array, n1, n2, stream, status, resource)
    integer(c_int32_t), pointer, intent(out) :: array(:, :)
    integer(c_int64_t), intent(in) :: n1, n2
    type(c_ptr), intent(in), optional :: stream
    integer(c_int), intent(out), optional :: status
    type(c_ptr), intent(in), optional :: resource
    type(c_ptr) :: ptr
    integer(c_size_t) :: bytes
    integer(c_int) :: code
    bytes = rmm_array_bytes([int(n1, c_int64_t), int(n2, c_int64_t)], storage_size(0_c_int32_t) / 8)
    code = rmm_helper_allocate(bytes, ptr, stream, resource)
    if (code /= RMM_SUCCESS) then
      nullify (array)
    else if (bytes == 0) then
      array(1:max(n1, 0_c_int64_t), 1:max(n2, 0_c_int64_t)) => rmm_empty_int32
    else
      call c_f_pointer(ptr, array, [n1, n2])
    end if
    call rmm_helper_status(code, status, 'rmm_allocate')
  end subroutine rmm_allocate_int32_2d_i64

  subroutine rmm_free_int32_2d(array, stream, status, resource)
    integer(c_int32_t), pointer, intent(inout) :: array(:, :)
    type(c_ptr), intent(in), optional :: stream
    integer(c_int), intent(out), optional :: status
    type(c_ptr), intent(in), optional :: resource
    integer(c_int) :: code
    type(c_ptr) :: first
    integer(c_size_t) :: bytes
    code = RMM_SUCCESS
    if (associated(array)) then
      if (size(array, kind=c_size_t) > 0) then
        first = c_loc(array(lbound(array, 1), lbound(array, 2)))
        bytes = size(array, kind=c_size_t) * int(storage_size(0_c_int32_t) / 8, c_size_t)
        code = rmm_helper_free(first, bytes, stream, resource)
      end if
      if (code == RMM_SUCCESS) nullify (array)
    end if
    call rmm_helper_status(code, status, 'rmm_free')
  end subroutine rmm_free_int32_2d

  subroutine rmm_allocate_int32_3d_i32(array, n1, n2, n3, stream, status, resource)
    integer(c_int32_t), pointer, intent(out) :: array(:, :, :)
    integer(c_int32_t), intent(in) :: n1, n2, n3
    type(c_ptr), intent(in), optional :: stream
    integer(c_int), intent(out), optional :: status
    type(c_ptr), intent(in), optional :: resource
    type(c_ptr) :: ptr
    integer(c_size_t) :: bytes
    integer(c_int) :: code
    bytes = rmm_array_bytes([int(n1, c_int64_t), int(n2, c_int64_t), int(n3, c_int64_t)], &
      storage_size(0_c_int32_t) / 8)
    code = rmm_helper_allocate(bytes, ptr, stream, resource)
    if (code /= RMM_SUCCESS) then
      nullify (array)
    else if (bytes == 0) then
      array(1:max(n1, 0_c_int32_t), 1:max(n2, 0_c_int32_t), &
        1:max(n3, 0_c_int32_t)) => rmm_empty_int32
    else
      call c_f_pointer(ptr, array, [n1, n2, n3])
    end if
    call rmm_helper_status(code, status, 'rmm_allocate')
  end subroutine rmm_allocate_int32_3d_i32

  subroutine rmm_allocate_int32_3d_i64(array, n1, n2, n3, stream, status, resource)
    integer(c_int32_t), pointer, intent(out) :: array(:, :, :)
    integer(c_int64_t), intent(in) :: n1, n2, n3
    type(c_ptr), intent(in), optional :: stream
    integer(c_int), intent(out), optional :: status
    type(c_ptr), intent(in), optional :: resource
    type(c_ptr) :: ptr
    integer(c_size_t) :: bytes
    integer(c_int) :: code
    bytes = rmm_array_bytes([int(n1, c_int64_t), int(n2, c_int64_t), int(n3, c_int64_t)], &
      storage_size(0_c_int32_t) / 8)
    code = rmm_helper_allocate(bytes, ptr, stream, resource)
    if (code /= RMM_SUCCESS) then
      nullify (array)
    else if (bytes == 0) then
      array(1:max(n1, 0_c_int64_t), 1:max(n2, 0_c_int64_t), &
        1:max(n3, 0_c_int64_t)) => rmm_empty_int32
    else
      call c_f_pointer(ptr, array, [n1, n2, n3])
    end if
    call rmm_helper_status(code, status, 'rmm_allocate')
  end subroutine rmm_allocate_int32_3d_i64

  subroutine rmm_free_int32_3d(array, stream, status, resource)
    integer(c_int32_t), pointer, intent(inout) :: array(:, :, :)
    type(c_ptr), intent(in), optional :: stream
    integer(c_int), intent(out), optional :: status
    type(c_ptr), intent(in), optional :: resource
    integer(c_int) :: code
    type(c_ptr) :: first
    integer(c_size_t) :: bytes
    code = RMM_SUCCESS
    if (associated(array)) then
      if (size(array, kind=c_size_t) > 0) then
        first = c_loc(array(lbound(array, 1), lbound(array, 2), lbound(array, 3)))
        bytes = size(array, kind=c_size_t) * int(storage_size(0_c_int32_t) / 8, c_size_t)
        code = rmm_helper_free(first, bytes, stream, resource)
      end if
      if (code == RMM_SUCCESS) nullify (array)
    end if
    call rmm_helper_status(code, status, 'rmm_free')
  end subroutine rmm_free_int32_3d

  subroutine rmm_allocate_int64_1d_i32(array, n1, stream, status, resource)
    integer(c_int64_t), pointer, intent(out) :: array(:)
    integer(c_int32_t), intent(in) :: n1
    type(c_ptr), intent(in), optional :: stream
    integer(c_int), intent(out), optional :: status
    type(c_ptr), intent(in), optional :: resource
    type(c_ptr) :: ptr
    integer(c_size_t) :: bytes
    integer(c_int) :: code
    bytes = rmm_array_bytes([int(n1, c_int64_t)], storage_size(0_c_int64_t) / 8)
    code = rmm_helper_allocate(bytes, ptr, stream, resource)
    if (code /= RMM_SUCCESS) then
      nullify (array)
    else if (bytes == 0) then
      array(1:max(n1, 0_c_int32_t)) => rmm_empty_int64
    else
      call c_f_pointer(ptr, array, [n1])
    end if
    call rmm_helper_status(code, status, 'rmm_allocate')
  end subroutine rmm_allocate_int64_1d_i32

  subroutine rmm_allocate_int64_1d_i64(array, n1, stream, status, resource)
    integer(c_int64_t), pointer, intent(out) :: array(:)
    integer(c_int64_t), intent(in) :: n1
    type(c_ptr), intent(in), optional :: stream
    integer(c_int), intent(out), optional :: status
    type(c_ptr), intent(in), optional :: resource
    type(c_ptr) :: ptr
    integer(c_size_t) :: bytes
    integer(c_int) :: code
    bytes = rmm_array_bytes([int(n1, c_int64_t)], storage_size(0_c_int64_t) / 8)
    code = rmm_helper_allocate(bytes, ptr, stream, resource)
    if (code /= RMM_SUCCESS) then
      nullify (array)
    else if (bytes == 0) then
      array(1:max(n1, 0_c_int64_t)) => rmm_empty_int64
    else
      call c_f_pointer(ptr, array, [n1])
    end if
    call rmm_helper_status(code, status, 'rmm_allocate')
  end subroutine rmm_allocate_int64_1d_i64

  subroutine rmm_free_int64_1d(array, stream, status, resource)
    integer(c_int64_t), pointer, intent(inout) :: array(:)
    type(c_ptr), intent(in), optional :: stream
    integer(c_int), intent(out), optional :: status
    type(c_ptr), intent(in), optional :: resource
    integer(c_int) :: code
    type(c_ptr) :: first
    integer(c_size_t) :: bytes
    code = RMM_SUCCESS
    if (associated(array)) then
      if (size(array, kind=c_size_t) > 0) then
        first = c_loc(array(lbound(array, 1)))
        bytes = size(array, kind=c_size_t) * int(storage_size(0_c_int64_t) / 8, c_size_t)
        code = rmm_helper_free(first, bytes, stream, resource)
      end if
      if (code == RMM_SUCCESS) nullify (array)
    end if
    call rmm_helper_status(code, status, 'rmm_free')
  end subroutine rmm_free_int64_1d

  subroutine rmm_allocate_int64_2d_i32(array, n1, n2, stream, status, resource)
    integer(c_int64_t), pointer, intent(out) :: array(:, :)
    integer(c_int32_t), intent(in) :: n1, n2
    type(c_ptr), intent(in), optional :: stream
    integer(c_int), intent(out), optional :: status
    type(c_ptr), intent(in), optional :: resource
    type(c_ptr) :: ptr
    integer(c_size_t) :: bytes
    integer(c_int) :: code
    bytes = rmm_array_bytes([int(n1, c_int64_t), int(n2, c_int64_t)], storage_size(0_c_int64_t) / 8)
    code = rmm_helper_allocate(bytes, ptr, stream, resource)
    if (code /= RMM_SUCCESS) then
      nullify (array)
    else if (bytes == 0) then
      array(1:max(n1, 0_c_int32_t), 1:max(n2, 0_c_int32_t)) => rmm_empty_int64
    else
      call c_f_pointer(ptr, array, [n1, n2])
    end if
    call rmm_helper_status(code, status, 'rmm_allocate')
  end subroutine rmm_allocate_int64_2d_i32

  subroutine rmm_allocate_int64_2d_i64(array, n1, n2, stream, status, resource)
    integer(c_int64_t), pointer, intent(out) :: array(:, :)
    integer(c_int64_t), intent(in) :: n1, n2
    type(c_ptr), intent(in), optional :: stream
    integer(c_int), intent(out), optional :: status
    type(c_ptr), intent(in), optional :: resource
    type(c_ptr) :: ptr
    integer(c_size_t) :: bytes
    integer(c_int) :: code
    bytes = rmm_array_bytes([int(n1, c_int64_t), int(n2, c_int64_t)], storage_size(0_c_int64_t) / 8)
    code = rmm_helper_allocate(bytes, ptr, stream, resource)
    if (code /= RMM_SUCCESS) then
      nullify (array)
    else if (bytes == 0) then
      array(1:max(n1, 0_c_int64_t), 1:max(n2, 0_c_int64_t)) => rmm_empty_int64
    else
      call c_f_pointer(ptr, array, [n1, n2])
    end if
    call rmm_helper_status(code, status, 'rmm_allocate')
  end subroutine rmm_allocate_int64_2d_i64

  subroutine rmm_free_int64_2d(array, stream, status, resource)
    integer(c_int64_t), pointer, intent(inout) :: array(:, :)
    type(c_ptr), intent(in), optional :: stream
    integer(c_int), intent(out), optional :: status
    type(c_ptr), intent(in), optional :: resource
    integer(c_int) :: code
    type(c_ptr) :: first
    integer(c_size_t) :: bytes
    code = RMM_SUCCESS
    if (associated(array)) then
      if (size(array, kind=c_size_t) > 0) then
        first = c_loc(array(lbound(array, 1), lbound(array, 2)))
        bytes = size(array, kind=c_size_t) * int(storage_size(0_c_int64_t) / 8, c_size_t)
        code = rmm_helper_free(first, bytes, stream, resource)
      end if
      if (code == RMM_SUCCESS) nullify (array)
    end if
    call rmm_helper_status(code, status, 'rmm_free')
  end subroutine rmm_free_int64_2d

  subroutine rmm_allocate_int64_3d_i32(array, n1, n2, n3, stream, status, resource)
    integer(c_int64_t), pointer, intent(out) :: array(:, :, :)
    integer(c_int32_t), intent(in) :: n1, n2, n3
    type(c_ptr), intent(in), optional :: stream
    integer(c_int), intent(out), optional :: status
    type(c_ptr), intent(in), optional :: resource
    type(c_ptr) :: ptr
    integer(c_size_t) :: bytes
    integer(c_int) :: code
    bytes = rmm_array_bytes([int(n1, c_int64_t), int(n2, c_int64_t), int(n3, c_int64_t)], &
      storage_size(0_c_int64_t) / 8)
    code = rmm_helper_allocate(bytes, ptr, stream, resource)
    if (code /= RMM_SUCCESS) then
      nullify (array)
    else if (bytes == 0) then
      array(1:max(n1, 0_c_int32_t), 1:max(n2, 0_c_int32_t), &
        1:max(n3, 0_c_int32_t)) => rmm_empty_int64
    else
      call c_f_pointer(ptr, array, [n1, n2, n3])
    end if
    call rmm_helper_status(code, status, 'rmm_allocate')
  end subroutine rmm_allocate_int64_3d_i32

  subroutine rmm_allocate_int64_3d_i64(array, n1, n2, n3, stream, status, resource)
    integer(c_int64_t), pointer, intent(out) :: array(:, :, :)
    integer(c_int64_t), intent(in) :: n1, n2, n3
    type(c_ptr), intent(in), optional :: stream
    integer(c_int), intent(out), optional :: status
    type(c_ptr), intent(in), optional :: resource
    type(c_ptr) :: ptr
    integer(c_size_t) :: bytes
    integer(c_int) :: code
    bytes = rmm_array_bytes([int(n1, c_int64_t), int(n2, c_int64_t), int(n3, c_int64_t)], &
      storage_size(0_c_int64_t) / 8)
    code = rmm_helper_allocate(bytes, ptr, stream, resource)
    if (code /= RMM_SUCCESS) then
      nullify (array)
    else if (bytes == 0) then
      array(1:max(n1, 0_c_int64_t), 1:max(n2, 0_c_int64_t), &
        1:max(n3, 0_c_int64_t)) => rmm_empty_int64
    else
      call c_f_pointer(ptr, array, [n1, n2, n3])
    end if
    call rmm_helper_status(code, status, 'rmm_allocate')
  end subroutine rmm_allocate_int64_3d_i64

  subroutine rmm_free_int64_3d(array, stream, status, resource)
    integer(c_int64_t), pointer, intent(inout) :: array(:, :, :)
    type(c_ptr), intent(in), optional :: stream
    integer(c_int), intent(out), optional :: status
    type(c_ptr), intent(in), optional :: resource
    integer(c_int) :: code
    type(c_ptr) :: first
    integer(c_size_t) :: bytes
    code = RMM_SUCCESS
    if (associated(array)) then
      if (size(array, kind=c_size_t) > 0) then
        first = c_loc(array(lbound(array, 1), lbound(array, 2), lbound(array, 3)))
        bytes = size(array, kind=c_size_t) * int(storage_size(0_c_int64_t) / 8, c_size_t)
        code = rmm_helper_free(first, bytes, stream, resource)
      end if
      if (code == RMM_SUCCESS) nullify (array)
    end if
    call rmm_helper_status(code, status, 'rmm_free')
  end subroutine rmm_free_int64_3d
  ! END GENERATED PROCEDURES

end module rmm
