/* IPC of an allocation between two processes, and peer access to an expandable resource's
 * memory. The process forks before either touches a device (CUDA does not survive a fork):
 * the parent exports a block of a shareable expandable resource, the child opens it, checks
 * and overwrites its first page (on simulated devices, where device memory is host memory),
 * closes it, and is refused the same handle once the parent has freed the block. */
#define _POSIX_C_SOURCE 200809L
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rmm_test.h"

#define BLOCK_BYTES ((size_t)24 << 20)
#define PAGE 4096

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
  /* The parent frees the block, then sends its handle again. */
  read_all(from_parent, &handle, sizeof handle);
  ptr = NULL;
  CHECK_RMM(rmmIpcOpenMemHandle(&ptr, &handle), RMM_ERROR_INVALID_ARGUMENT);
  CHECK(ptr == NULL);
  CHECK(strstr(rmmGetLastErrorMessage(), "freed") != NULL);
  return 0;
}

int main(void) {
  int down[2], up[2], status = -1, local = 0, count;
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
