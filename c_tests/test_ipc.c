/* IPC of an allocation between two processes, and peer access to an expandable resource's
 * memory. The process forks before either touches a device (CUDA does not survive a fork):
 * the parent exports a block of a shareable expandable resource, the child opens it, checks
 * and overwrites its first page (on simulated devices, where device memory is host memory),
 * closes it; then opens the same block by its pages' descriptors (rmmIpcGetMemPages, as
 * PyTorch's expandable segments travel) and sees that write; and is refused the handle once
 * the parent has freed the block. */
#define _POSIX_C_SOURCE 200809L
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rmm_test.h"

#define BLOCK_BYTES ((size_t)24 << 20)
#define PAGE 4096
#define MAX_PAGES 64

/* What the parent sends for rmmIpcOpenMemPages: descriptor numbers in the parent. */
struct pages_message {
  int pid;
  size_t page_size, page_count, offset;
  int fds[MAX_PAGES];
};

static void write_all(int fd, const void *data, size_t bytes) {
  const char *at = (const char *)data;
  while (bytes > 0) {
    ssize_t written = write(fd, at, bytes);
    CHECK(written > 0);
    at += written;
    bytes -= (size_t)written;
  }
}

static void read_all(int fd, void *data, size_t bytes) {
  char *at = (char *)data;
  while (bytes > 0) {
    ssize_t got = read(fd, at, bytes);
    CHECK(got > 0);
    at += got;
    bytes -= (size_t)got;
  }
}

static int child(int from_parent, int to_parent) {
  rmmIpcMemHandle_t handle;
  void *ptr = NULL;
  char done = 'c';
  read_all(from_parent, &handle, sizeof handle);
  CHECK_OK(rmmIpcOpenMemHandle(&ptr, &handle));
  CHECK(ptr != NULL);
  if (rmm_test_simulated()) {
    CHECK(rmm_test_verify(ptr, BLOCK_BYTES, 3));
    rmm_test_fill(ptr, PAGE, 9);
  }
  CHECK_OK(rmmIpcCloseMemHandle(ptr));
  CHECK_RMM(rmmIpcCloseMemHandle(ptr), RMM_ERROR_INVALID_ARGUMENT);
  write_all(to_parent, &done, 1);
  {
    /* The same block by its pages: the write above shows at the block's offset. */
    struct pages_message pages;
    void *first = NULL;
    read_all(from_parent, &pages, sizeof pages);
    CHECK_OK(rmmIpcOpenMemPages(&first, pages.pid, pages.page_size, pages.fds, pages.page_count));
    CHECK(first != NULL);
    if (rmm_test_simulated()) {
      CHECK(rmm_test_verify((char *)first + pages.offset, PAGE, 9));
      CHECK(rmm_test_verify((char *)first + pages.offset + PAGE, BLOCK_BYTES - PAGE, 3));
    }
    CHECK_OK(rmmIpcCloseMemHandle(first));
    CHECK_RMM(rmmIpcOpenMemPages(&first, pages.pid, pages.page_size + 1, pages.fds, pages.page_count),
              RMM_ERROR_INVALID_ARGUMENT);
    CHECK_RMM(rmmIpcOpenMemPages(&first, pages.pid, pages.page_size, pages.fds, 0), RMM_ERROR_INVALID_ARGUMENT);
    CHECK_RMM(rmmIpcOpenMemPages(NULL, pages.pid, pages.page_size, pages.fds, pages.page_count),
              RMM_ERROR_INVALID_ARGUMENT);
    done = 'p';
    write_all(to_parent, &done, 1);
  }
  /* The parent frees the block, then sends its handle again. */
  read_all(from_parent, &handle, sizeof handle);
  ptr = NULL;
  CHECK_RMM(rmmIpcOpenMemHandle(&ptr, &handle), RMM_ERROR_INVALID_ARGUMENT);
  CHECK(ptr == NULL);
  CHECK(strstr(rmmGetLastErrorMessage(), "freed") != NULL);
  return 0;
}

