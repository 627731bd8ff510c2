/* The resources over driver pools and system memory from C: each is made where
 * rmmDeviceSupports says the device offers what it needs, and refused with
 * RMM_ERROR_NOT_SUPPORTED (nothing written) where not; a view refuses NULL and made-up pools. */
#include "rmm_test.h"

static bool supports(uint32_t capability) {
  int device = -1, supported = -1;
  CHECK_OK(rmmGetDevice(&device));
  CHECK_OK(rmmDeviceSupports(&supported, capability, device));
  CHECK(supported == 0 || supported == 1);
  return supported == 1;
}

static void use(rmmResource_t resource, const char *name) {
  const char *kind = NULL;
  void *ptr = NULL;
  CHECK_OK(rmmResourceGetName(resource, &kind));
  CHECK(strcmp(kind, name) == 0);
  CHECK_OK(rmmResourceAllocate(resource, &ptr, 1 << 20, NULL));
  CHECK(ptr != NULL && (uintptr_t)ptr % 256 == 0);
  CHECK_OK(rmmResourceDeallocate(resource, ptr, 1 << 20, NULL));
  CHECK_OK(rmmStreamSynchronize(NULL));
  CHECK_OK(rmmResourceDestroy(resource));
}

/* Checks the resource `status` made in `*resource` when `offered`, otherwise the refusal; the
 * status is taken before `*resource` is read (argument evaluation order is unspecified). */
static void made_or_refused(rmmError_t status, rmmResource_t *made, bool offered, const char *name) {
  rmmResource_t resource = *made;
  *made = NULL;
  if (offered) {
    CHECK_OK(status);
    use(resource, name);
  } else {
    CHECK_RMM(status, RMM_ERROR_NOT_SUPPORTED);
    CHECK(resource == NULL);
    printf("%s: not offered here (%s)\n", name, rmmGetLastErrorMessage());
  }
}

int main(void) {
  rmmResource_t owner = NULL, view = NULL, r = NULL;
  void *pool = NULL;
  int supported = 0;
  rmmError_t status;

  CHECK_RMM(rmmDeviceSupports(NULL, RMM_CAPABILITY_HW_DECOMPRESS, 0), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmDeviceSupports(&supported, 99, 0), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmDeviceSupports(&supported, RMM_CAPABILITY_HW_DECOMPRESS, 64), RMM_ERROR_INVALID_ARGUMENT);

  /* A view over another resource's pool; NULL and made-up pools refused. */
  if (rmmAsyncResourceCreate(&owner, 0, SIZE_MAX) == RMM_SUCCESS) {
    CHECK_OK(rmmAsyncResourceGetPool(owner, &pool));
    CHECK_OK(rmmAsyncViewResourceCreate(&view, pool));
    use(view, "cuda_async_view");
    CHECK_OK(rmmResourceDestroy(owner));
  }
  view = NULL;
  CHECK_RMM(rmmAsyncViewResourceCreate(&view, NULL), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmAsyncViewResourceCreate(NULL, pool), RMM_ERROR_INVALID_ARGUMENT);
  CHECK(view == NULL);

  status = rmmAsyncManagedResourceCreate(&r);
  made_or_refused(status, &r, supports(RMM_CAPABILITY_MANAGED_MEMORY_POOLS), "cuda_async_managed");
  status = rmmAsyncPinnedHostResourceCreate(&r, 0, SIZE_MAX);
  made_or_refused(status, &r, supports(RMM_CAPABILITY_HOST_MEMORY_POOLS),
                  "cuda_async_pinned_host");
  status = rmmAsyncResourceCreateWithFlags(&r, 0, SIZE_MAX, 0, RMM_ASYNC_HW_DECOMPRESS);
  made_or_refused(status, &r, supports(RMM_CAPABILITY_HW_DECOMPRESS), "cuda_async");
  CHECK_RMM(rmmAsyncResourceCreateWithFlags(&r, 0, SIZE_MAX, 0, 0x80), RMM_ERROR_INVALID_ARGUMENT);
  status = rmmSystemResourceCreate(&r);
  made_or_refused(status, &r, supports(RMM_CAPABILITY_PAGEABLE_MEMORY_ACCESS), "system");
  status = rmmSamHeadroomResourceCreate(&r, 64 << 20);
  made_or_refused(status, &r, supports(RMM_CAPABILITY_PAGEABLE_MEMORY_ACCESS),
                  "sam_headroom");
  if (supports(RMM_CAPABILITY_PAGEABLE_MEMORY_ACCESS)) {
    CHECK_RMM(rmmSamHeadroomResourceCreate(&r, SIZE_MAX), RMM_ERROR_INVALID_ARGUMENT);
    CHECK(r == NULL);
  }
  return rmm_test_finish("test_pool_resources");
}
