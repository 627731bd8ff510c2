/* The C side of fortran.layout: sizes, offsets and constants of rmm.h as the C compiler sees
 * them, and structs filled or checked field by field, for test_layout.f90 to compare with the
 * bind(c) types and named constants of rmm.f90. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "rmm.h"

size_t ftest_c_sizeof(int which);
size_t ftest_c_offsetof(int which, int field);
int64_t ftest_c_constant(int which);
int ftest_c_check_options(const rmmOptions_t *options);
void ftest_c_fill(rmmStatistics_t *statistics, rmmAllocationRecord_t *record);

/* 1: rmmStatistics_t, 2: rmmAllocationRecord_t, 3: rmmOptions_t. */
size_t ftest_c_sizeof(int which) {
  switch (which) {
    case 1: return sizeof(rmmStatistics_t);
    case 2: return sizeof(rmmAllocationRecord_t);
    case 3: return sizeof(rmmOptions_t);
    default: return 0;
  }
}

/* The offset of field `field` (1-based, in declaration order); SIZE_MAX past the last. */
size_t ftest_c_offsetof(int which, int field) {
  static const size_t statistics[] = {
      offsetof(rmmStatistics_t, current_bytes), offsetof(rmmStatistics_t, peak_bytes),
      offsetof(rmmStatistics_t, total_bytes),   offsetof(rmmStatistics_t, current_count),
      offsetof(rmmStatistics_t, peak_count),    offsetof(rmmStatistics_t, total_count)};
  static const size_t record[] = {
      offsetof(rmmAllocationRecord_t, ptr),    offsetof(rmmAllocationRecord_t, size),
      offsetof(rmmAllocationRecord_t, stream), offsetof(rmmAllocationRecord_t, thread),
      offsetof(rmmAllocationRecord_t, line),   offsetof(rmmAllocationRecord_t, file)};
  static const size_t options[] = {
      offsetof(rmmOptions_t, allocation_mode),   offsetof(rmmOptions_t, initial_pool_size),
      offsetof(rmmOptions_t, enable_logging),    offsetof(rmmOptions_t, devices.count),
      offsetof(rmmOptions_t, devices.ids),       offsetof(rmmOptions_t, maximum_pool_size)};
  const size_t *table = which == 1 ? statistics : which == 2 ? record : options;
  if (which < 1 || which > 3 || field < 1 || field > 6) return SIZE_MAX;
  return table[field - 1];
}

/* The constants of rmm.h in the order test_layout.f90 lists them. */
int64_t ftest_c_constant(int which) {
  static const int64_t constants[] = {
      RMM_SUCCESS,           RMM_ERROR_CUDA_ERROR,    RMM_ERROR_INVALID_ARGUMENT,
      RMM_ERROR_NOT_INITIALIZED, RMM_ERROR_OUT_OF_MEMORY, RMM_ERROR_UNKNOWN,
      RMM_ERROR_IO,          RMM_ERROR_NOT_SUPPORTED, RMM_ERROR_INVALID_HANDLE,
      RMM_ERROR_ALREADY_INITIALIZED, RMM_MAX_DEVICES, CudaDefaultAllocation,
      PoolAllocation,        CudaManagedMemory,       CudaAsyncAllocation,
      (int64_t)sizeof(rmmError_t), (int64_t)sizeof(rmmAllocationMode_t), (int64_t)sizeof(bool)};
  if (which < 1 || which > (int)(sizeof constants / sizeof constants[0])) return INT64_MIN;
  return constants[which - 1];
}

/* 0 when Fortran filled `options` as test_layout.f90 does, otherwise the first field (1-based)
 * that differs. */
int ftest_c_check_options(const rmmOptions_t *options) {
  int i;
  if (options->allocation_mode != (PoolAllocation | CudaManagedMemory)) return 1;
  if (options->initial_pool_size != ((size_t)3 << 33)) return 2;
  if (options->enable_logging != true) return 3;
  if (options->devices.count != RMM_MAX_DEVICES) return 4;
  for (i = 0; i < RMM_MAX_DEVICES; ++i) {
    if (options->devices.ids[i] != 1000 + i) return 5;
  }
  if (options->maximum_pool_size != SIZE_MAX) return 6;
  return 0;
}

/* Fills the structs with values test_layout.f90 checks. */
void ftest_c_fill(rmmStatistics_t *statistics, rmmAllocationRecord_t *record) {
  statistics->current_bytes = -1;
  statistics->peak_bytes = INT64_MAX;
  statistics->total_bytes = 3;
  statistics->current_count = 4;
  statistics->peak_count = 5;
  statistics->total_count = -INT64_MAX;
  record->ptr = (void *)(uintptr_t)0x1000;
  record->size = SIZE_MAX;
  record->stream = (cudaStream_t)(uintptr_t)0x2000;
  record->thread = UINT64_MAX;
  record->line = 4000000000u;
  memset(record->file, 'x', sizeof record->file);
  memcpy(record->file, "dir/file.f90", 13);
}