int main(void) {
  int down[2], up[2], status = -1, local = 0, count, again_fds[MAX_PAGES];
  struct pages_message pages;
  rmmIpcMemPages_t held, held_again;
  pid_t pid;
  rmmResource_t shared = NULL;
  rmmIpcMemHandle_t handle, again;
  void *ptr = NULL, *opened = NULL;
  char done = 0;
  rmmError_t granted;

  CHECK(pipe(down) == 0 && pipe(up) == 0);
  fflush(stdout);
  pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    close(down[1]);
    close(up[0]);
    exit(child(down[0], up[1]));
  }
  close(down[0]);
  close(up[1]);

  /* Under Yama's ptrace scope 1 the child, which is not the parent's ancestor, may take the
   * parent's descriptors only once the parent allows it. */
  CHECK_OK(rmmIpcAllowOpeners());
  CHECK_OK(rmmIpcExpandableResourceCreate(&shared, NULL));
  CHECK_OK(rmmResourceAllocate(shared, &ptr, BLOCK_BYTES, NULL));
  if (rmm_test_simulated()) rmm_test_fill(ptr, BLOCK_BYTES, 3);
  CHECK_OK(rmmIpcGetMemHandle(&handle, ptr));
  CHECK_OK(rmmIpcGetMemHandle(&again, ptr));
  CHECK(memcmp(&handle, &again, sizeof handle) == 0);
  write_all(down[1], &handle, sizeof handle);
  read_all(up[0], &done, 1);
  CHECK(done == 'c');
  if (rmm_test_simulated()) CHECK(rmm_test_verify(ptr, PAGE, 9));

  /* Opened in the exporting process too: the same memory at another address. */
  CHECK_OK(rmmIpcOpenMemHandle(&opened, &handle));
  CHECK(opened != NULL && opened != ptr);
  if (rmm_test_simulated()) CHECK(rmm_test_verify(opened, PAGE, 9));
  CHECK_OK(rmmIpcCloseMemHandle(opened));

  /* By its pages: the count first, then the descriptors, the same numbers at every call. */
  memset(&pages, 0, sizeof pages);
  CHECK_OK(rmmIpcGetMemPages(&held, NULL, 0, ptr));
  CHECK(held.page_count >= 1 && held.page_count <= MAX_PAGES);
  CHECK((char *)held.first_page <= (char *)ptr);
  CHECK((char *)held.first_page + held.page_size * held.page_count >= (char *)ptr + BLOCK_BYTES);
  CHECK_OK(rmmIpcGetMemPages(&held, pages.fds, MAX_PAGES, ptr));
  CHECK_OK(rmmIpcGetMemPages(&held_again, again_fds, MAX_PAGES, ptr));
  CHECK(held_again.page_count == held.page_count && memcmp(pages.fds, again_fds, held.page_count * sizeof(int)) == 0);
  CHECK_RMM(rmmIpcGetMemPages(&held, pages.fds, held.page_count - 1, ptr), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmIpcGetMemPages(&held, NULL, MAX_PAGES, ptr), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmIpcGetMemPages(NULL, pages.fds, MAX_PAGES, ptr), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmIpcGetMemPages(&held, pages.fds, MAX_PAGES, &local), RMM_ERROR_INVALID_ARGUMENT);
  pages.pid = (int)getpid();
  pages.page_size = held.page_size;
  pages.page_count = held.page_count;
  pages.offset = (size_t)((char *)ptr - (char *)held.first_page);
  write_all(down[1], &pages, sizeof pages);
  read_all(up[0], &done, 1);
  CHECK(done == 'p');

  CHECK_OK(rmmResourceDeallocate(shared, ptr, BLOCK_BYTES, NULL));
  write_all(down[1], &handle, sizeof handle);
  CHECK(waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);

  /* What has no handle. */
  CHECK_RMM(rmmIpcGetMemHandle(&handle, ptr), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmIpcGetMemHandle(&handle, &local), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmIpcGetMemHandle(NULL, ptr), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmIpcOpenMemHandle(&opened, NULL), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmIpcOpenMemHandle(NULL, &handle), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmIpcCloseMemHandle(NULL), RMM_ERROR_INVALID_ARGUMENT);

  /* Peer access: simulated devices reach each other; real ones where cuDeviceCanAccessPeer
   * says so (else the grant is refused). */
  count = rmm_test_device_count();
  CHECK_RMM(rmmExpandableResourceGrantPeerAccess(shared, count), RMM_ERROR_INVALID_ARGUMENT);
  if (count >= 2) {
    granted = rmmExpandableResourceGrantPeerAccess(shared, 1);
    CHECK(granted == RMM_SUCCESS || (!rmm_test_simulated() && granted == RMM_ERROR_INVALID_ARGUMENT));
  }
  CHECK_RMM(rmmExpandableResourceGrantPeerAccess(NULL, 0), RMM_ERROR_INVALID_HANDLE);
  CHECK_OK(rmmResourceDestroy(shared));
  return rmm_test_finish("test_ipc");
}
