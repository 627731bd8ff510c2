/* rmm.h included twice (and again after the standard headers it uses) compiles and links. */
#include "rmm.h"
#include "rmm.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "rmm.h"

/* RMM_TRY in a function returning rmmError_t. */
static rmmError_t destroy_null(void) {
  RMM_TRY(rmmResourceDestroy(NULL));
  return RMM_SUCCESS;
}

int main(void) {
  const char *message = rmmGetLastErrorMessage();
  if (message == NULL) return 1;
  return destroy_null() == RMM_SUCCESS ? 0 : 1;
}
