! Adaptors from Fortran: statistics (counts after allocations, nested scopes), limiting,
! tracking (records with the call site, the report), logging (the CSV file and its timeline
! page), a failure callback written in Fortran (c_funloc) that spills memory and retries,
! aligned, prefetch; sinks written in Fortran for a logging adaptor's lines and rmm-rs's
! diagnostics, and a tracked allocation's stack.
module adaptor_callbacks
  use, intrinsic :: iso_c_binding
  use rmm
  implicit none
  private
  public :: spill_state, spill_on_oom, sink_counts, count_line, count_release, count_message

  ! What the failure callback gets as `arg` (c_loc of a target of this type).
  type, bind(c) :: spill_state
    integer(c_int) :: calls = 0
    integer(c_size_t) :: last_bytes = 0
    ! A block to give back on the first call, from `owner` with size `spill_bytes`.
    type(c_ptr) :: spill = c_null_ptr
    type(c_ptr) :: owner = c_null_ptr
    integer(c_size_t) :: spill_bytes = 0
  end type spill_state

  ! What the sinks below count (c_loc of a target of this type as user_data).
  type, bind(c) :: sink_counts
    integer(c_int) :: lines = 0
    integer(c_int) :: released = 0
    integer(c_int) :: messages = 0
    integer(c_int) :: last_level = -1
  end type sink_counts

contains

  ! An rmmLogLineCallback_t: counts the lines of a logging adaptor.
  function count_line(line, length, user_data) bind(c) result(status)
    character(kind=c_char), dimension(*), intent(in) :: line
    integer(c_size_t), value :: length
    type(c_ptr), value :: user_data
    integer(c_int) :: status
    type(sink_counts), pointer :: counts
    call c_f_pointer(user_data, counts)
    if (length > 0 .and. line(1) /= c_null_char) counts%lines = counts%lines + 1
    status = 0
  end function count_line

  ! An rmmReleaseCallback_t.
  subroutine count_release(user_data) bind(c)
    type(c_ptr), value :: user_data
    type(sink_counts), pointer :: counts
    call c_f_pointer(user_data, counts)
    counts%released = counts%released + 1
  end subroutine count_release

  ! An rmmLogCallback_t: counts rmm-rs's diagnostics.
  subroutine count_message(level, message, length, user_data) bind(c)
    integer(c_int), value :: level
    character(kind=c_char), dimension(*), intent(in) :: message
    integer(c_size_t), value :: length
    type(c_ptr), value :: user_data
    type(sink_counts), pointer :: counts
    call c_f_pointer(user_data, counts)
    if (length > 0 .and. message(1) /= c_null_char) counts%messages = counts%messages + 1
    counts%last_level = level
  end subroutine count_message

  ! An rmmFailureCallback_t: frees the spill block if there is one and asks for a retry.
  function spill_on_oom(bytes, arg) bind(c) result(retry)
    integer(c_size_t), value :: bytes
    type(c_ptr), value :: arg
    logical(c_bool) :: retry
    type(spill_state), pointer :: state
    call c_f_pointer(arg, state)
    state%calls = state%calls + 1
    state%last_bytes = bytes
    retry = .false.
    if (c_associated(state%spill)) then
      if (rmmResourceDeallocate(state%owner, state%spill, state%spill_bytes, c_null_ptr) &
          == RMM_SUCCESS) then
        state%spill = c_null_ptr
        retry = .true.
      end if
    end if
  end function spill_on_oom

end module adaptor_callbacks

program test_adaptors
  use, intrinsic :: iso_c_binding
  use rmm
  use ftest
  use adaptor_callbacks
  implicit none

  integer(c_size_t), parameter :: KiB = 1024
  logical :: simulated
  type(c_ptr) :: cuda, pool

  simulated = ftest_simulated()
  call expect_ok(rmmCudaResourceCreate(cuda), 'rmmCudaResourceCreate')
  call expect_ok(rmmPoolResourceCreate(pool, cuda, 32 * 1024 * KiB, 0_c_size_t), &
    'rmmPoolResourceCreate')

  call statistics()
  call limiting_and_failure_callback()
  call tracking()
  call logging()
  call sinks()
  call aligned_and_prefetch()

  call expect_ok(rmmResourceDestroy(pool), 'rmmResourceDestroy(pool)')
  call expect_ok(rmmResourceDestroy(cuda), 'rmmResourceDestroy(cuda)')
  call ftest_finish('fortran adaptors')

