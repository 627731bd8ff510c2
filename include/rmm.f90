! rmm.f90: the Fortran binding of rmm-rs, the RAPIDS Memory Manager in Rust (module rmm).
!
! Shipped as source because .mod files are compiler-specific: compile it with the compiler and
! flags of your program and link librmm, e.g.
!     gfortran -c rmm.f90 && gfortran app.f90 rmm.o -lrmm
! CMake projects get it compiled by the rmm::fortran target (find_package(rmm) or
! add_subdirectory, with Fortran enabled) or rmm_add_fortran_module(<target>). Standard
! Fortran 2008 (iso_c_binding) only; it builds with gfortran -std=f2008 -Wall -Wextra -Werror.
!
! The sections between BEGIN/END GENERATED markers are written by scripts/generate_bindings.py
! (from include/rmm.h for the bindings); the rest is written by hand. Contents:
! - An interface for every function of rmm.h, under its C name (bind(c, name="rmm...")), with
!   its comment from rmm.h (the function's contract), and the error codes, constants, structs
!   (bind(c) types of the same layout) and callback interface of rmm.h.
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
! How C types map (the rules of scripts/generate_bindings.py; the generated section starts with
! the Fortran type of each C type):
! - rmmResource_t, rmmDeviceBuffer_t and cudaStream_t are type(c_ptr); the default stream is
!   c_null_ptr.
! - Every fallible call returns an integer(c_int) status (an rmmError_t). Functions that return
!   a pointer (rmmTorchAllocate, rmmCupyAllocate, the C strings) return type(c_ptr); void
!   functions are subroutines.
! - An out-pointer is a by-reference argument with intent(inout): rmm writes it only on
!   success, so a value it had before a failed call stays (intent(out) would let the compiler
!   drop that value). A const pointee is intent(in).
! - A pointer argument that rmm.h allows to be NULL (its comment says so: "may be NULL",
!   "unless it is NULL", "A NULL `buffer`", ...) is type(c_ptr), value: pass c_null_ptr, or
!   c_loc(x) of a variable x with the TARGET attribute. So are void* data arguments (memory,
!   `host`, `dst`, `src`, `param`), and pointers to pointers that may be NULL.
! - Fortran has no unsigned integers: an unsigned C type is the signed kind of its size
!   (SIZE_MAX is -1_c_size_t); the declaration names the C type in a comment. ptrdiff_t is
!   integer(c_intptr_t) (c_ptrdiff_t is Fortran 2018).
! - char* arguments that may not be NULL are character(kind=c_char) arrays: pass
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
  ! All of iso_c_binding: the generated bindings use whichever kinds rmm.h needs.
  use, intrinsic :: iso_c_binding
  use, intrinsic :: iso_fortran_env, only: error_unit
  implicit none
  private

  ! BEGIN GENERATED BINDINGS (scripts/generate_bindings.py; do not edit by hand)
  ! The C types of rmm.h in Fortran (by value, or what a pointer points to):
  !   bool                            logical(c_bool)
  !   char                            character(kind=c_char)
  !   cudaStream_t                    type(c_ptr)
  !   double                          real(c_double)
  !   int                             integer(c_int)
  !   int32_t                         integer(c_int32_t)
  !   int64_t                         integer(c_int64_t)
  !   int8_t                          integer(c_int8_t)
  !   ptrdiff_t                       integer(c_intptr_t)
  !   rmmAlignedAllocateCallback_t    type(c_funptr)
  !   rmmAlignedDeallocateCallback_t  type(c_funptr)
  !   rmmAllocateCallback_t           type(c_funptr)
  !   rmmAllocationMode_t             integer(c_int32_t)
  !   rmmDeallocateCallback_t         type(c_funptr)
  !   rmmDeviceBuffer_t               type(c_ptr)
  !   rmmError_t                      integer(c_int)
  !   rmmFailureCallback_t            type(c_funptr)
  !   rmmLogCallback_t                type(c_funptr)
  !   rmmLogLineCallback_t            type(c_funptr)
  !   rmmReleaseCallback_t            type(c_funptr)
  !   rmmResource_t                   type(c_ptr)
  !   size_t                          integer(c_size_t)
  !   uint32_t                        integer(c_int32_t)
  !   uint64_t                        integer(c_int64_t)
  !   unsigned int                    integer(c_int)
  public :: RMM_LOG_LEVEL_TRACE, RMM_LOG_LEVEL_DEBUG, RMM_LOG_LEVEL_INFO, RMM_LOG_LEVEL_WARN, &
    RMM_LOG_LEVEL_ERROR, RMM_LOG_LEVEL_CRITICAL, RMM_LOG_LEVEL_OFF, RMM_IPC_HANDLE_SIZE, &
    RMM_STREAM_DEFAULT, RMM_STREAM_NON_BLOCKING, RMM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, &
    RMM_HANDLE_TYPE_WIN32, RMM_HANDLE_TYPE_WIN32_KMT, RMM_HANDLE_TYPE_FABRIC, &
    RMM_ASYNC_HW_DECOMPRESS, RMM_CAPABILITY_PAGEABLE_MEMORY_ACCESS, &
    RMM_CAPABILITY_MANAGED_MEMORY_POOLS, RMM_CAPABILITY_HOST_MEMORY_POOLS, &
    RMM_CAPABILITY_HW_DECOMPRESS, RMM_MAX_DEVICES, RMM_SLEEP_DISCARD, RMM_SLEEP_KEEP, &
    RMM_VERSION_MAJOR, RMM_VERSION_MINOR, RMM_VERSION_PATCH, RMM_VERSION, RMM_SUCCESS, &
    RMM_ERROR_CUDA_ERROR, RMM_ERROR_INVALID_ARGUMENT, RMM_ERROR_NOT_INITIALIZED, &
    RMM_ERROR_OUT_OF_MEMORY, RMM_ERROR_UNKNOWN, RMM_ERROR_IO, RMM_ERROR_NOT_SUPPORTED, &
    RMM_ERROR_INVALID_HANDLE, RMM_ERROR_ALREADY_INITIALIZED, CudaDefaultAllocation, &
    PoolAllocation, CudaManagedMemory, CudaAsyncAllocation
  public :: rmmStatistics_t, rmmAllocationRecord_t, rmmExpandableOptions_t, rmmIpcMemHandle_t, &
    rmmIpcMemPages_t, rmmDeviceList_t, rmmOptions_t, rmmFootprint_t, rmmLogLineCallback_t, &
    rmmReleaseCallback_t, rmmFailureCallback_t, rmmLogCallback_t, rmmAllocateCallback_t, &
    rmmDeallocateCallback_t, rmmAlignedAllocateCallback_t, rmmAlignedDeallocateCallback_t
  public :: rmmStatisticsAdaptorCreate, rmmStatisticsAdaptorGetCounts, &
    rmmStatisticsAdaptorPushCounters, rmmStatisticsAdaptorPopCounters, rmmLoggingAdaptorCreate, &
    rmmLoggingAdaptorFlush, rmmLoggingAdaptorCreateWithSink, rmmLimitingAdaptorCreate, &
    rmmLimitingAdaptorGetAllocatedBytes, rmmTrackingAdaptorCreate, &
    rmmTrackingAdaptorGetOutstanding, rmmTrackingAdaptorGetReport, rmmTrackingAdaptorGetStack, &
    rmmFailureCallbackAdaptorCreate, rmmAlignedAdaptorCreate, rmmPrefetchAdaptorCreate, &
    rmmConfigure, rmmGetReport, rmmParseSize, rmmDeviceBufferCreate, &
    rmmDeviceBufferCreateFromHost, rmmDeviceBufferCopyToHost, rmmDeviceBufferResize, &
    rmmDeviceBufferShrinkToFit, rmmDeviceBufferCopy, rmmDeviceBufferData, rmmDeviceBufferSize, &
    rmmDeviceBufferSetStream, rmmDeviceBufferDestroy, rmmSetPerDeviceResource, &
    rmmGetPerDeviceResource, rmmSetCurrentDeviceResource, rmmGetCurrentDeviceResource, &
    rmmGetDevice, rmmSetDevice, rmmGetDeviceCount, rmmGetDeviceMemInfo, rmmIsSimulated, &
    rmmSimGetPointerAttributes, rmmPrefetch, rmmDeviceRelease, rmmSimGetRaceCount, rmmLogSetLevel, &
    rmmLogGetLevel, rmmLogSinkAdd, rmmLogSinkRemove, rmmTorchAllocate, rmmTorchDeallocate, &
    rmmCupyAllocate, rmmCupyDeallocate, rmmIpcExpandableResourceCreate, &
    rmmExpandableResourceGrantPeerAccess, rmmIpcGetMemHandle, rmmIpcOpenMemHandle, &
    rmmIpcCloseMemHandle, rmmIpcAllowOpeners, rmmIpcGetMemPages, rmmIpcOpenMemPages, &
    rmmInitialize, rmmFinalize, rmmIsInitialized, rmmCudaMalloc, rmmCudaFree, rmmAlloc, &
    rmmRealloc, rmmFree, rmmWriteLog, rmmLogSize, rmmGetLog, rmmGetInfo, rmmGetAllocationOffset, &
    rmmGetErrorString, rmmGetErrorName, rmmGetLastErrorMessage, rmmTimelineReportWrite, &
    rmmCudaResourceCreate, rmmManagedResourceCreate, rmmCallbackResourceCreate, &
    rmmCallbackResourceCreateWithRelease, rmmCallbackResourceCreateAligned, &
    rmmAsyncResourceCreate, rmmAsyncResourceCreateExportable, rmmAsyncResourceCreateWithFlags, &
    rmmAsyncViewResourceCreate, rmmAsyncManagedResourceCreate, rmmAsyncPinnedHostResourceCreate, &
    rmmSystemResourceCreate, rmmSamHeadroomResourceCreate, rmmDeviceSupports, &
    rmmAsyncResourceGetPool, rmmExpandableResourceCreate, rmmExpandableResourceCreateWithOptions, &
    rmmResourceCreateFromSpec, rmmPinnedHostResourceCreate, rmmResourceDestroy, &
    rmmResourceAllocate, rmmResourceDeallocate, rmmResourceAllocateAligned, &
    rmmResourceDeallocateAligned, rmmResourceGetDevice, rmmResourceGetName, rmmResourceSleep, &
    rmmResourceWake, rmmResourceIsAsleep, rmmDeviceSleep, rmmDeviceWake, rmmResourceGetSnapshot, &
    rmmResourceWriteSnapshot, rmmResourceGetFootprint, rmmStreamCreate, rmmStreamCreateWithFlags, &
    rmmStreamDestroy, rmmStreamRegister, rmmStreamUnregister, rmmStreamSynchronize, &
    rmmMemcpyAsync, rmmPoolResourceCreate, rmmPoolResourceGetSize, rmmPoolResourceGetFree, &
    rmmResourceRelease, rmmResourceSetReleaseThreshold, rmmArenaResourceCreate, &
    rmmBinningResourceCreate, rmmBinningResourceAddBin, rmmFixedSizeResourceCreate, rmmGetVersion

  ! Log level trace (RAPIDS' `rapids_logger::level_enum::trace`): everything.
  integer(c_int32_t), parameter :: RMM_LOG_LEVEL_TRACE = 0
  ! Log level debug.
  integer(c_int32_t), parameter :: RMM_LOG_LEVEL_DEBUG = 1
  ! Log level info.
  integer(c_int32_t), parameter :: RMM_LOG_LEVEL_INFO = 2
  ! Log level warn (rmm-rs's default, unless the environment variable RMM_LOG_LEVEL names
  ! another).
  integer(c_int32_t), parameter :: RMM_LOG_LEVEL_WARN = 3
  ! Log level error.
  integer(c_int32_t), parameter :: RMM_LOG_LEVEL_ERROR = 4
  ! Log level critical (rmm-rs writes nothing at this level).
  integer(c_int32_t), parameter :: RMM_LOG_LEVEL_CRITICAL = 5
  ! Log level off: nothing is written.
  integer(c_int32_t), parameter :: RMM_LOG_LEVEL_OFF = 6
  ! Bytes of an `rmmIpcMemHandle_t`.
  integer(c_int32_t), parameter :: RMM_IPC_HANDLE_SIZE = 128
  ! A stream that synchronizes with the legacy default stream (`rmmStreamCreateWithFlags`).
  integer(c_int32_t), parameter :: RMM_STREAM_DEFAULT = 0
  ! A stream that does not synchronize with the legacy default stream (`cudaStreamNonBlocking`).
  integer(c_int32_t), parameter :: RMM_STREAM_NON_BLOCKING = 1
  ! The kinds of shareable handle `rmmAsyncResourceCreateExportable` can export pool memory as
  ! (CUDA's `cudaMemAllocationHandleType` values); this one and the three below. This one:
  ! `cudaMemHandleTypePosixFileDescriptor`, a file descriptor (what Linux drivers offer).
  integer(c_int32_t), parameter :: RMM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR = 1
  ! `cudaMemHandleTypeWin32`: a Windows NT handle (not offered on Linux).
  integer(c_int32_t), parameter :: RMM_HANDLE_TYPE_WIN32 = 2
  ! `cudaMemHandleTypeWin32Kmt`: a Windows D3DKMT handle (not offered on Linux).
  integer(c_int32_t), parameter :: RMM_HANDLE_TYPE_WIN32_KMT = 4
  ! `cudaMemHandleTypeFabric`: a fabric handle, which crosses nodes through IMEX, where the
  ! driver offers it.
  integer(c_int32_t), parameter :: RMM_HANDLE_TYPE_FABRIC = 8
  ! A flag of `rmmAsyncResourceCreateWithFlags`: the pool's memory may serve hardware
  ! decompression (`cudaMemPoolCreateUsageHwDecompress`, a CUDA 12.8 driver; RAPIDS'
  ! `enable_hw_decompress`).
  integer(c_int32_t), parameter :: RMM_ASYNC_HW_DECOMPRESS = 1
  ! What `rmmDeviceSupports` can be asked; this one and the three below. This one: the device
  ! reaches pageable host memory, as from `malloc` (HMM or ATS), which `rmmSystemResourceCreate`
  ! and `rmmSamHeadroomResourceCreate` need.
  integer(c_int32_t), parameter :: RMM_CAPABILITY_PAGEABLE_MEMORY_ACCESS = 1
  ! Driver memory pools of managed memory (a CUDA 13 driver, and a device with concurrent
  ! managed access), which `rmmAsyncManagedResourceCreate` needs.
  integer(c_int32_t), parameter :: RMM_CAPABILITY_MANAGED_MEMORY_POOLS = 2
  ! Driver memory pools of page-locked host memory (a CUDA 12.6 driver or later, where the
  ! device offers them), which `rmmAsyncPinnedHostResourceCreate` needs.
  integer(c_int32_t), parameter :: RMM_CAPABILITY_HOST_MEMORY_POOLS = 3
  ! Pools whose memory serves hardware decompression (a CUDA 12.8 driver), which
  ! `RMM_ASYNC_HW_DECOMPRESS` needs.
  integer(c_int32_t), parameter :: RMM_CAPABILITY_HW_DECOMPRESS = 4
  ! Most devices `rmmOptions_t.devices` can list.
  integer(c_int32_t), parameter :: RMM_MAX_DEVICES = 64
  ! How `rmmResourceSleep` treats the contents of live blocks: dropped (KV caches, activations,
  ! scratch; at wake the blocks hold whatever the new memory holds).
  integer(c_int32_t), parameter :: RMM_SLEEP_DISCARD = 0
  ! Copied to pinned host memory at sleep and back at wake (weights).
  integer(c_int32_t), parameter :: RMM_SLEEP_KEEP = 1
  ! The major version of rmm-rs that rmm.h belongs to.
  integer(c_int32_t), parameter :: RMM_VERSION_MAJOR = 0
  ! The minor version of rmm-rs that rmm.h belongs to.
  integer(c_int32_t), parameter :: RMM_VERSION_MINOR = 1
  ! The patch version of rmm-rs that rmm.h belongs to.
  integer(c_int32_t), parameter :: RMM_VERSION_PATCH = 0
  ! The version as one number, major * 10000 + minor * 100 + patch, for `#if RMM_VERSION >= ...`
  ! (a literal, so that every binding generator reads it).
  integer(c_int32_t), parameter :: RMM_VERSION = 100

  ! Error codes of the C API. The first seven keep legacy RMM's values; new ones are appended.
  ! (enum rmmError_t)
  ! The call succeeded.
  integer(c_int), parameter :: RMM_SUCCESS = 0
  ! The CUDA driver reported an error, or no usable driver was found.
  integer(c_int), parameter :: RMM_ERROR_CUDA_ERROR = 1
  ! An argument was invalid: NULL where a value is needed, a pointer rmm-rs did not hand out,
  ! a double free, a size that does not match the allocation.
  integer(c_int), parameter :: RMM_ERROR_INVALID_ARGUMENT = 2
  ! The call needs `rmmInitialize` (it came before it, or after `rmmFinalize`).
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
  ! `rmmInitialize` was called again without `rmmFinalize` in between.
  integer(c_int), parameter :: RMM_ERROR_ALREADY_INITIALIZED = 9

  ! Device memory from `cudaMalloc` (the driver's `cuMemAlloc`), no pool.
  integer(c_int32_t), parameter :: CudaDefaultAllocation = 0
  ! A pool suballocator over the base allocation.
  integer(c_int32_t), parameter :: PoolAllocation = 1
  ! Managed (unified) memory as the base allocation.
  integer(c_int32_t), parameter :: CudaManagedMemory = 2
  ! The driver's stream-ordered allocator (`cudaMallocAsync`) with a pool of its own.
  integer(c_int32_t), parameter :: CudaAsyncAllocation = 4

  ! Allocation figures of a statistics adaptor's innermost scope, as RMM's
  ! `statistics_resource_adaptor` counts them: bytes as requested, allocations as calls.
  ! Current values can be negative within a scope that frees memory allocated before it.
  type, bind(c) :: rmmStatistics_t
    ! Bytes allocated and not yet freed (in the scope: since it was pushed).
    integer(c_int64_t) :: current_bytes = 0
    ! The most `current_bytes` has been.
    integer(c_int64_t) :: peak_bytes = 0
    ! Bytes of every allocation ever made, freed or not.
    integer(c_int64_t) :: total_bytes = 0
    ! Allocations made and not yet freed.
    integer(c_int64_t) :: current_count = 0
    ! The most `current_count` has been.
    integer(c_int64_t) :: peak_count = 0
    ! Allocations ever made.
    integer(c_int64_t) :: total_count = 0
  end type rmmStatistics_t

  ! One outstanding allocation of a tracking adaptor.
  type, bind(c) :: rmmAllocationRecord_t
    ! The allocation's address.
    type(c_ptr) :: ptr = c_null_ptr
    ! The bytes it was asked for.
    integer(c_size_t) :: size = 0
    ! The stream it was allocated on.
    type(c_ptr) :: stream = c_null_ptr
    ! The OS id of the allocating thread.
    integer(c_int64_t) :: thread = 0  ! uint64_t in C
    ! The `RMM_ALLOC` call site (line 0 and file "" when unknown); a long file name keeps its
    ! end.
    integer(c_int32_t) :: line = 0  ! uint32_t in C
    ! The call site's file name, NUL-terminated.
    character(kind=c_char) :: file(256) = c_null_char
  end type rmmAllocationRecord_t

  ! Options of `rmmExpandableResourceCreateWithOptions`. Zero-initialize it, then set what you
  ! need: all zero is what `rmmExpandableResourceCreate(&r, 0)` makes.
  type, bind(c) :: rmmExpandableOptions_t
    ! Bytes mapped at creation and kept for the resource's life (0: none).
    integer(c_size_t) :: initial_size = 0
    ! The most bytes mapped at once, small and large blocks' pages together (0: the
    ! device's memory).
    integer(c_size_t) :: maximum_size = 0
    ! Nonzero: whole free pages (at the ends of the resource's chunks and between blocks in
    ! use) are unmapped while more than `release_threshold` bytes are mapped, and go back to
    ! the device while more than `release_threshold` bytes are held (mapped, or kept
    ! unmapped for reuse), once the stream that freed them has passed that point (never
    ! waiting for it). 0: free pages stay held until `rmmResourceRelease` or until the
    ! device runs out of memory (a growth still maps the pages of holes before it creates
    ! new ones).
    integer(c_int) :: release_free_pages = 0
    ! See `release_free_pages` (0 with it: give back every free page); it applies to the
    ! small blocks' pages and to the large blocks' pages each.
    integer(c_size_t) :: release_threshold = 0
    ! The unit of mapping and release for blocks of 256 KiB or more (smaller blocks have
    ! pages of the granularity of their own): a multiple of the device's allocation
    ! granularity (0: 1/4096 of the maximum size rounded up to the granularity, from the
    ! granularity, 2 MiB on current GPUs, up to 20 MiB on devices of 80 GiB or more).
    integer(c_size_t) :: page_size = 0
    ! Other devices given read and write access to the memory (NULL when `num_peers` is 0).
    type(c_ptr) :: peers = c_null_ptr
    ! How many devices `peers` lists (0: none).
    integer(c_size_t) :: num_peers = 0
  end type rmmExpandableOptions_t

  ! A handle that names an allocation for another process (`rmmIpcGetMemHandle`), as
  ! `cudaIpcMemHandle_t` does: plain bytes, copied by value and sent to the other process any
  ! way the program likes (a pipe, a socket, a file, a queue). Its contents are private.
  type, bind(c) :: rmmIpcMemHandle_t
    ! The handle's bytes; what they mean is private to rmm-rs.
    character(kind=c_char) :: reserved(RMM_IPC_HANDLE_SIZE) = c_null_char
  end type rmmIpcMemHandle_t

  ! The pages of virtual memory that hold an allocation (`rmmIpcGetMemPages`): what another
  ! process needs, with each page's file descriptor, to map them as they are mapped here.
  type, bind(c) :: rmmIpcMemPages_t
    ! The first page's address, at or below the allocation's: the allocation starts
    ! `ptr - first_page` bytes into the pages.
    type(c_ptr) :: first_page = c_null_ptr
    ! Bytes of each page (a multiple of the device's mapping granularity).
    integer(c_size_t) :: page_size = 0
    ! How many pages hold the allocation: from the one that holds its first byte to the one
    ! that holds its last.
    integer(c_size_t) :: page_count = 0
  end type rmmIpcMemPages_t

  ! The devices `rmmInitialize` sets up. In C++ it also takes what legacy RMM's
  ! `std::vector<int> devices` took: `options.devices = std::vector<int>{0, 1};`,
  ! `options.devices = {0, 1};`, `push_back`, `size`, `empty`, `clear`, indexing and iteration.
  type, bind(c) :: rmmDeviceList_t
    ! How many entries of `ids` to set up; 0 sets up the calling thread's current device.
    ! More than `RMM_MAX_DEVICES` is refused by `rmmInitialize`.
    integer(c_int32_t) :: count = 0
    ! Device ordinals to set up.
    integer(c_int32_t) :: ids(RMM_MAX_DEVICES) = 0
  end type rmmDeviceList_t

  ! Options of `rmmInitialize`: legacy RMM's fields in legacy RMM's order, so legacy code's
  ! positional initializer (`rmmOptions_t o = {PoolAllocation, 1 << 30, true};`) means what it
  ! meant; fields rmm-rs added come after them, and zero means "as legacy RMM".
  type, bind(c) :: rmmOptions_t
    ! `CudaDefaultAllocation`, `PoolAllocation`, `CudaManagedMemory`, `CudaAsyncAllocation`,
    ! or `PoolAllocation | CudaManagedMemory`.
    integer(c_int32_t) :: allocation_mode = 0  ! rmmAllocationMode_t in C
    ! Bytes the pool starts with (0: half of the free device memory, as legacy RMM did).
    integer(c_size_t) :: initial_pool_size = 0
    ! Record allocation events for `rmmWriteLog`.
    logical(c_bool) :: enable_logging = .false.
    ! Devices to set up (none: the calling thread's current device).
    type(rmmDeviceList_t) :: devices
    ! Bytes the pool may grow to (0: no limit, as legacy RMM's pool).
    integer(c_size_t) :: maximum_pool_size = 0
  end type rmmOptions_t

  ! What a resource holds and uses (`rmmResourceGetFootprint`).
  type, bind(c) :: rmmFootprint_t
    ! Bytes held from the device (a pool's chunks, mapped pages), now and at most.
    integer(c_size_t) :: reserved_bytes = 0
    ! The most `reserved_bytes` has been since the resource was made.
    integer(c_size_t) :: peak_reserved_bytes = 0
    ! Bytes in blocks handed out, now and at most (block sizes, rounded up as handed out).
    integer(c_size_t) :: live_bytes = 0
    ! The most `live_bytes` has been; with several streams, the sum of each stream's most,
    ! which bounds the true figure from above.
    integer(c_size_t) :: peak_live_bytes = 0
    ! Bytes of the largest block one allocation could get without the resource growing.
    integer(c_size_t) :: largest_free_block = 0
    ! 1 - live / reserved: the share of what is held that is not in use; NaN while nothing is
    ! in use (no figure).
    real(c_double) :: fragmentation = 0.0_c_double
  end type rmmFootprint_t

  ! Receives one line of a logging adaptor's log (`rmmLoggingAdaptorCreateWithSink`): `length`
  ! bytes, NUL-terminated, without the end-of-line, valid during the call only. Returns 0, or
  ! anything else when the line could not be written (the next `rmmLoggingAdaptorFlush` is then
  ! RMM_ERROR_IO).
  ! In Fortran: a bind(c) function of this interface, passed as c_funloc(f).
  abstract interface
    integer(c_int) function rmmLogLineCallback_t(line, length, user_data) bind(c)
      import :: c_char, c_int, c_ptr, c_size_t
      character(kind=c_char), dimension(*), intent(in) :: line
      integer(c_size_t), value :: length
      type(c_ptr), value :: user_data
    end function rmmLogLineCallback_t
  end interface

  ! Called once with `user_data` when the resource holding it goes
  ! (`rmmCallbackResourceCreateWithRelease`, `rmmLoggingAdaptorCreateWithSink`). In Fortran: a
  ! bind(c) function of this interface, passed as c_funloc(f).
  abstract interface
    subroutine rmmReleaseCallback_t(user_data) bind(c)
      import :: c_ptr
      type(c_ptr), value :: user_data
    end subroutine rmmReleaseCallback_t
  end interface

  ! Called when an allocation fails for lack of memory, with the bytes asked for and the `arg`
  ! given at creation; returning true retries the allocation.
  ! In Fortran: a bind(c) function of this interface, passed as c_funloc(f).
  abstract interface
    logical(c_bool) function rmmFailureCallback_t(bytes, arg) bind(c)
      import :: c_bool, c_ptr, c_size_t
      integer(c_size_t), value :: bytes
      type(c_ptr), value :: arg
    end function rmmFailureCallback_t
  end interface

  ! Receives one diagnostic of rmm-rs: its level (`RMM_LOG_LEVEL_*`), the message (`length`
  ! bytes of UTF-8, NUL-terminated, without an end-of-line; a message may span several lines),
  ! and the `user_data` given to `rmmLogSinkAdd`. The message is valid during the call only.
  ! In Fortran: a bind(c) function of this interface, passed as c_funloc(f).
  abstract interface
    subroutine rmmLogCallback_t(level, message, length, user_data) bind(c)
      import :: c_char, c_int, c_ptr, c_size_t
      integer(c_int), value :: level
      character(kind=c_char), dimension(*), intent(in) :: message
      integer(c_size_t), value :: length
      type(c_ptr), value :: user_data
    end subroutine rmmLogCallback_t
  end interface

  ! Allocates `bytes` for use on `stream` and returns the address, or NULL when it cannot (out
  ! of memory); `user_data` is what `rmmCallbackResourceCreate` was given.
  ! In Fortran: a bind(c) function of this interface, passed as c_funloc(f).
  abstract interface
    type(c_ptr) function rmmAllocateCallback_t(bytes, stream, user_data) bind(c)
      import :: c_ptr, c_size_t
      integer(c_size_t), value :: bytes
      type(c_ptr), value :: stream
      type(c_ptr), value :: user_data
    end function rmmAllocateCallback_t
  end interface

  ! Gives back `ptr`, which the allocate callback returned for `bytes`, in the order of `stream`.
  ! In Fortran: a bind(c) function of this interface, passed as c_funloc(f).
  abstract interface
    subroutine rmmDeallocateCallback_t(ptr, bytes, stream, user_data) bind(c)
      import :: c_ptr, c_size_t
      type(c_ptr), value :: ptr
      integer(c_size_t), value :: bytes
      type(c_ptr), value :: stream
      type(c_ptr), value :: user_data
    end subroutine rmmDeallocateCallback_t
  end interface

  ! As `rmmAllocateCallback_t`, at a multiple of `alignment` (a power of two, at least 256).
  ! In Fortran: a bind(c) function of this interface, passed as c_funloc(f).
  abstract interface
    type(c_ptr) function rmmAlignedAllocateCallback_t(bytes, alignment, stream, user_data) bind(c)
      import :: c_ptr, c_size_t
      integer(c_size_t), value :: bytes
      integer(c_size_t), value :: alignment
      type(c_ptr), value :: stream
      type(c_ptr), value :: user_data
    end function rmmAlignedAllocateCallback_t
  end interface

  ! As `rmmDeallocateCallback_t`, with the alignment the memory was allocated with.
  ! In Fortran: a bind(c) function of this interface, passed as c_funloc(f).
  abstract interface
    subroutine rmmAlignedDeallocateCallback_t(ptr, bytes, alignment, stream, user_data) bind(c)
      import :: c_ptr, c_size_t
      type(c_ptr), value :: ptr
      integer(c_size_t), value :: bytes
      integer(c_size_t), value :: alignment
      type(c_ptr), value :: stream
      type(c_ptr), value :: user_data
    end subroutine rmmAlignedDeallocateCallback_t
  end interface

  interface
    ! Creates a statistics adaptor over `upstream`: current, peak and total bytes and
    ! allocation counts of what goes through it. Threads never wait here: each counts in a shard
    ! of its own. Current and total figures are exact once the threads using it have returned.
    ! The peak is never above the true peak and is exact while one thread uses the adaptor; with
    ! several at once it can fall short by less than 4 MiB and 64 allocations per other thread.
    ! Errors: only the general ones (RMM_ERROR_INVALID_HANDLE for `upstream`,
    ! RMM_ERROR_INVALID_ARGUMENT when `resource` is NULL); creating it takes no memory.
    integer(c_int) function rmmStatisticsAdaptorCreate(resource, upstream) &
        bind(c, name="rmmStatisticsAdaptorCreate")
      import :: c_int, c_ptr
      type(c_ptr), intent(inout) :: resource
      type(c_ptr), value :: upstream
    end function rmmStatisticsAdaptorCreate

    ! Writes the figures of the innermost scope of a statistics adaptor to `*counts`.
    ! A resource that is not a statistics adaptor: RMM_ERROR_INVALID_ARGUMENT.
    integer(c_int) function rmmStatisticsAdaptorGetCounts(resource, counts) &
        bind(c, name="rmmStatisticsAdaptorGetCounts")
      import :: c_int, c_ptr, rmmStatistics_t
      type(c_ptr), value :: resource
      type(rmmStatistics_t), intent(inout) :: counts
    end function rmmStatisticsAdaptorGetCounts

    ! Starts a nested scope: the figures start again from zero until the matching pop.
    ! A resource that is not a statistics adaptor: RMM_ERROR_INVALID_ARGUMENT.
    integer(c_int) function rmmStatisticsAdaptorPushCounters(resource) &
        bind(c, name="rmmStatisticsAdaptorPushCounters")
      import :: c_int, c_ptr
      type(c_ptr), value :: resource
    end function rmmStatisticsAdaptorPushCounters

    ! Ends the innermost scope and writes its figures to `*popped` unless it is NULL; its peak
    ! counts towards the enclosing scope's, as in RMM. Without a pushed scope:
    ! RMM_ERROR_INVALID_ARGUMENT.
    integer(c_int) function rmmStatisticsAdaptorPopCounters(resource, popped) &
        bind(c, name="rmmStatisticsAdaptorPopCounters")
      import :: c_int, c_ptr
      type(c_ptr), value :: resource
      type(c_ptr), value :: popped
    end function rmmStatisticsAdaptorPopCounters

    ! Creates a logging adaptor over `upstream` that writes one CSV line per allocation and free
    ! to `path` (created or truncated now), in RAPIDS RMM's format
    ! (`Thread,Time,Action,Pointer,Size,Stream`). A NULL `path` uses the file the environment
    ! variable RMM_LOG_FILE names; with neither, RMM_ERROR_INVALID_ARGUMENT. A file that cannot
    ! be created is RMM_ERROR_IO. Lines are buffered: `rmmLoggingAdaptorFlush` and destroying the
    ! adaptor write them out.
    ! Easier from Fortran: rmm_logging_adaptor_create.
    integer(c_int) function rmmLoggingAdaptorCreate(resource, upstream, path) &
        bind(c, name="rmmLoggingAdaptorCreate")
      import :: c_int, c_ptr
      type(c_ptr), intent(inout) :: resource
      type(c_ptr), value :: upstream
      type(c_ptr), value :: path
    end function rmmLoggingAdaptorCreate

    ! Writes every buffered line of a logging adaptor to its file and flushes the file.
    ! RMM_ERROR_IO if a write failed since the last flush.
    integer(c_int) function rmmLoggingAdaptorFlush(resource) &
        bind(c, name="rmmLoggingAdaptorFlush")
      import :: c_int, c_ptr
      type(c_ptr), value :: resource
    end function rmmLoggingAdaptorFlush

    ! Creates a logging adaptor over `upstream` that hands its log, line by line, to
    ! `line(text, length, user_data)` instead of writing a file: the CSV header
    ! (`Thread,Time,Action,Pointer,Size,Stream`) first, on the calling thread before this returns,
    ! then one line per allocation and free, in RAPIDS RMM's format, as `rmmLoggingAdaptorCreate`
    ! writes them. Lines are buffered as there: later lines are delivered on rmm-rs's writer
    ! thread, in order, one call at a time (never two at once), when buffers fill,
    ! by `rmmLoggingAdaptorFlush` (whose return means every line logged before it was delivered)
    ! and when the adaptor goes. The callbacks must not unwind or longjmp out, nor allocate
    ! through this adaptor. `release(user_data)`, when not NULL, is called once after the last
    ! line, when the adaptor itself goes (after its last handle and every resource over it), so
    ! `user_data` may be freed there; it is not called when creation fails, and at process exit
    ! it may not run. `line` NULL: RMM_ERROR_INVALID_ARGUMENT; the header refused (`line`
    ! returned non-zero): RMM_ERROR_IO.
    integer(c_int) function rmmLoggingAdaptorCreateWithSink(resource, upstream, line, release, &
        user_data) bind(c, name="rmmLoggingAdaptorCreateWithSink")
      import :: c_funptr, c_int, c_ptr
      type(c_ptr), intent(inout) :: resource
      type(c_ptr), value :: upstream
      type(c_funptr), value :: line
      type(c_funptr), value :: release
      type(c_ptr), value :: user_data
    end function rmmLoggingAdaptorCreateWithSink

    ! Creates a limiting adaptor over `upstream`: an allocation that would take the bytes
    ! allocated through it (each rounded up to 256) past `limit` is RMM_ERROR_OUT_OF_MEMORY,
    ! with the limit in the message. A `limit` of 0 is RMM_ERROR_INVALID_ARGUMENT.
    integer(c_int) function rmmLimitingAdaptorCreate(resource, upstream, limit) &
        bind(c, name="rmmLimitingAdaptorCreate")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), intent(inout) :: resource
      type(c_ptr), value :: upstream
      integer(c_size_t), value :: limit
    end function rmmLimitingAdaptorCreate

    ! Writes the bytes a limiting adaptor counts as allocated to `*bytes`.
    ! A resource that is not a limiting adaptor: RMM_ERROR_INVALID_ARGUMENT.
    integer(c_int) function rmmLimitingAdaptorGetAllocatedBytes(resource, bytes) &
        bind(c, name="rmmLimitingAdaptorGetAllocatedBytes")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: resource
      integer(c_size_t), intent(inout) :: bytes
    end function rmmLimitingAdaptorGetAllocatedBytes

    ! Creates a tracking adaptor over `upstream`: it records every outstanding allocation with
    ! size, stream, thread, the `RMM_ALLOC` call site and, when `capture_stacks` is true, a
    ! backtrace (slow: for debugging). Leaks are reported to the log (stderr) at `rmmFinalize`, at
    ! process exit and when the adaptor is destroyed.
    ! Errors: only the general ones (RMM_ERROR_INVALID_HANDLE for `upstream`,
    ! RMM_ERROR_INVALID_ARGUMENT when `resource` is NULL).
    integer(c_int) function rmmTrackingAdaptorCreate(resource, upstream, capture_stacks) &
        bind(c, name="rmmTrackingAdaptorCreate")
      import :: c_bool, c_int, c_ptr
      type(c_ptr), intent(inout) :: resource
      type(c_ptr), value :: upstream
      logical(c_bool), value :: capture_stacks
    end function rmmTrackingAdaptorCreate

    ! Lists the outstanding allocations of a tracking adaptor, by address: writes how many there
    ! are to `*count` and the first `capacity` of them to `records` (which may be NULL when
    ! `capacity` is 0).
    ! A resource that is not a tracking adaptor, or `records` NULL with `capacity` above 0:
    ! RMM_ERROR_INVALID_ARGUMENT.
    integer(c_int) function rmmTrackingAdaptorGetOutstanding(resource, records, capacity, count) &
        bind(c, name="rmmTrackingAdaptorGetOutstanding")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: resource
      type(c_ptr), value :: records
      integer(c_size_t), value :: capacity
      integer(c_size_t), intent(inout) :: count
    end function rmmTrackingAdaptorGetOutstanding

    ! The leak report of a tracking adaptor, as text (empty when nothing is outstanding), copied
    ! with a NUL into `buffer` of `size` bytes; its length goes to `*length` unless NULL. A NULL
    ! `buffer` only asks for the length; a buffer too small is RMM_ERROR_INVALID_ARGUMENT.
    ! Easier from Fortran: rmm_tracking_adaptor_get_report.
    integer(c_int) function rmmTrackingAdaptorGetReport(resource, buffer, size, length) &
        bind(c, name="rmmTrackingAdaptorGetReport")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: resource
      type(c_ptr), value :: buffer
      integer(c_size_t), value :: size
      type(c_ptr), value :: length
    end function rmmTrackingAdaptorGetReport

    ! The stack captured when the outstanding allocation at `ptr` was made through a tracking
    ! adaptor created with `capture_stacks` (one frame a line), copied with a NUL into `buffer`
    ! of `size` bytes; its length goes to `*length` unless NULL ("" when the adaptor captures no
    ! stacks). A NULL `buffer` only asks for the length; a buffer too small, a resource that is
    ! not a tracking adaptor or a `ptr` that is not outstanding there: RMM_ERROR_INVALID_ARGUMENT.
    integer(c_int) function rmmTrackingAdaptorGetStack(resource, ptr, buffer, size, length) &
        bind(c, name="rmmTrackingAdaptorGetStack")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: resource
      type(c_ptr), value :: ptr
      type(c_ptr), value :: buffer
      integer(c_size_t), value :: size
      type(c_ptr), value :: length
    end function rmmTrackingAdaptorGetStack

    ! Creates a failure-callback adaptor over `upstream`: when an allocation fails with
    ! RMM_ERROR_OUT_OF_MEMORY, it calls `callback(bytes, arg)` and tries again for as long as the
    ! callback returns true (to spill or drop caches first). `callback` may not be NULL; it runs
    ! on the allocating thread and must not allocate through this adaptor.
    integer(c_int) function rmmFailureCallbackAdaptorCreate(resource, upstream, callback, arg) &
        bind(c, name="rmmFailureCallbackAdaptorCreate")
      import :: c_funptr, c_int, c_ptr
      type(c_ptr), intent(inout) :: resource
      type(c_ptr), value :: upstream
      type(c_funptr), value :: callback
      type(c_ptr), value :: arg
    end function rmmFailureCallbackAdaptorCreate

    ! Creates an aligned adaptor over `upstream`: allocations of at least `threshold` bytes are
    ! aligned to `alignment` (a power of two; below 256 it is 256); smaller ones pass through. Over
    ! a pool or an expandable resource the pool places each block at an aligned address itself (it
    ! holds the block at its own size); over any other resource the adaptor allocates `alignment -
    ! 256` bytes more and hands out the aligned address inside, as RMM does. A free with another
    ! size than the allocation's is refused (`RMM_ERROR_INVALID_ARGUMENT`).
    integer(c_int) function rmmAlignedAdaptorCreate(resource, upstream, alignment, threshold) &
        bind(c, name="rmmAlignedAdaptorCreate")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), intent(inout) :: resource
      type(c_ptr), value :: upstream
      integer(c_size_t), value :: alignment
      integer(c_size_t), value :: threshold
    end function rmmAlignedAdaptorCreate

    ! Creates a prefetch adaptor over `upstream`: each allocation of managed memory is migrated
    ! to the device in the order of its stream before it is handed out (other memory as is).
    ! Errors: only the general ones (RMM_ERROR_INVALID_HANDLE for `upstream`,
    ! RMM_ERROR_INVALID_ARGUMENT when `resource` is NULL).
    integer(c_int) function rmmPrefetchAdaptorCreate(resource, upstream) &
        bind(c, name="rmmPrefetchAdaptorCreate")
      import :: c_int, c_ptr
      type(c_ptr), intent(inout) :: resource
      type(c_ptr), value :: upstream
    end function rmmPrefetchAdaptorCreate

    ! Sets up the resource stack each device gets on first use when the program has set none,
    ! from the stack spec `conf` (NULL: the environment variable RMM_ALLOC_CONF; unset or empty,
    ! or `conf` empty: `statistics/pool`, a pool with statistics, which is also what the preload
    ! library and the Python module set up with nothing configured; `cuda` turns pooling off).
    ! Without any configuration, a device's resource is `cuda`, RMM's plain device memory, as in
    ! RMM. A spec names the layers from the
    ! outermost to the device, e.g. `statistics/pool:initial=4GiB,maximum=60GiB/cuda`, and may
    ! start with `report/` (each device's statistics and unfreed allocations printed to stderr
    ! at exit) and `registered_streams/` (the program uses no stream rmm-rs did not make or was
    ! not told of: any other handle is refused and never handed to the driver, see
    ! `rmmStreamRegister`); the older `key:value` form
    ! (`resource:pool,initial_pool_size:4GiB,log:/tmp/rmm.csv,stats:1,report:1`) still works.
    ! The grammar, every layer and its defaults: docs/src/configuration.md. A log path holding
    ! `{device}` is per device; without it, device N > 0 logs to `<path>.N`. Devices that already
    ! have a resource keep it. Without a call, the first use of a device reads RMM_ALLOC_CONF
    ! itself. A spec it cannot parse is RMM_ERROR_INVALID_ARGUMENT, with a message that quotes
    ! the offending text and gives its column, and changes nothing.
    ! Easier from Fortran: rmm_configure.
    integer(c_int) function rmmConfigure(conf) bind(c, name="rmmConfigure")
      import :: c_int, c_ptr
      type(c_ptr), value :: conf
    end function rmmConfigure

    ! The report a `report` spec prints at exit, now: for each device configured by
    ! `rmmConfigure` or RMM_ALLOC_CONF, its resource, allocation statistics and unfreed
    ! allocations ("" unless the spec asked for a report).
    ! Copied with a NUL into `buffer` of `size` bytes; its length goes to `*length` unless NULL.
    ! A NULL `buffer` only asks for the length; a buffer too small is RMM_ERROR_INVALID_ARGUMENT.
    ! Easier from Fortran: rmm_get_report.
    integer(c_int) function rmmGetReport(buffer, size, length) bind(c, name="rmmGetReport")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: buffer
      integer(c_size_t), value :: size
      type(c_ptr), value :: length
    end function rmmGetReport

    ! Reads the size `text` into `*bytes`, as rmm-rs reads every size (RMM_ALLOC_CONF, specs,
    ! RMM_SIM_DEVICES, the Python package's sizes): a number of bytes, with a fraction or
    ! without (`4096`, `1.5GiB`), then optionally a unit, in any case, after spaces or not: `B`;
    ! `kB`, `MB`, `GB`, `TB`, `PB`, powers of 1000 (`1GB` is 10^9 bytes, as in SI and RAPIDS'
    ! `parse_bytes`); `KiB`, `MiB`, `GiB`, `TiB`, `PiB`, powers of 1024 (`1GiB` is 2^30 bytes).
    ! A fraction of a byte is dropped. A prefix letter alone (`4G`) is ambiguous and refused.
    ! Neither `bytes` nor `text` may be NULL. Text that is not a size, or one above SIZE_MAX
    ! bytes, is RMM_ERROR_INVALID_ARGUMENT with a message that quotes it and says why
    ! (`"4G" is not a size: 4G is ambiguous: write 4GiB (4294967296 bytes) or 4GB (4000000000
    ! bytes)`), and `*bytes` keeps its value.
    integer(c_int) function rmmParseSize(bytes, text) bind(c, name="rmmParseSize")
      import :: c_char, c_int, c_size_t
      integer(c_size_t), intent(inout) :: bytes
      character(kind=c_char), dimension(*), intent(in) :: text
    end function rmmParseSize

    ! Creates a buffer of `size` bytes (uninitialized; 0 gives an empty buffer with a NULL data
    ! pointer) from `resource` (NULL: the current device's resource), usable in the order of
    ! `stream`. The buffer keeps its own reference to the resource; the caller destroys the buffer
    ! with `rmmDeviceBufferDestroy`.
    ! RMM_ERROR_OUT_OF_MEMORY when the resource cannot give `size` bytes;
    ! RMM_ERROR_INVALID_ARGUMENT for a stream the resource cannot take (see `rmmResourceAllocate`;
    ! with `registered_streams`, also a handle rmm-rs does not know, whatever the resource, since
    ! the buffer's copies go in the stream's order) or, for a pool, a stream of another device.
    integer(c_int) function rmmDeviceBufferCreate(buffer, size, stream, resource) &
        bind(c, name="rmmDeviceBufferCreate")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), intent(inout) :: buffer
      integer(c_size_t), value :: size
      type(c_ptr), value :: stream
      type(c_ptr), value :: resource
    end function rmmDeviceBufferCreate

    ! Creates a buffer holding a copy of the `size` bytes at `host` (NULL only when `size` is 0).
    ! The copy is complete when this returns, so `host` may be reused at once.
    ! `host` NULL with `size` above 0: RMM_ERROR_INVALID_ARGUMENT; otherwise as
    ! `rmmDeviceBufferCreate` (RMM_ERROR_OUT_OF_MEMORY), and RMM_ERROR_CUDA_ERROR when the copy
    ! fails.
    integer(c_int) function rmmDeviceBufferCreateFromHost(buffer, host, size, stream, resource) &
        bind(c, name="rmmDeviceBufferCreateFromHost")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), intent(inout) :: buffer
      type(c_ptr), value :: host
      integer(c_size_t), value :: size
      type(c_ptr), value :: stream
      type(c_ptr), value :: resource
    end function rmmDeviceBufferCreateFromHost

    ! Copies the buffer's contents to `host`, which holds `host_size` bytes (at least the buffer's
    ! size), in the order of `stream`, and waits for the copy.
    ! `host_size` below the buffer's size, or `host` NULL for a buffer that is not empty:
    ! RMM_ERROR_INVALID_ARGUMENT; a failed copy or stream: RMM_ERROR_CUDA_ERROR.
    integer(c_int) function rmmDeviceBufferCopyToHost(buffer, host, host_size, stream) &
        bind(c, name="rmmDeviceBufferCopyToHost")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: buffer
      type(c_ptr), value :: host
      integer(c_size_t), value :: host_size
      type(c_ptr), value :: stream
    end function rmmDeviceBufferCopyToHost

    ! Sets the buffer's size: within its capacity nothing moves; beyond it the contents move to
    ! a new allocation of exactly `size` bytes, in the order of `stream` (new bytes are
    ! uninitialized). On failure the buffer is unchanged.
    ! RMM_ERROR_OUT_OF_MEMORY when the new allocation cannot be made; RMM_ERROR_INVALID_ARGUMENT
    ! for a stream that is not live; either way the buffer is unchanged.
    integer(c_int) function rmmDeviceBufferResize(buffer, size, stream) &
        bind(c, name="rmmDeviceBufferResize")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: buffer
      integer(c_size_t), value :: size
      type(c_ptr), value :: stream
    end function rmmDeviceBufferResize

    ! Gives back the capacity beyond the size (the contents move to an allocation of exactly
    ! the size), in the order of `stream`.
    ! As `rmmDeviceBufferResize`: RMM_ERROR_OUT_OF_MEMORY or RMM_ERROR_INVALID_ARGUMENT, with the
    ! buffer unchanged.
    integer(c_int) function rmmDeviceBufferShrinkToFit(buffer, stream) &
        bind(c, name="rmmDeviceBufferShrinkToFit")
      import :: c_int, c_ptr
      type(c_ptr), value :: buffer
      type(c_ptr), value :: stream
    end function rmmDeviceBufferShrinkToFit

    ! Creates in `*copy` a new buffer with the same contents, copied in the order of `stream`,
    ! from `resource` (NULL: the source buffer's resource).
    ! RMM_ERROR_OUT_OF_MEMORY when `resource` cannot hold the copy; RMM_ERROR_INVALID_ARGUMENT for
    ! a stream that is not live; RMM_ERROR_CUDA_ERROR when the copy fails.
    integer(c_int) function rmmDeviceBufferCopy(copy, source, stream, resource) &
        bind(c, name="rmmDeviceBufferCopy")
      import :: c_int, c_ptr
      type(c_ptr), intent(inout) :: copy
      type(c_ptr), value :: source
      type(c_ptr), value :: stream
      type(c_ptr), value :: resource
    end function rmmDeviceBufferCopy

    ! Writes the buffer's device address to `*data` (NULL for an empty buffer). Valid until the
    ! buffer is resized beyond its capacity, shrunk or destroyed.
    ! Errors: only the general ones (RMM_ERROR_INVALID_HANDLE for `buffer`,
    ! RMM_ERROR_INVALID_ARGUMENT when `data` is NULL).
    integer(c_int) function rmmDeviceBufferData(buffer, data) bind(c, name="rmmDeviceBufferData")
      import :: c_int, c_ptr
      type(c_ptr), value :: buffer
      type(c_ptr), intent(inout) :: data
    end function rmmDeviceBufferData

    ! Writes the buffer's size in bytes to `*size` and, unless `capacity` is NULL, the bytes its
    ! allocation holds to `*capacity`.
    ! Errors: only the general ones (RMM_ERROR_INVALID_HANDLE for `buffer`,
    ! RMM_ERROR_INVALID_ARGUMENT when `size` is NULL).
    integer(c_int) function rmmDeviceBufferSize(buffer, size, capacity) &
        bind(c, name="rmmDeviceBufferSize")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: buffer
      integer(c_size_t), intent(inout) :: size
      type(c_ptr), value :: capacity
    end function rmmDeviceBufferSize

    ! Makes `stream` the buffer's stream: later resizes default to it and the buffer is freed in
    ! its order. For a buffer of a resource that orders memory by stream (a pool, say), the stream
    ! must be live: a default stream, one rmm-rs made or was told of (`rmmStreamRegister`), or
    ! any other live stream, which rmm-rs asks the driver about (a destroyed handle is then
    ! RMM_ERROR_INVALID_ARGUMENT on simulated devices, and may crash a CUDA driver). With the
    ! `registered_streams` configuration, a handle rmm-rs does not know is
    ! RMM_ERROR_INVALID_ARGUMENT without asking. Refused, the buffer's stream stays unchanged, so
    ! that its destroy still frees it. The memory of resources that free at once (cuda, managed,
    ! pinned_host, system, callback) is freed whatever the stream: its handle is not looked at.
    integer(c_int) function rmmDeviceBufferSetStream(buffer, stream) &
        bind(c, name="rmmDeviceBufferSetStream")
      import :: c_int, c_ptr
      type(c_ptr), value :: buffer
      type(c_ptr), value :: stream
    end function rmmDeviceBufferSetStream

    ! Frees the buffer's memory in the order of its stream (the last one used, or the one set
    ! with `rmmDeviceBufferSetStream`) and destroys the handle. NULL is a no-op. If the memory
    ! cannot be freed (its stream was destroyed, say), the buffer and its handle stay as they were:
    ! set another stream and destroy it again.
    ! When the memory cannot be freed, the free's error (RMM_ERROR_INVALID_ARGUMENT for a stream
    ! that is no longer live), with the buffer kept.
    integer(c_int) function rmmDeviceBufferDestroy(buffer) bind(c, name="rmmDeviceBufferDestroy")
      import :: c_int, c_ptr
      type(c_ptr), value :: buffer
    end function rmmDeviceBufferDestroy

    ! Makes `resource` the resource of `device` (the registry keeps its own reference, so the
    ! caller may destroy its handle). If `previous` is not NULL it receives a new handle to the
    ! resource replaced, owned by the caller. The resource must belong to `device`. Each thread
    ! keeps the resource it last allocated from on each device (so that allocating takes no lock);
    ! before this returns, every thread that is not inside an allocation lets go of the replaced
    ! resource, and each thread inside one lets go of it as that call returns. So a replaced
    ! resource goes, and gives its memory back, once its handles are destroyed and the calls that
    ! use it have returned, whatever other threads do. Where the kernel offers no membarrier (or
    ! with `RMM_RETIRE_REPLACED=0`), each thread lets go of it only when an allocation of its own
    ! on any device returns, or when it exits.
    ! A `device` that does not exist, or a resource of another device (or of pinned host memory):
    ! RMM_ERROR_INVALID_ARGUMENT.
    integer(c_int) function rmmSetPerDeviceResource(device, resource, previous) &
        bind(c, name="rmmSetPerDeviceResource")
      import :: c_int, c_ptr
      integer(c_int), value :: device
      type(c_ptr), value :: resource
      type(c_ptr), value :: previous
    end function rmmSetPerDeviceResource

    ! Writes a new handle to `device`'s resource to `*resource` (a cuda resource unless one was
    ! set). The caller owns the handle and destroys it with `rmmResourceDestroy`.
    ! A `device` that does not exist: RMM_ERROR_INVALID_ARGUMENT; RMM_ERROR_CUDA_ERROR without a
    ! CUDA driver (and without `RMM_SIM_DEVICES`) or when the driver fails.
    integer(c_int) function rmmGetPerDeviceResource(device, resource) &
        bind(c, name="rmmGetPerDeviceResource")
      import :: c_int, c_ptr
      integer(c_int), value :: device
      type(c_ptr), intent(inout) :: resource
    end function rmmGetPerDeviceResource

    ! `rmmSetPerDeviceResource` for the calling thread's current device (the replaced resource
    ! goes as that function says, without waiting for idle threads).
    ! A resource of another device than the current one: RMM_ERROR_INVALID_ARGUMENT;
    ! RMM_ERROR_CUDA_ERROR without a CUDA driver (and without `RMM_SIM_DEVICES`) or when the
    ! driver fails.
    integer(c_int) function rmmSetCurrentDeviceResource(resource, previous) &
        bind(c, name="rmmSetCurrentDeviceResource")
      import :: c_int, c_ptr
      type(c_ptr), value :: resource
      type(c_ptr), value :: previous
    end function rmmSetCurrentDeviceResource

    ! `rmmGetPerDeviceResource` for the calling thread's current device.
    ! RMM_ERROR_CUDA_ERROR without a CUDA driver (and without `RMM_SIM_DEVICES`) or when the
    ! driver fails.
    integer(c_int) function rmmGetCurrentDeviceResource(resource) &
        bind(c, name="rmmGetCurrentDeviceResource")
      import :: c_int, c_ptr
      type(c_ptr), intent(inout) :: resource
    end function rmmGetCurrentDeviceResource

    ! Writes the calling thread's current device (as `cudaGetDevice`) to `*device`.
    ! RMM_ERROR_CUDA_ERROR without a CUDA driver (and without `RMM_SIM_DEVICES`) or when the
    ! driver fails.
    integer(c_int) function rmmGetDevice(device) bind(c, name="rmmGetDevice")
      import :: c_int
      integer(c_int), intent(inout) :: device
    end function rmmGetDevice

    ! Makes `device` current on the calling thread (as `cudaSetDevice`: its primary context).
    ! A `device` that does not exist: RMM_ERROR_INVALID_ARGUMENT; RMM_ERROR_CUDA_ERROR without a
    ! CUDA driver (and without `RMM_SIM_DEVICES`) or when the driver fails.
    integer(c_int) function rmmSetDevice(device) bind(c, name="rmmSetDevice")
      import :: c_int
      integer(c_int), value :: device
    end function rmmSetDevice

    ! Writes the number of devices to `*count`.
    ! RMM_ERROR_CUDA_ERROR without a CUDA driver (and without `RMM_SIM_DEVICES`) or when the
    ! driver fails.
    integer(c_int) function rmmGetDeviceCount(count) bind(c, name="rmmGetDeviceCount")
      import :: c_int
      integer(c_int), intent(inout) :: count
    end function rmmGetDeviceCount

    ! Writes the free and total bytes of `device`'s memory to `*free_bytes` and `*total_bytes`,
    ! as `cudaMemGetInfo` does for the current device (on simulated devices: the capacity
    ! `RMM_SIM_DEVICES` gives, less what device and managed memory hold). Needs no
    ! `rmmInitialize`, unlike `rmmGetInfo`. Neither out-pointer may be NULL.
    ! A `device` that does not exist: RMM_ERROR_INVALID_ARGUMENT; RMM_ERROR_CUDA_ERROR without a
    ! CUDA driver (and without `RMM_SIM_DEVICES`) or when the driver fails.
    integer(c_int) function rmmGetDeviceMemInfo(free_bytes, total_bytes, device) &
        bind(c, name="rmmGetDeviceMemInfo")
      import :: c_int, c_size_t
      integer(c_size_t), intent(inout) :: free_bytes
      integer(c_size_t), intent(inout) :: total_bytes
      integer(c_int), value :: device
    end function rmmGetDeviceMemInfo

    ! Writes true to `*simulated` when rmm runs on simulated devices (`RMM_SIM_DEVICES`), false
    ! on the CUDA driver. Fails with RMM_ERROR_CUDA_ERROR when neither is available.
    integer(c_int) function rmmIsSimulated(simulated) bind(c, name="rmmIsSimulated")
      import :: c_bool, c_int
      logical(c_bool), intent(inout) :: simulated
    end function rmmIsSimulated

    ! On simulated devices, what the simulator knows of `ptr`, numbered as CUDA's `cudaMemoryType`:
    ! writes to `*memory_type` 2 (device memory), 3 (managed) or 1 (pinned host) for a pointer
    ! inside a simulated allocation, with its device to `*device`; 0 (unregistered host memory) and
    ! -1 for any other pointer (virtual memory mappings included). For stand-ins of
    ! `cudaPointerGetAttributes` in tests. Neither out-pointer may be NULL. On real devices:
    ! RMM_ERROR_NOT_SUPPORTED (ask the CUDA runtime).
    integer(c_int) function rmmSimGetPointerAttributes(memory_type, device, ptr) &
        bind(c, name="rmmSimGetPointerAttributes")
      import :: c_int, c_ptr
      integer(c_int), intent(inout) :: memory_type
      integer(c_int), intent(inout) :: device
      type(c_ptr), value :: ptr
    end function rmmSimGetPointerAttributes

    ! Migrates `[ptr, ptr + bytes)` of managed memory to `device` in the order of `stream`
    ! (`cudaMemPrefetchAsync`), as RAPIDS RMM's `rmm::prefetch` and `DeviceBuffer.prefetch` do.
    ! Memory that is not managed stays where it is and needs no prefetch: RMM_SUCCESS, as RAPIDS
    ! gives. NULL or 0 bytes: nothing. `stream`: as `rmmStreamSynchronize`'s. A `device` that does
    ! not exist: RMM_ERROR_INVALID_ARGUMENT; RMM_ERROR_CUDA_ERROR without a CUDA driver (and
    ! without `RMM_SIM_DEVICES`) or when the driver fails.
    integer(c_int) function rmmPrefetch(ptr, bytes, device, stream) bind(c, name="rmmPrefetch")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: ptr
      integer(c_size_t), value :: bytes
      integer(c_int), value :: device
      type(c_ptr), value :: stream
    end function rmmPrefetch

    ! Gives back to `device` every byte rmm-rs holds there without using it, and writes the bytes
    ! given back to `*released` unless it is NULL: the frees `rmmCudaFree` deferred
    ! (`async_free`) whose work is done go back to their pools first, then every resource of the
    ! device releases everything it keeps free, in every stream, lane and thread: pools', arenas',
    ! bins' and fixed-size resources' wholly free chunks (after synchronizing the device), and the
    ! expandable resource's free pages, also inside chunks still in use. Memory in use stays, and
    ! so does the free part of a chunk that holds memory in use (a pool over `cuda` cannot return
    ! part of a `cudaMalloc` allocation). The pinned host memory that keep-mode sleeps of the
    ! device keep for the next one (`rmmResourceSleep`) goes too, uncounted in `*released`.
    ! PyTorch's `torch.cuda.empty_cache()` calls it through the rmm-rs backend. Called from inside
    ! a callback while a pool grows, it passes over that pool. A `device` that does not exist:
    ! RMM_ERROR_INVALID_ARGUMENT; a failure while the device is synchronized or memory given back:
    ! RMM_ERROR_CUDA_ERROR (every resource was still asked).
    integer(c_int) function rmmDeviceRelease(device, released) bind(c, name="rmmDeviceRelease")
      import :: c_int, c_ptr
      integer(c_int), value :: device
      type(c_ptr), value :: released
    end function rmmDeviceRelease

    ! Writes the number of stream-ordering races the simulator found (with
    ! `RMM_SIM_ON_RACE=count`; by default the first race aborts the process), counting also every
    ! stream handle that names no live stream handed to a driver call, which a CUDA driver may
    ! crash on. On real devices: RMM_ERROR_NOT_SUPPORTED.
    integer(c_int) function rmmSimGetRaceCount(count) bind(c, name="rmmSimGetRaceCount")
      import :: c_int, c_size_t
      integer(c_size_t), intent(inout) :: count
    end function rmmSimGetRaceCount

    ! Sets the level of rmm-rs's diagnostics (`RMM_LOG_LEVEL_TRACE` .. `RMM_LOG_LEVEL_OFF`, the
    ! values of RAPIDS' `rapids_logger::level_enum`), for every thread; messages below it are
    ! not written. The environment variable RMM_LOG_LEVEL sets the level at the first call
    ! (default `RMM_LOG_LEVEL_WARN`). `rmm::default_logger().set_level()` calls this.
    ! Another value: RMM_ERROR_INVALID_ARGUMENT.
    integer(c_int) function rmmLogSetLevel(level) bind(c, name="rmmLogSetLevel")
      import :: c_int
      integer(c_int), value :: level
    end function rmmLogSetLevel

    ! Writes the level of rmm-rs's diagnostics (`RMM_LOG_LEVEL_*`) to `*level`.
    ! `level` NULL: RMM_ERROR_INVALID_ARGUMENT.
    integer(c_int) function rmmLogGetLevel(level) bind(c, name="rmmLogGetLevel")
      import :: c_int
      integer(c_int), intent(inout) :: level
    end function rmmLogGetLevel

    ! Registers a sink for rmm-rs's diagnostics: each message at or above the level
    ! (`rmmLogSetLevel`) is handed to `callback(level, message, length, user_data)` on the thread
    ! that writes it, possibly on several threads at once, and, while any sink is registered, is
    ! no longer written to stderr. Sinks are called in the order they were added. A message
    ! written from inside a callback (on its thread) goes to stderr, not to a sink. The callback
    ! must not unwind (a C++ exception, a Rust panic) or longjmp out. Its id, for
    ! `rmmLogSinkRemove`, goes to `*sink` (ids are never reused). `user_data` may be NULL and must
    ! stay valid until `rmmLogSinkRemove` returns. `sink` or `callback` NULL:
    ! RMM_ERROR_INVALID_ARGUMENT.
    integer(c_int) function rmmLogSinkAdd(sink, callback, user_data) bind(c, name="rmmLogSinkAdd")
      import :: c_funptr, c_int, c_int64_t, c_ptr
      integer(c_int64_t), intent(inout) :: sink  ! uint64_t in C
      type(c_funptr), value :: callback
      type(c_ptr), value :: user_data
    end function rmmLogSinkAdd

    ! Removes the sink `sink` (`rmmLogSinkAdd`'s id): once this returns, its callback is not
    ! called again, and calls in progress on other threads have returned (called from inside the
    ! callback itself, it waits for the other threads' calls only), so `user_data` may be freed.
    ! With no sink left, diagnostics go to stderr again. An id that is not registered (removed
    ! already, or never given): RMM_ERROR_INVALID_ARGUMENT.
    integer(c_int) function rmmLogSinkRemove(sink) bind(c, name="rmmLogSinkRemove")
      import :: c_int, c_int64_t
      integer(c_int64_t), value :: sink  ! uint64_t in C
    end function rmmLogSinkRemove

    ! PyTorch's allocate function: `size` bytes on `device` for `stream`, from that device's current
    ! resource. NULL on failure: PyTorch 2.11's pluggable allocator does not check for it, so a
    ! refusal surfaces where the pointer is first used (an illegal memory access).
    ! `torch.cuda.memory.CUDAPluggableAllocator("librmm.so", "rmmTorchAllocate",
    ! "rmmTorchDeallocate")`.
    type(c_ptr) function rmmTorchAllocate(size, device, stream) bind(c, name="rmmTorchAllocate")
      import :: c_int32_t, c_intptr_t, c_ptr
      integer(c_intptr_t), value :: size  ! ptrdiff_t in C
      integer(c_int32_t), value :: device
      type(c_ptr), value :: stream
    end function rmmTorchAllocate

    ! PyTorch's free function: returns `ptr` (from `rmmTorchAllocate`) in the order of `stream`.
    subroutine rmmTorchDeallocate(ptr, size, device, stream) bind(c, name="rmmTorchDeallocate")
      import :: c_int32_t, c_intptr_t, c_ptr
      type(c_ptr), value :: ptr
      integer(c_intptr_t), value :: size  ! ptrdiff_t in C
      integer(c_int32_t), value :: device
      type(c_ptr), value :: stream
    end subroutine rmmTorchDeallocate

    ! CuPy's malloc function: `size` bytes on `device`, from the resource `param` names (an
    ! `rmmResource_t`) or, when `param` is NULL, the device's current resource. CuPy passes no
    ! stream: the memory is ordered on the legacy default stream, which does not order
    ! non-blocking streams (use the Python module's stream-aware allocator with those). NULL on
    ! failure, which CuPy does not check: keep memory from running out, or use the Python
    ! allocator, which raises out of memory.
    ! `cupy.cuda.memory.CFunctionAllocator(param, malloc_address, free_address, owner)`.
    type(c_ptr) function rmmCupyAllocate(param, size, device) bind(c, name="rmmCupyAllocate")
      import :: c_int32_t, c_ptr, c_size_t
      type(c_ptr), value :: param
      integer(c_size_t), value :: size
      integer(c_int32_t), value :: device
    end function rmmCupyAllocate

    ! CuPy's free function: returns `ptr` (from `rmmCupyAllocate`) on the legacy default stream.
    subroutine rmmCupyDeallocate(param, ptr, device) bind(c, name="rmmCupyDeallocate")
      import :: c_int32_t, c_ptr
      type(c_ptr), value :: param
      type(c_ptr), value :: ptr
      integer(c_int32_t), value :: device
    end subroutine rmmCupyDeallocate

    ! `rmmExpandableResourceCreateWithOptions` whose pages are also exportable as fabric handles
    ! where the device offers them. Every expandable resource's pages are exportable as POSIX file
    ! descriptors where the device offers that, so its memory can be opened in other processes
    ! (`rmmIpcGetMemHandle`); this one refuses to be made where it cannot. Nothing becomes
    ! shareable that is not asked for: a handle exists only for an allocation
    ! `rmmIpcGetMemHandle` is called on. It costs a file descriptor per page of each allocation
    ! handed out as a handle, while the handle lives. `options` may be NULL (the defaults of
    ! `rmmExpandableResourceCreate(&r, 0)`). RMM_ERROR_NOT_SUPPORTED where the device or driver
    ! cannot export virtual memory; other failures and ownership as
    ! `rmmExpandableResourceCreateWithOptions`. The resource serves any number of threads at
    ! once, as the expandable resource does.
    integer(c_int) function rmmIpcExpandableResourceCreate(resource, options) &
        bind(c, name="rmmIpcExpandableResourceCreate")
      import :: c_int, c_ptr
      type(c_ptr), intent(inout) :: resource
      type(c_ptr), value :: options
    end function rmmIpcExpandableResourceCreate

    ! Gives device `peer` read and write access to everything the expandable resource in
    ! `resource`'s stack (it, or the resource under its adaptors) has mapped and maps from now
    ! on (`cuMemSetAccess`). An expandable resource gives access at creation to every device
    ! that can reach its own (`cuDeviceCanAccessPeer`), so this is needed only for a peer it
    ! could not reach then; calling it again for a peer with access does nothing.
    ! `cudaDeviceEnablePeerAccess` does not cover memory of the virtual-memory API: this is its
    ! counterpart. A peer that cannot reach the resource's device or does not exist, or a NULL
    ! or destroyed `resource`: RMM_ERROR_INVALID_ARGUMENT; a stack without an expandable
    ! resource: RMM_ERROR_NOT_SUPPORTED (`cudaMalloc` memory is reached after
    ! `cudaDeviceEnablePeerAccess`, which the program calls). Other threads may allocate from
    ! the resource meanwhile: what they map while the grant runs gets the peer's access too.
    integer(c_int) function rmmExpandableResourceGrantPeerAccess(resource, peer) &
        bind(c, name="rmmExpandableResourceGrantPeerAccess")
      import :: c_int, c_ptr
      type(c_ptr), value :: resource
      integer(c_int), value :: peer
    end function rmmExpandableResourceGrantPeerAccess

    ! Writes to `*handle` a handle that another process opens `ptr` with (`rmmIpcOpenMemHandle`).
    ! `ptr` must be an allocation rmm handed out and has not taken back (`rmmAlloc`,
    ! `rmmResourceAllocate`, a device buffer's data), on any device. For memory of a shareable
    ! expandable resource (`rmmIpcExpandableResourceCreate`) the handle names the block's pages;
    ! while another process has it open, freeing `ptr` here keeps the block out of the pool until
    ! that process closes it (or exits); once freed, the handle can no longer be opened. Calling
    ! this again before the free answers the same handle. For memory from `cudaMalloc` (a pool's
    ! chunks, the cuda resource) it is the driver's IPC handle of the chunk and `ptr`'s offset in
    ! it: as with RMM and `cudaIpcGetMemHandle`, the block goes back to the pool when freed here,
    ! whoever has it open, so keep it until the other processes have closed it. Nothing is owned:
    ! the handle is bytes. `handle` and `ptr` must not be NULL (RMM_ERROR_INVALID_ARGUMENT), nor a
    ! pointer rmm did not hand out or already took back (RMM_ERROR_INVALID_ARGUMENT); memory that
    ! cannot be shared (managed, pinned host, an expandable resource on a device that cannot export
    ! virtual memory, a cuda_async pool): RMM_ERROR_NOT_SUPPORTED or the driver's refusal
    ! (RMM_ERROR_CUDA_ERROR). Any thread may call it, also while other threads allocate and free.
    integer(c_int) function rmmIpcGetMemHandle(handle, ptr) bind(c, name="rmmIpcGetMemHandle")
      import :: c_int, c_ptr, rmmIpcMemHandle_t
      type(rmmIpcMemHandle_t), intent(inout) :: handle
      type(c_ptr), value :: ptr
    end function rmmIpcGetMemHandle

    ! Opens in this process the allocation another process's `rmmIpcGetMemHandle` named, for
    ! the current device, and writes its address here to `*ptr`, which the caller uses as
    ! device memory of the exporting process's device (also from peers that reach it) until
    ! `rmmIpcCloseMemHandle(*ptr)`. The memory stays the exporter's: rmm never frees it here and
    ! `rmmFree` refuses it. An allocation of expandable memory can be opened by a process that
    ! may take file descriptors from the exporter (`pidfd_getfd`: Linux 5.6, the same user,
    ! and under Yama's ptrace scope 1 a descendant of the exporter, or any process once the
    ! exporter called `rmmIpcAllowOpeners`); it can also be opened in the process that exported
    ! it. `ptr` and `handle` must not be NULL (RMM_ERROR_INVALID_ARGUMENT); bytes that are no
    ! handle, an allocation freed by the exporter or of an exporter that has exited, memory on a
    ! device this process does not see or that the current device cannot reach:
    ! RMM_ERROR_INVALID_ARGUMENT with the reason. Any number of threads may open
    ! and close handles at once.
    integer(c_int) function rmmIpcOpenMemHandle(ptr, handle) bind(c, name="rmmIpcOpenMemHandle")
      import :: c_int, c_ptr, rmmIpcMemHandle_t
      type(c_ptr), intent(inout) :: ptr
      type(rmmIpcMemHandle_t), intent(in) :: handle
    end function rmmIpcOpenMemHandle

    ! Closes what `rmmIpcOpenMemHandle` opened at `ptr`: it is unmapped here once the work that
    ! used it is done (synchronize the streams that used it first, as for
    ! `cudaIpcCloseMemHandle`), and the exporter may reuse the block once no process has it
    ! open. NULL or an address not opened (or closed already): RMM_ERROR_INVALID_ARGUMENT.
    ! Any number of threads may open and close handles at once; each address is closed once.
    integer(c_int) function rmmIpcCloseMemHandle(ptr) bind(c, name="rmmIpcCloseMemHandle")
      import :: c_int, c_ptr
      type(c_ptr), value :: ptr
    end function rmmIpcCloseMemHandle

    ! Lets every process of this user open this process's handles of expandable memory, where
    ! the kernel's Yama ptrace scope is 1 (Ubuntu's default), which otherwise lets only the
    ! exporter's ancestors take its file descriptors: `prctl(PR_SET_PTRACER,
    ! PR_SET_PTRACER_ANY)`. It widens who may ptrace this process to every process of its user,
    ! which is why rmm does not do it unasked. Without Yama it does nothing. A refusal by the
    ! kernel: RMM_ERROR_UNKNOWN with its reason. It applies to the whole process, whichever
    ! thread calls it.
    integer(c_int) function rmmIpcAllowOpeners() bind(c, name="rmmIpcAllowOpeners")
      import :: c_int
    end function rmmIpcAllowOpeners

    ! Writes to `*pages` where the pages of virtual memory that hold `ptr` start, their size and
    ! how many there are, and to `fds[0..page_count]` each page's POSIX file descriptor in this
    ! process, in address order: what another process needs to map the same memory
    ! (`pidfd_getfd` on each, then `rmmIpcOpenMemPages`), as PyTorch's expandable segments share
    ! theirs (docs/src/ipc.md). `ptr` must be an allocation rmm handed out and has not taken
    ! back, of an expandable resource (under any adaptors) whose pages are exportable (every
    ! expandable resource's are where the device offers POSIX file descriptors). The
    ! descriptors stay rmm's: do not close them. Each stays open, with the same number at every
    ! call, while its page is mapped in this process, and is closed when the page is unmapped
    ! (once no block on it is allocated) or released, so no descriptor is made per call.
    ! Nothing else keeps the memory: unlike `rmmIpcGetMemHandle`, a block freed here goes back to
    ! the pool whoever has it open, so keep it allocated while other processes may open or use
    ! it. `fds` may be NULL when `capacity` is 0: then only `*pages` is written (to learn the
    ! count); otherwise `capacity` must be at least the count. `pages` or `ptr` NULL, `fds` NULL
    ! with a `capacity`, a `capacity` below the count, a pointer rmm did not hand out or took
    ! back: RMM_ERROR_INVALID_ARGUMENT. Memory that is not virtual memory of an expandable
    ! resource (a pool's or the cuda resource's `cudaMalloc` memory, which
    ! `cudaIpcGetMemHandle` shares, managed, pinned host) or whose pages are private:
    ! RMM_ERROR_NOT_SUPPORTED. Nothing is written on failure. Any thread may call it, also
    ! while other threads allocate and free.
    integer(c_int) function rmmIpcGetMemPages(pages, fds, capacity, ptr) &
        bind(c, name="rmmIpcGetMemPages")
      import :: c_int, c_ptr, c_size_t, rmmIpcMemPages_t
      type(rmmIpcMemPages_t), intent(inout) :: pages
      type(c_ptr), value :: fds
      integer(c_size_t), value :: capacity
      type(c_ptr), value :: ptr
    end function rmmIpcGetMemPages

    ! Maps in this process, for the current device, the `count` pages of virtual memory that
    ! process `pid` holds as the file descriptors `fds[0..count]` (numbers in that process, as
    ! `rmmIpcGetMemPages` gives them, or as PyTorch's expandable segments share them), each
    ! `page_size` bytes, one after the other, and writes the first page's address here to
    ! `*ptr`; the memory is usable from the current device (it must be the memory's device or
    ! reach it) until `rmmIpcCloseMemHandle(*ptr)`. Each descriptor is taken with `pidfd_getfd`
    ! (Linux 5.6), which the kernel allows to a process that may ptrace `pid`: the same user,
    ! and under Yama's ptrace scope 1 a descendant of it or any process once it called
    ! `rmmIpcAllowOpeners` (PyTorch's processes do not: run the opener as their child, or set
    ! the scope to 0); the kernel's refusal is RMM_ERROR_INVALID_ARGUMENT with that reason. The
    ! mapping holds its own reference to the memory, which stays valid when `pid` unmaps it or
    ! exits; what the memory holds then is the exporter's business, as with CUDA IPC. `ptr` or
    ! `fds` NULL, `count` 0, a page size that is not a multiple of the device's granularity, a
    ! process that has exited or a descriptor it does not have (closed: its block was freed):
    ! RMM_ERROR_INVALID_ARGUMENT; the driver's refusal: RMM_ERROR_CUDA_ERROR. Nothing is
    ! written on failure. Any number of threads may open and close at once.
    integer(c_int) function rmmIpcOpenMemPages(ptr, pid, page_size, fds, count) &
        bind(c, name="rmmIpcOpenMemPages")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), intent(inout) :: ptr
      integer(c_int), value :: pid
      integer(c_size_t), value :: page_size
      integer(c_int), intent(in) :: fds
      integer(c_size_t), value :: count
    end function rmmIpcOpenMemPages

    ! Initializes rmm: installs, on each device of `options->devices` (or the current device),
    ! the resource `options->allocation_mode` names, replacing that device's resource until
    ! `rmmFinalize`. `options` may be NULL (defaults: device memory, current device) and is only
    ! read. A second call without `rmmFinalize` returns RMM_ERROR_ALREADY_INITIALIZED.
    ! It succeeds or changes nothing: every option and listed device is checked before any
    ! memory is taken (RMM_ERROR_INVALID_ARGUMENT for a device that does not exist or is listed
    ! twice, unknown mode flags, an initial pool size above the maximum), and a device whose
    ! resource cannot be made (RMM_ERROR_OUT_OF_MEMORY for a pool larger than its free memory)
    ! leaves every device with the resource and the free memory it had.
    integer(c_int) function rmmInitialize(options) bind(c, name="rmmInitialize")
      import :: c_int, c_ptr
      type(c_ptr), value :: options
    end function rmmInitialize

    ! Ends what `rmmInitialize` set up: each device gets back the resource it had before (one
    ! that had none yet gets its default resource at its next use).
    ! Live allocations stay valid and can still be freed with `rmmFree`; new allocations are
    ! refused with RMM_ERROR_NOT_INITIALIZED until `rmmInitialize` is called again.
    integer(c_int) function rmmFinalize() bind(c, name="rmmFinalize")
      import :: c_int
    end function rmmFinalize

    ! True when rmm is initialized; then copies the options in force to `options` unless it is
    ! NULL.
    logical(c_bool) function rmmIsInitialized(options) bind(c, name="rmmIsInitialized")
      import :: c_bool, c_ptr
      type(c_ptr), value :: options
    end function rmmIsInitialized

    ! Allocates `size` bytes from the current device's resource for use on any stream, as
    ! `cudaMalloc` does, and writes the address to `*ptr` (NULL for 0 bytes). Give it back with
    ! `rmmCudaFree` (or `rmmFree`). Ready as `rmmAlloc` is (RMM_ERROR_NOT_INITIALIZED unless rmm is
    ! initialized or configured); RMM_ERROR_INVALID_ARGUMENT when `ptr` is NULL; out of memory after
    ! memory that `rmmCudaFree` left waiting for the device came back. The preload library's
    ! `cudaMalloc` and `cuMemAlloc` are this.
    integer(c_int) function rmmCudaMalloc(ptr, size) bind(c, name="rmmCudaMalloc")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), intent(inout) :: ptr
      integer(c_size_t), value :: size
    end function rmmCudaMalloc

    ! Frees `ptr` (from `rmmCudaMalloc`, `rmmAlloc` or `RMM_ALLOC`; NULL: nothing) as `cudaFree`
    ! does: the memory is free once the device has done all the work it was given before the call,
    ! on every stream. By default the call waits for that (it synchronizes the pointer's device).
    ! With `async_free` in the configured spec (`RMM_ALLOC_CONF=async_free/statistics/pool`) it
    ! returns at once and the memory waits instead, for events recorded on the legacy default stream
    ! and on every stream rmm-rs knows the handle of (`rmmStreamRegister`; under the preload
    ! library, every stream the program made): the program then loses `cudaFree` as a point where
    ! the host waits for the device. A pointer that is not live, or a device buffer's, is
    ! RMM_ERROR_INVALID_ARGUMENT with nothing changed (a second free of memory that is still waiting
    ! too). The preload library's `cudaFree` and `cuMemFree` are this.
    integer(c_int) function rmmCudaFree(ptr) bind(c, name="rmmCudaFree")
      import :: c_int, c_ptr
      type(c_ptr), value :: ptr
    end function rmmCudaFree

    ! Allocates `size` bytes for use on `stream` from the current device's resource and writes
    ! the address to `*ptr` (NULL for 0 bytes). The caller owns the memory and returns it with
    ! `rmmFree`. With size 0 a NULL out-pointer is accepted too and nothing happens, as in
    ! legacy RMM. `file` and `line` name the call site (the macro `RMM_ALLOC` fills them in);
    ! `file` may be NULL.
    ! As RMM 0.14: RMM_ERROR_NOT_INITIALIZED before `rmmInitialize` and after `rmmFinalize`,
    ! unless the program configured rmm (`RMM_ALLOC_CONF`, `rmmConfigure`, a per-device resource).
    ! `stream`: as `rmmResourceAllocate`'s (the resources that free at once do not look at it; a
    ! stream-ordered resource needs a live stream); RMM_ERROR_INVALID_ARGUMENT for a stream a
    ! stream-ordered resource cannot take or, for a pool or expandable resource, a stream of
    ! another device.
    integer(c_int) function rmmAlloc(ptr, size, stream, file, line) bind(c, name="rmmAlloc")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), intent(inout) :: ptr
      integer(c_size_t), value :: size
      type(c_ptr), value :: stream
      type(c_ptr), value :: file
      integer(c_int), value :: line  ! unsigned int in C
    end function rmmAlloc

    ! Resizes the allocation at `*ptr` to `new_size` bytes: a new allocation from the same
    ! resource, the contents up to the smaller size copied in the order of `stream`, the old one
    ! freed in that order, and `*ptr` updated. `*ptr` NULL allocates; `new_size` 0 frees and
    ! writes NULL. With `new_size` 0 a NULL out-pointer is accepted too and nothing happens;
    ! `file` may be NULL. On failure `*ptr` and its memory are unchanged.
    ! Before rmm is initialized or configured: RMM_ERROR_NOT_INITIALIZED; `*ptr` not live:
    ! RMM_ERROR_INVALID_ARGUMENT; no room for the new size: RMM_ERROR_OUT_OF_MEMORY, with the old
    ! allocation unchanged. A stream that is not live: RMM_ERROR_INVALID_ARGUMENT, as `rmmAlloc`.
    integer(c_int) function rmmRealloc(ptr, new_size, stream, file, line) &
        bind(c, name="rmmRealloc")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), intent(inout) :: ptr
      integer(c_size_t), value :: new_size
      type(c_ptr), value :: stream
      type(c_ptr), value :: file
      integer(c_int), value :: line  ! unsigned int in C
    end function rmmRealloc

    ! Frees memory rmm allocated (through `rmmAlloc` or `rmmResourceAllocate`), in the order of
    ! `stream`; `file` may be NULL. NULL is a no-op. A pointer rmm did not hand out, or one
    ! already freed, is RMM_ERROR_INVALID_ARGUMENT and nothing is freed. Live pointers can be
    ! freed at any time, but NULL before `rmmInitialize` or after `rmmFinalize` is
    ! RMM_ERROR_NOT_INITIALIZED, as in RMM 0.14 (see `rmmAlloc`). `stream` may be any live stream
    ! (another device's too) or a default stream; NULL always works, also once the stream the
    ! memory was allocated on is destroyed. The memory of a resource that frees at once (cuda,
    ! managed, pinned_host, system, callback, adaptors over them) is freed whatever the handle:
    ! it is not looked at. A stream-ordered resource (pool, arena, binning, fixed_size,
    ! expandable, cuda_async) needs a live stream, as `rmmAlloc` does; one it cannot take is
    ! RMM_ERROR_INVALID_ARGUMENT with nothing freed.
    integer(c_int) function rmmFree(ptr, stream, file, line) bind(c, name="rmmFree")
      import :: c_int, c_ptr
      type(c_ptr), value :: ptr
      type(c_ptr), value :: stream
      type(c_ptr), value :: file
      integer(c_int), value :: line  ! unsigned int in C
    end function rmmFree

    ! Writes the event log (`enable_logging` in `rmmOptions_t`) to the file `filename` as legacy
    ! RMM's CSV: `Event Type,Device ID,Address,Stream,Size (bytes),Free Memory,Total Memory,
    ! Current Allocs,Start,End,Elapsed,Location`, one line per `rmmAlloc`, `rmmRealloc` and
    ! `rmmFree`. RMM_ERROR_IO when the file cannot be written.
    ! Easier from Fortran: rmm_write_log.
    integer(c_int) function rmmWriteLog(filename) bind(c, name="rmmWriteLog")
      import :: c_char, c_int
      character(kind=c_char), dimension(*), intent(in) :: filename
    end function rmmWriteLog

    ! The length in bytes of the event log's CSV text (without a terminating NUL), as
    ! `rmmGetLog` copies it.
    integer(c_size_t) function rmmLogSize() bind(c, name="rmmLogSize")
      import :: c_size_t
    end function rmmLogSize

    ! Copies the event log's CSV text into `buffer`: at most `buffer_size` bytes, as legacy RMM
    ! did, plus a terminating NUL when there is room for it (give `rmmLogSize() + 1` bytes for a
    ! C string).
    ! `buffer` NULL: RMM_ERROR_INVALID_ARGUMENT.
    ! Easier from Fortran: rmm_get_log.
    integer(c_int) function rmmGetLog(buffer, buffer_size) bind(c, name="rmmGetLog")
      import :: c_char, c_int, c_size_t
      character(kind=c_char), dimension(*), intent(inout) :: buffer
      integer(c_size_t), value :: buffer_size
    end function rmmGetLog

    ! Writes the free and total bytes of the current device. Neither pointer may be NULL.
    ! RMM_ERROR_NOT_INITIALIZED when `rmmAlloc` would be.
    integer(c_int) function rmmGetInfo(free_size, total_size, stream) bind(c, name="rmmGetInfo")
      import :: c_int, c_ptr, c_size_t
      integer(c_size_t), intent(inout) :: free_size
      integer(c_size_t), intent(inout) :: total_size
      type(c_ptr), value :: stream
    end function rmmGetInfo

    ! Writes to `*offset` how far `ptr` lies from the start of the device allocation that holds
    ! it. `offset` may not be NULL; `ptr` must be device memory.
    ! `ptr` not inside device memory: RMM_ERROR_INVALID_ARGUMENT; RMM_ERROR_CUDA_ERROR without a
    ! CUDA driver (and without `RMM_SIM_DEVICES`) or when the driver fails.
    integer(c_int) function rmmGetAllocationOffset(offset, ptr, stream) &
        bind(c, name="rmmGetAllocationOffset")
      import :: c_int, c_intptr_t, c_ptr
      integer(c_intptr_t), intent(inout) :: offset  ! ptrdiff_t in C
      type(c_ptr), value :: ptr
      type(c_ptr), value :: stream
    end function rmmGetAllocationOffset

    ! A static description of an error code, its name first ("RMM_ERROR_OUT_OF_MEMORY: out of
    ! memory"); never NULL, never to be freed.
    ! Easier from Fortran: rmm_error_string.
    type(c_ptr) function rmmGetErrorString(errcode) bind(c, name="rmmGetErrorString")
      import :: c_int32_t, c_ptr
      integer(c_int32_t), value :: errcode
    end function rmmGetErrorString

    ! The name of an error code as the enumerator is spelled ("RMM_ERROR_OUT_OF_MEMORY"), or
    ! "RMM_ERROR_UNRECOGNIZED" for a value that is none; never NULL, never to be freed.
    type(c_ptr) function rmmGetErrorName(errcode) bind(c, name="rmmGetErrorName")
      import :: c_int32_t, c_ptr
      integer(c_int32_t), value :: errcode
    end function rmmGetErrorName

    ! The detailed message of the most recent failed rmm call on the calling thread ("" if
    ! none). Owned by rmm and valid until the thread's next failing call; never NULL.
    ! Easier from Fortran: rmm_last_error_message.
    type(c_ptr) function rmmGetLastErrorMessage() bind(c, name="rmmGetLastErrorMessage")
      import :: c_ptr
    end function rmmGetLastErrorMessage

    ! Writes a memory timeline of this process to the HTML file `html_path`: one self-contained
    ! page (no network use) with bytes live and reserved over time, per stream, the peak marked,
    ! fragmentation (1 - live / reserved), the largest allocations alive at the peak and the
    ! segments and free blocks at the peak. `logged` is a stack with a logging adaptor (e.g. the
    ! current device resource): every logging adaptor is flushed, and the log of the outermost
    ! one in `logged` is replayed against a fresh stack built from `spec` (`rmm-replay`'s
    ! resource spec; NULL: `pool`) on the current device, which is followed after every call:
    ! while it runs, the replay holds up to the stack's peak footprint of device memory. A
    ! tracking adaptor in `logged` names the call sites of allocations alive at the peak and
    ! still alive now. `logged` stays the caller's. RMM_ERROR_INVALID_HANDLE: `logged` is NULL
    ! or no handle; RMM_ERROR_INVALID_ARGUMENT: `html_path` is NULL, the stack has no logging
    ! adaptor, a bad spec, a log line that does not parse; RMM_ERROR_IO: the log cannot be read
    ! or the page written; RMM_ERROR_UNKNOWN: the replay failed (its message says why).
    ! Thread-safe; other threads' allocations after the flush are not in the page.
    integer(c_int) function rmmTimelineReportWrite(logged, spec, html_path) &
        bind(c, name="rmmTimelineReportWrite")
      import :: c_char, c_int, c_ptr
      type(c_ptr), value :: logged
      character(kind=c_char), dimension(*), intent(in) :: spec
      character(kind=c_char), dimension(*), intent(in) :: html_path
    end function rmmTimelineReportWrite

    ! Creates a resource that allocates device memory of the current device with `cudaMalloc`
    ! semantics (RMM's `cuda_memory_resource`) and writes its handle to `*resource`, which must
    ! not be NULL. The caller owns the handle and releases it with `rmmResourceDestroy`.
    ! RMM_ERROR_CUDA_ERROR without a CUDA driver (and without `RMM_SIM_DEVICES`) or when the
    ! driver fails.
    integer(c_int) function rmmCudaResourceCreate(resource) bind(c, name="rmmCudaResourceCreate")
      import :: c_int, c_ptr
      type(c_ptr), intent(inout) :: resource
    end function rmmCudaResourceCreate

    ! Creates a managed-memory resource (`cudaMallocManaged`) on the current device. Ownership as
    ! `rmmCudaResourceCreate`.
    ! RMM_ERROR_CUDA_ERROR without a CUDA driver (and without `RMM_SIM_DEVICES`) or when the
    ! driver fails.
    integer(c_int) function rmmManagedResourceCreate(resource) &
        bind(c, name="rmmManagedResourceCreate")
      import :: c_int, c_ptr
      type(c_ptr), intent(inout) :: resource
    end function rmmManagedResourceCreate

    ! Creates a resource of `device` whose memory comes from the caller's functions (RAPIDS'
    ! `callback_memory_resource`): `allocate_fn(bytes, stream, user_data)` returns memory of at
    ! least `bytes`, aligned to 256 bytes, or NULL when out of memory (RMM_ERROR_OUT_OF_MEMORY,
    ! after the device's suballocators have released what they keep free, and a retry);
    ! `deallocate_fn(ptr, bytes, stream, user_data)` gives it back. It serves as the upstream of any
    ! suballocator and under any adaptor. Neither function may be NULL. They run on the thread that
    ! allocates or frees, possibly on several threads at once. They may call CUDA or any other
    ! allocator, or take memory from another rmm-rs resource below this one with
    ! `rmmResourceAllocate` and give it back with `rmmResourceDeallocate` (same resource and size,
    ! also from the deallocate function): memory taken inside a callback is this resource's, not
    ! handed to a caller, so `rmmFree` does not know it. They must not allocate from a resource
    ! stacked over this one. A callback that unwinds (a C++ exception, a Rust panic) or longjmps out
    ! is undefined behaviour. `user_data` may be NULL and must stay valid while the resource lives.
    ! The handle goes to `*resource`; ownership as `rmmCudaResourceCreate`.
    integer(c_int) function rmmCallbackResourceCreate(allocate_fn, deallocate_fn, user_data, &
        device, resource) bind(c, name="rmmCallbackResourceCreate")
      import :: c_funptr, c_int, c_ptr
      type(c_funptr), value :: allocate_fn
      type(c_funptr), value :: deallocate_fn
      type(c_ptr), value :: user_data
      integer(c_int), value :: device
      type(c_ptr), intent(inout) :: resource
    end function rmmCallbackResourceCreate

    ! `rmmCallbackResourceCreate`, and `release_fn(user_data)` is called once when the resource
    ! itself goes: after its last handle, the adaptors and suballocators over it, the per-device
    ! registry's reference and its last allocation are gone (so `user_data` may be freed there).
    ! It is not called when creation fails: `user_data` stays the caller's then. NULL
    ! `release_fn` is `rmmCallbackResourceCreate`. At process exit resources are not torn down,
    ! and `release_fn` may not run.
    ! `allocate_fn` or `deallocate_fn` NULL: RMM_ERROR_INVALID_ARGUMENT.
    integer(c_int) function rmmCallbackResourceCreateWithRelease(allocate_fn, deallocate_fn, &
        release_fn, user_data, device, resource) &
        bind(c, name="rmmCallbackResourceCreateWithRelease")
      import :: c_funptr, c_int, c_ptr
      type(c_funptr), value :: allocate_fn
      type(c_funptr), value :: deallocate_fn
      type(c_funptr), value :: release_fn
      type(c_ptr), value :: user_data
      integer(c_int), value :: device
      type(c_ptr), intent(inout) :: resource
    end function rmmCallbackResourceCreateWithRelease

    ! `rmmCallbackResourceCreateWithRelease` with functions that take the alignment asked of
    ! `rmmResourceAllocateAligned` (256 for every other allocation), as RAPIDS' resources do:
    ! adaptors over the resource pass a caller's alignment through to them. What they return is
    ! handed out as it is (their promise, as in RAPIDS RMM); a suballocator over the resource
    ! refuses a chunk that is not 256-byte aligned.
    integer(c_int) function rmmCallbackResourceCreateAligned(allocate_fn, deallocate_fn, &
        release_fn, user_data, device, resource) bind(c, name="rmmCallbackResourceCreateAligned")
      import :: c_funptr, c_int, c_ptr
      type(c_funptr), value :: allocate_fn
      type(c_funptr), value :: deallocate_fn
      type(c_funptr), value :: release_fn
      type(c_ptr), value :: user_data
      integer(c_int), value :: device
      type(c_ptr), intent(inout) :: resource
    end function rmmCallbackResourceCreateAligned

    ! Creates a stream-ordered resource over a driver memory pool of its own on the current
    ! device (`cudaMallocAsync`): the pool starts with `initial_pool_size` bytes and keeps up to
    ! `release_threshold` bytes reserved across synchronizations (SIZE_MAX: keep everything).
    ! RMM_ERROR_NOT_SUPPORTED where the driver or device has no memory pools. Ownership as
    ! `rmmCudaResourceCreate`.
    integer(c_int) function rmmAsyncResourceCreate(resource, initial_pool_size, release_threshold) &
        bind(c, name="rmmAsyncResourceCreate")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), intent(inout) :: resource
      integer(c_size_t), value :: initial_pool_size
      integer(c_size_t), value :: release_threshold
    end function rmmAsyncResourceCreate

    ! `rmmAsyncResourceCreate` for memory other processes can map: the driver pool's memory can be
    ! exported as `handle_types` (an `RMM_HANDLE_TYPE_*` value, or several with `|`; 0 is
    ! `rmmAsyncResourceCreate`), for `cudaMemPoolExportToShareableHandle` on the pool of
    ! `rmmAsyncResourceGetPool` (RAPIDS' `export_handle_type`). Unknown bits:
    ! RMM_ERROR_INVALID_ARGUMENT; a kind the driver or device cannot export (fabric handles
    ! without a fabric manager, Windows handles on Linux): RMM_ERROR_NOT_SUPPORTED.
    integer(c_int) function rmmAsyncResourceCreateExportable(resource, initial_pool_size, &
        release_threshold, handle_types) bind(c, name="rmmAsyncResourceCreateExportable")
      import :: c_int, c_int32_t, c_ptr, c_size_t
      type(c_ptr), intent(inout) :: resource
      integer(c_size_t), value :: initial_pool_size
      integer(c_size_t), value :: release_threshold
      integer(c_int32_t), value :: handle_types  ! uint32_t in C
    end function rmmAsyncResourceCreateExportable

    ! `rmmAsyncResourceCreateExportable` with `flags`: 0 or `RMM_ASYNC_HW_DECOMPRESS` (the pool's
    ! memory may serve hardware decompression, RAPIDS' `enable_hw_decompress`). Unknown flags:
    ! RMM_ERROR_INVALID_ARGUMENT; hardware decompression where the driver has none (older than
    ! CUDA 12.8, see `rmmDeviceSupports`): RMM_ERROR_NOT_SUPPORTED, nothing made. Ownership as
    ! `rmmCudaResourceCreate`.
    integer(c_int) function rmmAsyncResourceCreateWithFlags(resource, initial_pool_size, &
        release_threshold, handle_types, flags) bind(c, name="rmmAsyncResourceCreateWithFlags")
      import :: c_int, c_int32_t, c_ptr, c_size_t
      type(c_ptr), intent(inout) :: resource
      integer(c_size_t), value :: initial_pool_size
      integer(c_size_t), value :: release_threshold
      integer(c_int32_t), value :: handle_types  ! uint32_t in C
      integer(c_int32_t), value :: flags  ! uint32_t in C
    end function rmmAsyncResourceCreateWithFlags

    ! Creates a stream-ordered resource on the current device over `pool`, a driver memory pool
    ! (`cudaMemPool_t`) the caller made and keeps: `cudaMemPoolCreate`'s, the device's default pool,
    ! another resource's (`rmmAsyncResourceGetPool`). RAPIDS' `cuda_async_view_memory_resource`. The
    ! resource never destroys the pool, which must outlive it and its allocations. NULL, an
    ! `rmmResource_t` given in its place, or (on simulated devices) a value that names no pool or a
    ! destroyed pool: RMM_ERROR_INVALID_ARGUMENT. On a real GPU any other value goes to the driver,
    ! which does not check it: a value that is no live pool of this process is undefined behaviour
    ! there, as in every `cudaMemPool_t` call. A pool imported from another process
    ! (`cudaMemPoolImportFromShareableHandle`), from which the driver allocates nothing (its
    ! allocations are mapped with `cudaMemPoolImportPointer`): RMM_ERROR_NOT_SUPPORTED on simulated
    ! devices, the driver's refusal at the first allocation on a GPU. Ownership of the handle as
    ! `rmmCudaResourceCreate`.
    integer(c_int) function rmmAsyncViewResourceCreate(resource, pool) &
        bind(c, name="rmmAsyncViewResourceCreate")
      import :: c_int, c_ptr
      type(c_ptr), intent(inout) :: resource
      type(c_ptr), value :: pool
    end function rmmAsyncViewResourceCreate

    ! Creates a stream-ordered resource of managed memory on the current device, over the
    ! device's default managed memory pool (`cudaMemGetDefaultMemPool` with
    ! `cudaMemAllocationTypeManaged`, CUDA 13; RAPIDS' `cuda_async_managed_memory_resource`): the
    ! memory is reachable from the host and every device. All such resources of a device share
    ! the driver's pool, which none destroys. RMM_ERROR_NOT_SUPPORTED where the driver is older
    ! than CUDA 13 or the device lacks concurrent managed access (`rmmDeviceSupports` with
    ! `RMM_CAPABILITY_MANAGED_MEMORY_POOLS`). Ownership as `rmmCudaResourceCreate`.
    integer(c_int) function rmmAsyncManagedResourceCreate(resource) &
        bind(c, name="rmmAsyncManagedResourceCreate")
      import :: c_int, c_ptr
      type(c_ptr), intent(inout) :: resource
    end function rmmAsyncManagedResourceCreate

    ! Creates a stream-ordered resource of page-locked host memory: a driver memory pool of its
    ! own located on the host (`cudaMemLocationTypeHost`), reached through the current device,
    ! usable from the host and every device. The pool starts with `initial_pool_size` bytes and
    ! keeps up to `release_threshold` bytes reserved across synchronizations (SIZE_MAX: keep
    ! everything); cross-stream reuse is ordered by the driver, as for `rmmAsyncResourceCreate`.
    ! Its memory does not count against a device's memory. RMM_ERROR_NOT_SUPPORTED where the
    ! driver or device has no host memory pools (`rmmDeviceSupports` with
    ! `RMM_CAPABILITY_HOST_MEMORY_POOLS`). Ownership as `rmmCudaResourceCreate`.
    integer(c_int) function rmmAsyncPinnedHostResourceCreate(resource, initial_pool_size, &
        release_threshold) bind(c, name="rmmAsyncPinnedHostResourceCreate")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), intent(inout) :: resource
      integer(c_size_t), value :: initial_pool_size
      integer(c_size_t), value :: release_threshold
    end function rmmAsyncPinnedHostResourceCreate

    ! Creates a resource of system memory for the current device (RAPIDS'
    ! `system_memory_resource`): pageable host memory from the system allocator, 256-byte
    ! aligned, which the device reaches directly on systems with HMM or ATS. A free waits for the
    ! work on its stream first (the system frees at once). RMM_ERROR_NOT_SUPPORTED where the device
    ! cannot reach pageable memory (`rmmDeviceSupports` with
    ! `RMM_CAPABILITY_PAGEABLE_MEMORY_ACCESS`). Ownership as `rmmCudaResourceCreate`.
    integer(c_int) function rmmSystemResourceCreate(resource) &
        bind(c, name="rmmSystemResourceCreate")
      import :: c_int, c_ptr
      type(c_ptr), intent(inout) :: resource
    end function rmmSystemResourceCreate

    ! `rmmSystemResourceCreate` that keeps `headroom` bytes of the current device free (RAPIDS'
    ! `sam_headroom_memory_resource`): of each allocation, the driver is told to prefer the device
    ! for as much as leaves `headroom` bytes of it free (whole 256-byte units), and the host for
    ! the rest (`cudaMemAdvise` with `cudaMemAdviseSetPreferredLocation`). A headroom above the
    ! device's memory: RMM_ERROR_INVALID_ARGUMENT; a device without pageable memory access:
    ! RMM_ERROR_NOT_SUPPORTED. Ownership as `rmmCudaResourceCreate`.
    integer(c_int) function rmmSamHeadroomResourceCreate(resource, headroom) &
        bind(c, name="rmmSamHeadroomResourceCreate")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), intent(inout) :: resource
      integer(c_size_t), value :: headroom
    end function rmmSamHeadroomResourceCreate

    ! Writes 1 to `*supported` when `device` (and the driver) offers `capability` (an
    ! `RMM_CAPABILITY_*` value), 0 when not: what the resources that need it answer
    ! RMM_ERROR_NOT_SUPPORTED to. An unknown capability, a device that does not exist or a NULL
    ! `supported`: RMM_ERROR_INVALID_ARGUMENT.
    integer(c_int) function rmmDeviceSupports(supported, capability, device) &
        bind(c, name="rmmDeviceSupports")
      import :: c_int, c_int32_t, c_ptr
      type(c_ptr), value :: supported
      integer(c_int32_t), value :: capability  ! uint32_t in C
      integer(c_int), value :: device
    end function rmmDeviceSupports

    ! Writes the driver memory pool of a cuda_async resource (a `cudaMemPool_t`) to `*pool`, for
    ! `cudaMemPoolSetAttribute` and the like (RAPIDS' `pool_handle()`); also of the resources over
    ! a driver pool: cuda_async_view (the caller's pool), cuda_async_managed (the device's default
    ! managed pool) and cuda_async_pinned_host. The resource keeps owning its own pool (the
    ! others stay their owners'): do not destroy it. Other resources (adaptors over one included):
    ! RMM_ERROR_NOT_SUPPORTED. On simulated devices the value is opaque.
    integer(c_int) function rmmAsyncResourceGetPool(resource, pool) &
        bind(c, name="rmmAsyncResourceGetPool")
      import :: c_int, c_ptr
      type(c_ptr), value :: resource
      type(c_ptr), intent(inout) :: pool
    end function rmmAsyncResourceGetPool

    ! Creates a stream-ordered resource on the current device over the CUDA virtual-memory API (as
    ! PyTorch's expandable segments): it reserves address space for `maximum_size` bytes (0: the
    ! device's memory) and maps physical memory into it as it needs it, in pages of 1/4096 of that
    ! maximum, from the device's granularity (2 MiB) up to 20 MiB (the page size of
    ! `rmmExpandableResourceCreateWithOptions`); blocks below 256 KiB come from pages of the
    ! granularity of their own, apart from larger blocks, within the same maximum. A chunk grows in
    ! place at its end, by just what a request needs beyond the chunk's free end. Whole free pages
    ! anywhere in a chunk, also between blocks in use, are unmapped once the streams that freed them
    ! have passed that point (never waiting for them on the allocation path) and their physical
    ! memory is kept: a request that no mapped range fits is served by mapping those pages where it
    ! needs them (stitching) before any new physical memory is created. Kept and free pages go back
    ! to the device on `rmmResourceRelease`, or when the device runs out of memory. Cross-stream
    ! reuse as `rmmPoolResourceCreate`. RMM_ERROR_NOT_SUPPORTED where the driver has no
    ! virtual-memory API. Ownership as `rmmCudaResourceCreate`.
    integer(c_int) function rmmExpandableResourceCreate(resource, maximum_size) &
        bind(c, name="rmmExpandableResourceCreate")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), intent(inout) :: resource
      integer(c_size_t), value :: maximum_size
    end function rmmExpandableResourceCreate

    ! `rmmExpandableResourceCreate` with every option (see `rmmExpandableOptions_t`): an initial
    ! size, a release threshold, the page size and peer devices. NULL `options` or a page size
    ! that is not a multiple of the device's granularity: RMM_ERROR_INVALID_ARGUMENT.
    integer(c_int) function rmmExpandableResourceCreateWithOptions(resource, options) &
        bind(c, name="rmmExpandableResourceCreateWithOptions")
      import :: c_int, c_ptr
      type(c_ptr), intent(inout) :: resource
      type(c_ptr), value :: options
    end function rmmExpandableResourceCreateWithOptions

    ! Creates the resource stack the spec `spec` names on `device` and writes the handle of its
    ! outermost layer to `*resource`, e.g. `statistics/pool:initial=1GiB/cuda`: layers from the
    ! outermost to the device, each `name` or `name:key=value,...`; every resource and adaptor
    ! of this header that needs no function pointer, with the defaults of its create function.
    ! The grammar: docs/src/configuration.md (`report` applies to default stacks only). The
    ! handle is like one from the create functions: the caller owns it and releases it with
    ! `rmmResourceDestroy`, and the adaptor functions work on it when its outermost layer is
    ! that adaptor. `spec` and `resource` must not be NULL. A NULL argument, a spec that does
    ! not parse (the message quotes the offending text and gives its column) or a device that
    ! does not exist is RMM_ERROR_INVALID_ARGUMENT; a layer that cannot be built answers as its
    ! create function would.
    integer(c_int) function rmmResourceCreateFromSpec(spec, device, resource) &
        bind(c, name="rmmResourceCreateFromSpec")
      import :: c_char, c_int, c_ptr
      character(kind=c_char), dimension(*), intent(in) :: spec
      integer(c_int), value :: device
      type(c_ptr), intent(inout) :: resource
    end function rmmResourceCreateFromSpec

    ! Creates a resource of page-locked host memory (`cudaMallocHost`), usable from every device.
    ! Ownership as `rmmCudaResourceCreate`.
    ! RMM_ERROR_CUDA_ERROR without a CUDA driver (and without `RMM_SIM_DEVICES`) or when the
    ! driver fails.
    integer(c_int) function rmmPinnedHostResourceCreate(resource) &
        bind(c, name="rmmPinnedHostResourceCreate")
      import :: c_int, c_ptr
      type(c_ptr), intent(inout) :: resource
    end function rmmPinnedHostResourceCreate

    ! Releases the caller's handle. The resource itself lives on while anything still uses it:
    ! other handles, adaptors, the per-device registry, or allocations not yet freed (they stay
    ! valid and `rmmFree` returns them). NULL is a no-op; a destroyed handle is
    ! RMM_ERROR_INVALID_HANDLE.
    integer(c_int) function rmmResourceDestroy(resource) bind(c, name="rmmResourceDestroy")
      import :: c_int, c_ptr
      type(c_ptr), value :: resource
    end function rmmResourceDestroy

    ! Allocates `bytes` for use on `stream` from `resource` and writes the address to `*ptr`
    ! (NULL for 0 bytes). The caller owns the memory and returns it with `rmmResourceDeallocate`
    ! on the same resource, or with `rmmFree`.
    ! `stream`: a resource that frees at once (cuda, managed, pinned_host, system, callback, and
    ! adaptors over them) does not look at it, so any handle goes, even one that names no live
    ! stream; a stream-ordered resource (pool, arena, binning, fixed_size, expandable,
    ! cuda_async) orders the memory on it, so it must be live, and a handle rmm-rs does not know
    ! is asked about (see `rmmStreamRegister` for what each stream costs, and
    ! `registered_streams`, which refuses such handles without asking the driver).
    ! RMM_ERROR_OUT_OF_MEMORY when the resource cannot give `bytes` (the message says what it
    ! holds and why); RMM_ERROR_INVALID_ARGUMENT for a stream that a stream-ordered resource
    ! cannot take (one that names no live stream on simulated devices; one rmm-rs does not know
    ! with `registered_streams`) or, for a pool or expandable resource, a stream of another
    ! device.
    integer(c_int) function rmmResourceAllocate(resource, ptr, bytes, stream) &
        bind(c, name="rmmResourceAllocate")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: resource
      type(c_ptr), intent(inout) :: ptr
      integer(c_size_t), value :: bytes
      type(c_ptr), value :: stream
    end function rmmResourceAllocate

    ! Returns `ptr`, allocated from `resource` with size `bytes`, in the order of `stream`. NULL
    ! is a no-op. A pointer from another resource, of another size, already freed or never
    ! allocated is RMM_ERROR_INVALID_ARGUMENT, and nothing is freed. `stream`: as `rmmFree`'s.
    integer(c_int) function rmmResourceDeallocate(resource, ptr, bytes, stream) &
        bind(c, name="rmmResourceDeallocate")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: resource
      type(c_ptr), value :: ptr
      integer(c_size_t), value :: bytes
      type(c_ptr), value :: stream
    end function rmmResourceDeallocate

    ! `rmmResourceAllocate` at a multiple of `alignment`, a power of two (RAPIDS'
    ! `allocate(stream, bytes, alignment)`). Up to 256 every resource gives it. Larger: pools,
    ! expandable resources and aligned adaptors place such blocks, adaptors pass the alignment to
    ! their upstream, a callback resource made with `rmmCallbackResourceCreateAligned` passes it
    ! to its function, and any other resource refuses it with RMM_ERROR_NOT_SUPPORTED. An
    ! alignment that is not a power of two: RMM_ERROR_INVALID_ARGUMENT. Free the memory with
    ! `rmmResourceDeallocateAligned` and the same alignment (or `rmmFree`).
    integer(c_int) function rmmResourceAllocateAligned(resource, ptr, bytes, alignment, stream) &
        bind(c, name="rmmResourceAllocateAligned")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: resource
      type(c_ptr), intent(inout) :: ptr
      integer(c_size_t), value :: bytes
      integer(c_size_t), value :: alignment
      type(c_ptr), value :: stream
    end function rmmResourceAllocateAligned

    ! `rmmResourceDeallocate` of memory from `rmmResourceAllocateAligned`, with its alignment,
    ! which goes on to the resources as the allocation's did.
    integer(c_int) function rmmResourceDeallocateAligned(resource, ptr, bytes, alignment, stream) &
        bind(c, name="rmmResourceDeallocateAligned")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: resource
      type(c_ptr), value :: ptr
      integer(c_size_t), value :: bytes
      integer(c_size_t), value :: alignment
      type(c_ptr), value :: stream
    end function rmmResourceDeallocateAligned

    ! Writes the device whose memory `resource` hands out to `*device`.
    ! Errors: only the general ones (RMM_ERROR_INVALID_HANDLE for `resource`,
    ! RMM_ERROR_INVALID_ARGUMENT when `device` is NULL).
    integer(c_int) function rmmResourceGetDevice(resource, device) &
        bind(c, name="rmmResourceGetDevice")
      import :: c_int, c_ptr
      type(c_ptr), value :: resource
      integer(c_int), intent(inout) :: device
    end function rmmResourceGetDevice

    ! Writes the kind of `resource` ("cuda", "managed", "cuda_async", "pinned_host", "pool",
    ! "arena", "binning", "fixed_size", or an adaptor's: "statistics", "logging", "limiting",
    ! "tracking", "failure_callback", "aligned", "prefetch") to `*name`: a static string, never
    ! to be freed.
    ! Errors: only the general ones (RMM_ERROR_INVALID_HANDLE for `resource`,
    ! RMM_ERROR_INVALID_ARGUMENT when `name` is NULL).
    ! Easier from Fortran: rmm_resource_get_name.
    integer(c_int) function rmmResourceGetName(resource, name) bind(c, name="rmmResourceGetName")
      import :: c_int, c_ptr
      type(c_ptr), value :: resource
      type(c_ptr), intent(inout) :: name
    end function rmmResourceGetName

    ! Puts `resource` to sleep: every expandable resource it takes memory from (itself, or the
    ! ones under a pool, arena, binning resource or adaptor) gives back all its device memory,
    ! the memory of live blocks included. First the device is synchronized and the stack releases
    ! what it keeps free; then each page holding blocks is copied to pinned host memory on
    ! `stream` (`RMM_SLEEP_KEEP`) or dropped (`RMM_SLEEP_DISCARD`), and unmapped. Every pointer
    ! keeps its value and is valid again after `rmmResourceWake`; meanwhile frees are taken and
    ! done, allocations from the resource fail with RMM_ERROR_INVALID_ARGUMENT, and the resource
    ! holds no device memory. Tags: a resource per tag (sleep one, not the others).
    ! Errors: a resource over no expandable resource is RMM_ERROR_NOT_SUPPORTED; one already
    ! asleep or an unknown mode RMM_ERROR_INVALID_ARGUMENT; an expandable resource with blocks
    ! exported to other processes RMM_ERROR_NOT_SUPPORTED; no pinned host memory for the copy
    ! RMM_ERROR_OUT_OF_MEMORY. On any error nothing sleeps.
    integer(c_int) function rmmResourceSleep(resource, mode, stream) &
        bind(c, name="rmmResourceSleep")
      import :: c_int, c_int32_t, c_ptr
      type(c_ptr), value :: resource
      integer(c_int32_t), value :: mode  ! uint32_t in C
      type(c_ptr), value :: stream
    end function rmmResourceSleep

    ! Wakes `resource`: device memory is taken again for every page that slept, mapped at the same
    ! addresses, and the contents kept at sleep are copied back on `stream`, which is synchronized
    ! before the call returns. The pinned host memory of the copy is kept for the device's next
    ! keep-mode sleep, which then costs the copies alone (pinning 10 GiB took 5.7 s on an H100
    ! host); `rmmDeviceRelease` gives it back. When the device cannot give the memory (another
    ! process holds it), RMM_ERROR_OUT_OF_MEMORY and the resource stays asleep with its host copy
    ! intact: call again later. A resource that is awake: RMM_ERROR_INVALID_ARGUMENT.
    integer(c_int) function rmmResourceWake(resource, stream) bind(c, name="rmmResourceWake")
      import :: c_int, c_ptr
      type(c_ptr), value :: resource
      type(c_ptr), value :: stream
    end function rmmResourceWake

    ! Writes 1 to `*asleep` while `resource` (or an expandable resource under it) sleeps, else 0.
    ! A resource over no expandable resource: RMM_ERROR_NOT_SUPPORTED.
    integer(c_int) function rmmResourceIsAsleep(resource, asleep) &
        bind(c, name="rmmResourceIsAsleep")
      import :: c_int, c_ptr
      type(c_ptr), value :: resource
      integer(c_int), intent(inout) :: asleep
    end function rmmResourceIsAsleep

    ! `rmmResourceSleep` on `device`'s current resource (`rmmSetPerDeviceResource`, or what
    ! `RMM_ALLOC_CONF` made, e.g. `expandable`): the way for a program under the preload library,
    ! or a library it loads, to reach sleep without a handle (`dlsym(RTLD_DEFAULT,
    ! "rmmDeviceSleep")`).
    integer(c_int) function rmmDeviceSleep(device, mode, stream) bind(c, name="rmmDeviceSleep")
      import :: c_int, c_int32_t, c_ptr
      integer(c_int), value :: device
      integer(c_int32_t), value :: mode  ! uint32_t in C
      type(c_ptr), value :: stream
    end function rmmDeviceSleep

    ! `rmmResourceWake` on `device`'s current resource.
    integer(c_int) function rmmDeviceWake(device, stream) bind(c, name="rmmDeviceWake")
      import :: c_int, c_ptr
      integer(c_int), value :: device
      type(c_ptr), value :: stream
    end function rmmDeviceWake

    ! Describes `resource` and its upstream resources as JSON: one object per resource, its upstream
    ! nested under "upstream". Pools, arenas and fixed-size resources list their upstream chunks
    ! with owning stream and every free and used block, and give the figures for out-of-memory
    ! diagnosis: "reserved_bytes" and "used_bytes" with their peaks ("peak_reserved_bytes",
    ! "peak_used_bytes"), "free_bytes", "largest_free_block", "fragmentation" (1 - used / reserved)
    ! and "free_space_fragmentation" (1 - largest free block / free bytes); the expandable resource
    ! also shows its reservation, mapped ranges and the pages it keeps unmapped. Adaptors add their
    ! own figures (statistics counts, limit, outstanding allocations). The text and a NUL are copied
    ! into `buffer` of `size` bytes; its length goes to `*length` unless NULL. A NULL `buffer` only
    ! asks for the length; a buffer too small is RMM_ERROR_INVALID_ARGUMENT. Easier from Fortran:
    ! rmm_resource_get_snapshot.
    integer(c_int) function rmmResourceGetSnapshot(resource, buffer, size, length) &
        bind(c, name="rmmResourceGetSnapshot")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: resource
      type(c_ptr), value :: buffer
      integer(c_size_t), value :: size
      type(c_ptr), value :: length
    end function rmmResourceGetSnapshot

    ! Writes the snapshot of `resource` (see `rmmResourceGetSnapshot`) to the file `path`.
    ! RMM_ERROR_IO when it cannot be written.
    ! Easier from Fortran: rmm_resource_write_snapshot.
    integer(c_int) function rmmResourceWriteSnapshot(resource, path) &
        bind(c, name="rmmResourceWriteSnapshot")
      import :: c_char, c_int, c_ptr
      type(c_ptr), value :: resource
      character(kind=c_char), dimension(*), intent(in) :: path
    end function rmmResourceWriteSnapshot

    ! Writes what `resource` (or the resource beneath an adaptor stack) holds from the device and
    ! hands out, with their peaks since it was made, its largest free block and its
    ! fragmentation, to `*footprint`. Peaks of bytes in use are exact for a resource used on one
    ! stream; with several streams they are the sum of each stream's peak (an upper bound).
    ! RMM_ERROR_NOT_SUPPORTED for resources that do not know (cuda_async: the driver's pool).
    integer(c_int) function rmmResourceGetFootprint(resource, footprint) &
        bind(c, name="rmmResourceGetFootprint")
      import :: c_int, c_ptr, rmmFootprint_t
      type(c_ptr), value :: resource
      type(rmmFootprint_t), intent(inout) :: footprint
    end function rmmResourceGetFootprint

    ! Creates a stream on the current device (as `cudaStreamCreate`: it synchronizes with the
    ! legacy default stream) and writes it to `*stream`. The caller destroys it with
    ! `rmmStreamDestroy`. rmm-rs recognizes it by its handle alone (see `rmmStreamRegister`).
    ! RMM_ERROR_CUDA_ERROR without a CUDA driver (and without `RMM_SIM_DEVICES`) or when the
    ! driver fails.
    integer(c_int) function rmmStreamCreate(stream) bind(c, name="rmmStreamCreate")
      import :: c_int, c_ptr
      type(c_ptr), intent(inout) :: stream
    end function rmmStreamCreate

    ! `rmmStreamCreate` with `flags`: `RMM_STREAM_DEFAULT` (0, that stream) or
    ! `RMM_STREAM_NON_BLOCKING` (1, the value of `cudaStreamNonBlocking`): a stream that does not
    ! synchronize with the legacy default stream. Other flags, or `stream` NULL:
    ! RMM_ERROR_INVALID_ARGUMENT; RMM_ERROR_CUDA_ERROR without a CUDA driver (and without
    ! `RMM_SIM_DEVICES`) or when the driver fails.
    integer(c_int) function rmmStreamCreateWithFlags(stream, flags) &
        bind(c, name="rmmStreamCreateWithFlags")
      import :: c_int, c_ptr
      type(c_ptr), intent(inout) :: stream
      integer(c_int), value :: flags  ! unsigned int in C
    end function rmmStreamCreateWithFlags

    ! Destroys a stream made by `rmmStreamCreate`, or by the program (`cudaStreamCreate`), after
    ! what `rmmStreamUnregister` does. The default streams cannot be destroyed. As with
    ! `cudaStreamDestroy`, the stream must be live: rmm-rs knows its own streams' handles until
    ! they are destroyed, and asks the driver about any other.
    ! A default stream: RMM_ERROR_INVALID_ARGUMENT; so is, with `registered_streams` configured,
    ! a handle rmm-rs does not know (one destroyed already, say), without asking the driver.
    integer(c_int) function rmmStreamDestroy(stream) bind(c, name="rmmStreamDestroy")
      import :: c_int, c_ptr
      type(c_ptr), value :: stream
    end function rmmStreamDestroy

    ! Tells rmm-rs that the program's live `stream` (from `cudaStreamCreate`, say) will be
    ! destroyed only after `rmmStreamUnregister` (or through `rmmStreamDestroy`). rmm-rs then
    ! recognizes it by its handle alone, so allocations on it make no driver call, as on the
    ! default streams. Registering twice is harmless; the default streams need no registration
    ! and are refused. The preload library registers every stream the program creates.
    ! What rmm-rs does with a handle it does not know (not a default stream, not made by
    ! `rmmStreamCreate`, not registered): the resources that free at once (cuda, managed,
    ! pinned_host, system, callback, and the adaptors over them) never look at the stream, so any
    ! value goes, even one that names no stream. The stream-ordered resources (pool, arena,
    ! binning, fixed_size, expandable, cuda_async), which order memory on the stream, ask the
    ! driver for its id (`cuStreamGetId`, about 30 ns, at each allocation), because a destroyed
    ! stream's handle may be handed to a new stream while the old one's work still runs (cuda_async
    ! hands it to the driver's own `cuMemAllocFromPoolAsync`): such a handle must name a live
    ! stream, as for `cudaMallocAsync` (a CUDA driver asked about a destroyed or made-up handle may
    ! crash). With `registered_streams` configured (`rmmConfigure`,
    ! RMM_ALLOC_CONF) they refuse it instead, with RMM_ERROR_INVALID_ARGUMENT, and rmm-rs never
    ! hands the driver a handle it does not know.
    ! The driver is asked about `stream` here, which must be live. A default stream:
    ! RMM_ERROR_INVALID_ARGUMENT (a handle that names no stream: the driver's answer,
    ! RMM_ERROR_INVALID_ARGUMENT on simulated devices).
    integer(c_int) function rmmStreamRegister(stream) bind(c, name="rmmStreamRegister")
      import :: c_int, c_ptr
      type(c_ptr), value :: stream
    end function rmmStreamRegister

    ! Call with `stream` still alive, right before destroying it with `cudaStreamDestroy`:
    ! rmm-rs records on it what orders the reuse of memory freed there, stops using its handle,
    ! and no longer trusts it (a later stream may get the same handle). Any stream rmm-rs was
    ! used with may be unregistered, registered or not (the driver is asked for the id of one
    ! that was not registered, so it must be live); `rmmStreamDestroy` does this itself.
    ! The default streams are refused.
    ! A default stream: RMM_ERROR_INVALID_ARGUMENT; so is, with `registered_streams` configured,
    ! a handle rmm-rs does not know (see `rmmStreamRegister`), without asking the driver.
    integer(c_int) function rmmStreamUnregister(stream) bind(c, name="rmmStreamUnregister")
      import :: c_int, c_ptr
      type(c_ptr), value :: stream
    end function rmmStreamUnregister

    ! Waits until all work enqueued on `stream` has finished. `stream` goes to the driver as it
    ! is, as with `cudaStreamSynchronize`, so it must be live, except that with
    ! `registered_streams` configured a handle rmm-rs does not know (see `rmmStreamRegister`) is
    ! RMM_ERROR_INVALID_ARGUMENT without asking the driver.
    ! A handle that is not a live stream: the driver's answer (RMM_ERROR_INVALID_ARGUMENT on
    ! simulated devices); a failure on the device: RMM_ERROR_CUDA_ERROR.
    integer(c_int) function rmmStreamSynchronize(stream) bind(c, name="rmmStreamSynchronize")
      import :: c_int, c_ptr
      type(c_ptr), value :: stream
    end function rmmStreamSynchronize

    ! Copies `bytes` from `src` to `dst` in the order of `stream`; either side may be device or
    ! host memory (unified addressing, as `cudaMemcpyAsync` with `cudaMemcpyDefault`). Copies
    ! from or to pageable host memory may return only when done; call `rmmStreamSynchronize`
    ! before using the destination on the host. NULL pointers are RMM_ERROR_INVALID_ARGUMENT
    ! unless `bytes` is 0. `stream`: as `rmmStreamSynchronize`'s.
    integer(c_int) function rmmMemcpyAsync(dst, src, bytes, stream) bind(c, name="rmmMemcpyAsync")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: dst
      type(c_ptr), value :: src
      integer(c_size_t), value :: bytes
      type(c_ptr), value :: stream
    end function rmmMemcpyAsync

    ! Creates a pool over `upstream` that reserves `initial_size` bytes up front and grows
    ! (geometrically, backing off when upstream refuses) up to `maximum_size` bytes (0: no
    ! limit). Allocations are stream-ordered: a block freed on one stream is reused on another
    ! only after an event orders the two, without host synchronization. The pool keeps its own
    ! reference to `upstream`; the caller owns the new handle (`rmmResourceDestroy`).
    ! `initial_size` above a `maximum_size` that is not 0: RMM_ERROR_INVALID_ARGUMENT; the initial
    ! size cannot be had from `upstream` (or lies past the address space):
    ! RMM_ERROR_OUT_OF_MEMORY.
    integer(c_int) function rmmPoolResourceCreate(resource, upstream, initial_size, maximum_size) &
        bind(c, name="rmmPoolResourceCreate")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), intent(inout) :: resource
      type(c_ptr), value :: upstream
      integer(c_size_t), value :: initial_size
      integer(c_size_t), value :: maximum_size
    end function rmmPoolResourceCreate

    ! Writes the bytes a pool-like resource (pool, arena, fixed-size) holds from its upstream to
    ! `*size`. Other resources: RMM_ERROR_NOT_SUPPORTED.
    integer(c_int) function rmmPoolResourceGetSize(resource, size) &
        bind(c, name="rmmPoolResourceGetSize")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: resource
      integer(c_size_t), intent(inout) :: size
    end function rmmPoolResourceGetSize

    ! Writes the bytes a pool-like resource (or a stack over one) holds from its upstream but has
    ! free to `*size`: what it can hand out without asking the device. Other resources:
    ! RMM_ERROR_NOT_SUPPORTED.
    integer(c_int) function rmmPoolResourceGetFree(resource, size) &
        bind(c, name="rmmPoolResourceGetFree")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: resource
      integer(c_size_t), intent(inout) :: size
    end function rmmPoolResourceGetFree

    ! Gives memory that `resource` holds but does not use back to its upstream (a pool's wholly
    ! free chunks, after synchronizing the device), and writes the bytes released to
    ! `*released` unless it is NULL. Resources that hold nothing release 0 bytes.
    ! A failure while the device is synchronized or memory given back: RMM_ERROR_CUDA_ERROR.
    integer(c_int) function rmmResourceRelease(resource, released) &
        bind(c, name="rmmResourceRelease")
      import :: c_int, c_ptr
      type(c_ptr), value :: resource
      type(c_ptr), value :: released
    end function rmmResourceRelease

    ! From now on, while `resource` holds more than `threshold` bytes from its upstream, a free
    ! that leaves one of its chunks wholly free gives that chunk back upstream, once the stream of
    ! the free has passed it (never waiting for it), as CUDA's memory pools do above their release
    ! threshold; the initial size stays. `SIZE_MAX` (the default) keeps everything until
    ! `rmmResourceRelease`, `rmmDeviceRelease` or out of memory; 0 gives back every chunk as it
    ! empties. For a pool, arena, fixed-size resource and each pool bin of a binning resource, and
    ! through the adaptors over them. Over `cuda` each chunk given back is a `cudaFree`, which
    ! waits for the device: a threshold trades that for memory. The expandable resource's
    ! threshold is set when it is made (`rmmExpandableResourceCreateWithOptions`):
    ! RMM_ERROR_NOT_SUPPORTED, as for resources that keep no pool.
    integer(c_int) function rmmResourceSetReleaseThreshold(resource, threshold) &
        bind(c, name="rmmResourceSetReleaseThreshold")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: resource
      integer(c_size_t), value :: threshold
    end function rmmResourceSetReleaseThreshold

    ! Creates an arena over `upstream`: a global arena that starts with `arena_size` bytes (0:
    ! grows on demand) and per-thread and per-stream arenas that take 4 MiB superblocks from it,
    ! so threads allocating small blocks do not contend. Requests over 256 KiB use the global
    ! arena. Ownership as `rmmPoolResourceCreate`.
    ! The arena's size cannot be had from `upstream` (or lies past the address space):
    ! RMM_ERROR_OUT_OF_MEMORY.
    integer(c_int) function rmmArenaResourceCreate(resource, upstream, arena_size) &
        bind(c, name="rmmArenaResourceCreate")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), intent(inout) :: resource
      type(c_ptr), value :: upstream
      integer(c_size_t), value :: arena_size
    end function rmmArenaResourceCreate

    ! Creates a binning resource over `upstream` with fixed-size bins of 2^min_size_exponent ..
    ! 2^max_size_exponent bytes (exponents 0 to 40; min > max makes no bins). A request goes to
    ! the smallest bin that holds it, larger ones to `upstream`. Ownership as
    ! `rmmPoolResourceCreate`.
    ! Exponents outside 0 to 40: RMM_ERROR_INVALID_ARGUMENT.
    integer(c_int) function rmmBinningResourceCreate(resource, upstream, min_size_exponent, &
        max_size_exponent) bind(c, name="rmmBinningResourceCreate")
      import :: c_int, c_int8_t, c_ptr
      type(c_ptr), intent(inout) :: resource
      type(c_ptr), value :: upstream
      integer(c_int8_t), value :: min_size_exponent
      integer(c_int8_t), value :: max_size_exponent
    end function rmmBinningResourceCreate

    ! Adds (or replaces) the bin for requests up to `allocation_size` bytes in a binning
    ! resource: `bin` (the binning resource keeps its own reference) or, when `bin` is NULL, a
    ! new fixed-size resource of that size over the binning resource's upstream.
    ! RMM_ERROR_INVALID_ARGUMENT when `bin` is of another device, or takes its memory from the
    ! binning resource itself (directly or through other resources and bins).
    integer(c_int) function rmmBinningResourceAddBin(resource, allocation_size, bin) &
        bind(c, name="rmmBinningResourceAddBin")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: resource
      integer(c_size_t), value :: allocation_size
      type(c_ptr), value :: bin
    end function rmmBinningResourceAddBin

    ! Creates a resource of fixed-size blocks over `upstream`: every request up to `block_size`
    ! bytes (rounded up to 256) takes one block; larger ones are RMM_ERROR_INVALID_ARGUMENT.
    ! `blocks_to_preallocate` blocks are reserved up front and in each later chunk (0: none up
    ! front, 128 per chunk). Ownership as `rmmPoolResourceCreate`.
    integer(c_int) function rmmFixedSizeResourceCreate(resource, upstream, block_size, &
        blocks_to_preallocate) bind(c, name="rmmFixedSizeResourceCreate")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), intent(inout) :: resource
      type(c_ptr), value :: upstream
      integer(c_size_t), value :: block_size
      integer(c_size_t), value :: blocks_to_preallocate
    end function rmmFixedSizeResourceCreate

    ! Writes the version of the loaded library to `*major`, `*minor` and `*patch` (compare with
    ! `RMM_VERSION_MAJOR` ... to find a header and library that do not match). None may be NULL.
    ! Needs no initialization and is safe from any thread.
    ! A NULL pointer: RMM_ERROR_INVALID_ARGUMENT.
    integer(c_int) function rmmGetVersion(major, minor, patch) bind(c, name="rmmGetVersion")
      import :: c_int
      integer(c_int), intent(inout) :: major
      integer(c_int), intent(inout) :: minor
      integer(c_int), intent(inout) :: patch
    end function rmmGetVersion
  end interface
  ! END GENERATED BINDINGS

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

  ! BEGIN GENERATED INTERFACES (scripts/generate_bindings.py; do not edit by hand)
  ! call rmm_allocate(array, n1 [, n2 [, n3]] [, stream] [, status] [, resource])
  !   Points `array`, a pointer array of real(c_float), real(c_double), integer(c_int32_t) or
  !   integer(c_int64_t) of rank 1 to 3, at new rmm memory of extents n1, n2, n3 (lower bounds
  !   1; all of kind c_int32_t or all of kind c_int64_t). The memory comes from `resource`
  !   (rmmResourceAllocate) when it is given, otherwise from the current device's resource
  !   (rmmAlloc: after rmmInitialize, as legacy RMM), for use on `stream` (default: the default
  !   stream, c_null_ptr). Zero or negative extents give a zero-size array, as ALLOCATE does,
  !   without device memory.
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

  ! BEGIN GENERATED PROCEDURES (scripts/generate_bindings.py; do not edit by hand)
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