contains

  ! A statistics adaptor as the current device's resource: the helpers' allocations counted.
  subroutine statistics()
    type(c_ptr) :: stats
    type(c_ptr), target :: previous
    type(rmmStatistics_t) :: counts
    type(rmmStatistics_t), target :: popped
    real(c_float), pointer :: a(:)
    real(c_double), pointer :: b(:, :)
    integer(c_int64_t), pointer :: c(:, :, :)

    call expect_ok(rmmStatisticsAdaptorCreate(stats, pool), 'rmmStatisticsAdaptorCreate')
    call expect_ok(rmmSetCurrentDeviceResource(stats, c_loc(previous)), &
      'rmmSetCurrentDeviceResource(stats)')
    call rmm_allocate(a, 1000)            ! 4000 bytes
    call rmm_allocate(b, 10, 10)          ! 800 bytes
    call rmm_allocate(c, 2, 3, 4)         ! 192 bytes
    call expect_ok(rmmStatisticsAdaptorGetCounts(stats, counts), 'rmmStatisticsAdaptorGetCounts')
    call expect(counts%current_bytes == 4992 .and. counts%peak_bytes == 4992 .and. &
      counts%total_bytes == 4992, 'bytes after three allocations')
    call expect(counts%current_count == 3 .and. counts%peak_count == 3 .and. &
      counts%total_count == 3, 'counts after three allocations')

    ! A nested scope sees only its own allocations.
    call expect_ok(rmmStatisticsAdaptorPushCounters(stats), 'rmmStatisticsAdaptorPushCounters')
    call rmm_free(a)
    call rmm_allocate(a, 250)             ! 1000 bytes
    call expect_ok(rmmStatisticsAdaptorPopCounters(stats, c_loc(popped)), &
      'rmmStatisticsAdaptorPopCounters')
    call expect(popped%total_count == 1 .and. popped%total_bytes == 1000 .and. &
      popped%current_bytes == -3000 .and. popped%current_count == 0, &
      'the popped scope: one allocation, one free of earlier memory')
    call expect_ok(rmmStatisticsAdaptorGetCounts(stats, counts), 'rmmStatisticsAdaptorGetCounts')
    call expect(counts%current_bytes == 1992 .and. counts%current_count == 3 .and. &
      counts%total_count == 4 .and. counts%total_bytes == 5992, 'counts after the scope')
    call expect_status(rmmStatisticsAdaptorPopCounters(stats, c_null_ptr), &
      RMM_ERROR_INVALID_ARGUMENT, 'rmmStatisticsAdaptorPopCounters without a pushed scope')
    call expect_ok(rmmStatisticsAdaptorPushCounters(stats), 'rmmStatisticsAdaptorPushCounters')
    call expect_ok(rmmStatisticsAdaptorPopCounters(stats, c_null_ptr), &
      'rmmStatisticsAdaptorPopCounters(c_null_ptr)')

    call rmm_free(a)
    call rmm_free(b)
    call rmm_free(c)
    call expect_ok(rmmStatisticsAdaptorGetCounts(stats, counts), 'rmmStatisticsAdaptorGetCounts')
    call expect(counts%current_bytes == 0 .and. counts%current_count == 0 .and. &
      counts%peak_bytes == 4992, 'everything freed')
    call expect_status(rmmStatisticsAdaptorGetCounts(cuda, counts), RMM_ERROR_INVALID_ARGUMENT, &
      'rmmStatisticsAdaptorGetCounts of a cuda resource')

    call expect_ok(rmmSetCurrentDeviceResource(previous, c_null_ptr), &
      'rmmSetCurrentDeviceResource(previous)')
    call expect_ok(rmmResourceDestroy(previous), 'rmmResourceDestroy(previous)')
    call expect_ok(rmmResourceDestroy(stats), 'rmmResourceDestroy(stats)')
  end subroutine statistics

  ! A limiting adaptor of 1 MiB, and a failure callback over it that frees a spill block.
  subroutine limiting_and_failure_callback()
    type(c_ptr) :: limiting, callback, unused
    type(spill_state), target :: state
    integer(c_size_t) :: bytes
    integer(c_int32_t), pointer :: a(:), b(:)
    integer(c_int) :: s

    call expect_ok(rmmLimitingAdaptorCreate(limiting, pool, 1024 * KiB), &
      'rmmLimitingAdaptorCreate')
    call expect_status(rmmLimitingAdaptorCreate(callback, pool, 0_c_size_t), &
      RMM_ERROR_INVALID_ARGUMENT, 'rmmLimitingAdaptorCreate with a limit of 0')
    call rmm_allocate(a, 250, resource=limiting)   ! 1000 bytes, counted as 1024
    call expect_ok(rmmLimitingAdaptorGetAllocatedBytes(limiting, bytes), &
      'rmmLimitingAdaptorGetAllocatedBytes')
    call expect_equal(bytes, 1024_c_size_t, 'sizes rounded up to 256')
    call rmm_allocate(b, 2**18, status=s, resource=limiting)   ! 1 MiB more
    call expect_status(s, RMM_ERROR_OUT_OF_MEMORY, 'past the limit')
    call expect(contains_text(rmm_last_error_message(), '1048576'), &
      'the limit is in the message: ' // rmm_last_error_message())
    call rmm_free(a, resource=limiting)

    ! The spill block takes 600 KiB of the 1 MiB; asking 600 KiB more calls the callback,
    ! which frees the spill block, and the retry succeeds.
    state%owner = limiting
    state%spill_bytes = 600 * KiB
    call expect_ok(rmmResourceAllocate(limiting, state%spill, state%spill_bytes, c_null_ptr), &
      'rmmResourceAllocate(spill)')
    call expect_ok(rmmFailureCallbackAdaptorCreate(callback, limiting, c_funloc(spill_on_oom), &
      c_loc(state)), 'rmmFailureCallbackAdaptorCreate')
    call rmm_allocate(a, 600 * 256, status=s, resource=callback)
    call expect_ok(s, 'an allocation retried after the callback spilled')
    call expect(state%calls == 1 .and. state%last_bytes == 600 * KiB, &
      'the callback ran once, with the bytes asked for')
    call expect(.not. c_associated(state%spill), 'the callback spilled')
    ! Nothing left to spill: the callback declines and the allocation fails.
    call rmm_allocate(b, 600 * 256, status=s, resource=callback)
    call expect_status(s, RMM_ERROR_OUT_OF_MEMORY, 'nothing left to spill')
    call expect(state%calls == 2, 'the callback ran again')
    call rmm_free(a, resource=callback)
    call expect_status(rmmFailureCallbackAdaptorCreate(unused, limiting, c_null_funptr, &
      c_null_ptr), RMM_ERROR_INVALID_ARGUMENT, 'rmmFailureCallbackAdaptorCreate(no callback)')

    call expect_ok(rmmResourceDestroy(callback), 'rmmResourceDestroy(callback)')
    call expect_ok(rmmResourceDestroy(limiting), 'rmmResourceDestroy(limiting)')
  end subroutine limiting_and_failure_callback

  ! A tracking adaptor: the outstanding allocation with its call site, the report.
  subroutine tracking()
    type(c_ptr) :: tracker
    type(c_ptr), target :: previous
    type(c_ptr) :: p
    type(rmmAllocationRecord_t), target :: records(4)
    integer(c_size_t) :: count
    integer(c_size_t), target :: length
    character(len=:), allocatable :: report
    character(kind=c_char), target :: file(18) = ['t', 'e', 's', 't', '_', 'a', 'd', 'a', 'p', &
      't', 'o', 'r', 's', '.', 'f', '9', '0', c_null_char]
    real(c_double), pointer :: d(:)

    call expect_ok(rmmTrackingAdaptorCreate(tracker, pool, .false._c_bool), &
      'rmmTrackingAdaptorCreate')
    call expect_ok(rmmSetCurrentDeviceResource(tracker, c_loc(previous)), &
      'rmmSetCurrentDeviceResource(tracker)')
    call expect_ok(rmmAlloc(p, 1000_c_size_t, c_null_ptr, c_loc(file), 77), 'rmmAlloc')
    call rmm_allocate(d, 64)

    call expect_ok(rmmTrackingAdaptorGetOutstanding(tracker, c_null_ptr, 0_c_size_t, count), &
      'rmmTrackingAdaptorGetOutstanding(count only)')
    call expect_equal(count, 2_c_size_t, 'two outstanding allocations')
    call expect_ok(rmmTrackingAdaptorGetOutstanding(tracker, c_loc(records), &
      size(records, kind=c_size_t), count), 'rmmTrackingAdaptorGetOutstanding')
    call expect_equal(count, 2_c_size_t, 'two outstanding allocations')
    call expect_record(records(1), records(2), p, c_loc(d(1)))
    call expect_record(records(2), records(1), p, c_loc(d(1)))

    call expect_ok(rmm_tracking_adaptor_get_report(tracker, report), &
      'rmm_tracking_adaptor_get_report')
    call expect(contains_text(report, 'test_adaptors.f90') .and. contains_text(report, '1000'), &
      'the leak report: ' // report)
    call expect_ok(rmmTrackingAdaptorGetReport(tracker, c_null_ptr, 0_c_size_t, c_loc(length)), &
      'rmmTrackingAdaptorGetReport(length only)')
    call expect(length == len(report), 'the report length')

    call expect_ok(rmmFree(p, c_null_ptr, c_null_ptr, 0), 'rmmFree')
    call rmm_free(d)
    call expect_ok(rmm_tracking_adaptor_get_report(tracker, report), &
      'rmm_tracking_adaptor_get_report')
    call expect(len(report) == 0, 'nothing outstanding, an empty report')
    call expect_ok(rmmSetCurrentDeviceResource(previous, c_null_ptr), &
      'rmmSetCurrentDeviceResource(previous)')
    call expect_ok(rmmResourceDestroy(previous), 'rmmResourceDestroy(previous)')
    call expect_ok(rmmResourceDestroy(tracker), 'rmmResourceDestroy(tracker)')
  end subroutine tracking

  ! The record of rmmAlloc (at `from_alloc`) has its call site; that of rmm_allocate (at
  ! `from_helper`) has none.
  subroutine expect_record(record, other, from_alloc, from_helper)
    type(rmmAllocationRecord_t), intent(in) :: record, other
    type(c_ptr), intent(in) :: from_alloc, from_helper
    if (record%size == 1000) then
      call expect(c_associated(record%ptr, from_alloc), 'the record of rmmAlloc: ptr')
      call expect(record%line == 77, 'the record of rmmAlloc: line')
      call expect(rmm_c_string(record%file) == 'test_adaptors.f90', &
        'the record of rmmAlloc: file ' // rmm_c_string(record%file))
      call expect(.not. c_associated(record%stream), 'the record of rmmAlloc: stream')
      call expect(record%thread == other%thread .and. record%thread /= 0, &
        'the records name the allocating thread')
    else
      call expect(record%size == 512, 'the record of rmm_allocate: size')
      call expect(c_associated(record%ptr, from_helper), 'the record of rmm_allocate: ptr')
      call expect(record%line == 0 .and. rmm_c_string(record%file) == '', &
        'rmm_allocate gives no call site')
    end if
  end subroutine expect_record

  ! A logging adaptor: RAPIDS RMM's CSV, one line per allocation and free.
  subroutine logging()
    type(c_ptr) :: logger, other
    character(len=:), allocatable :: csv, page
    integer(c_int64_t), pointer :: a(:)
    integer :: length, env_status
    call expect_ok(rmm_logging_adaptor_create(logger, pool, 'fortran_adaptors_log.csv'), &
      'rmm_logging_adaptor_create')
    call rmm_allocate(a, 128, resource=logger)
    call rmm_free(a, resource=logger)
    call expect_ok(rmmLoggingAdaptorFlush(logger), 'rmmLoggingAdaptorFlush')
    csv = read_text_file('fortran_adaptors_log.csv')
    call expect(index(csv, 'Thread,Time,Action,Pointer,Size,Stream') == 1 .and. &
      contains_text(csv, ',allocate,') .and. contains_text(csv, ',free,') .and. &
      contains_text(csv, ',1024,'), 'the log file: ' // csv)
    ! The memory timeline page of that log, replayed against a pool.
    call expect_ok(rmmTimelineReportWrite(logger, 'pool' // c_null_char, &
      'fortran_timeline.html' // c_null_char), 'rmmTimelineReportWrite')
    page = read_text_file('fortran_timeline.html')
    call expect(contains_text(page, '"events":2') .and. contains_text(page, '"live_bytes":1024') &
      .and. contains_text(page, '"spec":"pool"'), 'the timeline page')
    call expect_ok(rmmResourceDestroy(logger), 'rmmResourceDestroy(logger)')

    call expect_status(rmm_logging_adaptor_create(other, pool, '/nonexistent-dir/log.csv'), &
      RMM_ERROR_IO, 'a log file that cannot be created')
    call get_environment_variable('RMM_LOG_FILE', length=length, status=env_status)
    if (env_status /= 0) then
      call expect_status(rmm_logging_adaptor_create(other, pool), RMM_ERROR_INVALID_ARGUMENT, &
        'rmm_logging_adaptor_create without a path or RMM_LOG_FILE')
      call expect_status(rmmLoggingAdaptorCreate(other, pool, c_null_ptr), &
        RMM_ERROR_INVALID_ARGUMENT, 'rmmLoggingAdaptorCreate(c_null_ptr) without RMM_LOG_FILE')
    end if
  end subroutine logging

  ! Sinks written in Fortran: a logging adaptor's lines (the header at once, the rest at the
  ! flush, the release when it goes), rmm-rs's diagnostics at the level set, and a stack.
  subroutine sinks()
    type(sink_counts), target :: counts
    type(c_ptr) :: logger, tracker
    integer(c_int64_t), pointer :: a(:)
    integer(c_int64_t) :: sink
    integer(c_int) :: before
    integer(c_size_t), target :: length
    call expect_ok(rmmLoggingAdaptorCreateWithSink(logger, pool, c_funloc(count_line), &
      c_funloc(count_release), c_loc(counts)), 'rmmLoggingAdaptorCreateWithSink')
    call expect(counts%lines == 1, 'the header line at once')
    call rmm_allocate(a, 16, resource=logger)
    call rmm_free(a, resource=logger)
    call expect_ok(rmmLoggingAdaptorFlush(logger), 'rmmLoggingAdaptorFlush')
    call expect(counts%lines == 3, 'the header, an allocation and a free')
    call expect_ok(rmmResourceDestroy(logger), 'rmmResourceDestroy(logger)')
    call expect(counts%released == 1, 'released once the adaptor is gone')

    call expect_ok(rmmLogGetLevel(before), 'rmmLogGetLevel')
    call expect_ok(rmmLogSinkAdd(sink, c_funloc(count_message), c_loc(counts)), 'rmmLogSinkAdd')
    call expect_ok(rmmLogSetLevel(RMM_LOG_LEVEL_DEBUG), 'rmmLogSetLevel(debug)')
    ! A failed call writes its message at debug.
    call expect_status(rmmLoggingAdaptorFlush(pool), RMM_ERROR_INVALID_ARGUMENT, &
      'rmmLoggingAdaptorFlush of a pool')
    call expect(counts%messages >= 1 .and. counts%last_level == RMM_LOG_LEVEL_DEBUG, &
      'the diagnostic reached the sink')
    call expect_ok(rmmLogSinkRemove(sink), 'rmmLogSinkRemove')
    call expect_status(rmmLogSinkRemove(sink), RMM_ERROR_INVALID_ARGUMENT, 'removed twice')
    call expect_ok(rmmLogSetLevel(before), 'rmmLogSetLevel(before)')

    call expect_ok(rmmTrackingAdaptorCreate(tracker, pool, .true._c_bool), 'rmmTrackingAdaptorCreate')
    call rmm_allocate(a, 16, resource=tracker)
    call expect_ok(rmmTrackingAdaptorGetStack(tracker, c_loc(a(1)), c_null_ptr, 0_c_size_t, &
      c_loc(length)), 'rmmTrackingAdaptorGetStack')
    call expect(length > 0, 'a captured stack')
    call rmm_free(a, resource=tracker)
    call expect_ok(rmmResourceDestroy(tracker), 'rmmResourceDestroy(tracker)')
  end subroutine sinks

  subroutine aligned_and_prefetch()
    type(c_ptr) :: aligned, managed, prefetch, other
    real(c_float), pointer :: small(:), large(:)
    call expect_ok(rmmAlignedAdaptorCreate(aligned, pool, 65536_c_size_t, 4096_c_size_t), &
      'rmmAlignedAdaptorCreate')
    call rmm_allocate(small, 10, resource=aligned)
    call rmm_allocate(large, 1024, resource=aligned)   ! 4096 bytes: aligned
    call expect(modulo(address_of(c_loc(large(1))), 65536_c_intptr_t) == 0, &
      'an allocation over the threshold is aligned')
    call rmm_free(small, resource=aligned)
    call rmm_free(large, resource=aligned)
    call expect_ok(rmmResourceDestroy(aligned), 'rmmResourceDestroy(aligned)')
    call expect_status(rmmAlignedAdaptorCreate(other, pool, 100_c_size_t, 0_c_size_t), &
      RMM_ERROR_INVALID_ARGUMENT, 'an alignment that is not a power of two')

    call expect_ok(rmmManagedResourceCreate(managed), 'rmmManagedResourceCreate')
    call expect_ok(rmmPrefetchAdaptorCreate(prefetch, managed), 'rmmPrefetchAdaptorCreate')
    call rmm_allocate(large, 1000, resource=prefetch)
    call expect_ok(rmmStreamSynchronize(c_null_ptr), 'rmmStreamSynchronize')
    large = 0.5                                       ! managed memory: host accessible
    call expect(abs(sum(large) - 500) < 0.5, 'prefetched managed memory read back')
    call rmm_free(large, resource=prefetch)
    call expect_ok(rmmResourceDestroy(prefetch), 'rmmResourceDestroy(prefetch)')
    call expect_ok(rmmResourceDestroy(managed), 'rmmResourceDestroy(managed)')
    if (.not. simulated) write (*, '(a)') 'note: on a real GPU'
  end subroutine aligned_and_prefetch

end program test_adaptors
