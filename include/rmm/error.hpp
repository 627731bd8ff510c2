/*
 * rmm/error.hpp: the exceptions of rmm-rs's C++ layers (rmm.hpp and the RAPIDS-shaped
 * <rmm/...> headers), and the conversion of a failing rmmError_t into one of them.
 *
 * RAPIDS RMM's names are all here: rmm::bad_alloc and rmm::out_of_memory (std::bad_alloc),
 * rmm::logic_error, rmm::cuda_error, rmm::invalid_argument, rmm::out_of_range, and the macros
 * RMM_EXPECTS, RMM_FAIL and (with the CUDA runtime) RMM_CUDA_TRY.
 */
#ifndef RMM_ERROR_HPP
#define RMM_ERROR_HPP

#include "../rmm.h"

#include <cassert>
#include <cstdint>
#include <cstdio>
#include <new>
#include <stdexcept>
#include <string>

namespace rmm {

// =================================================================================== errors

/// A failed rmm call: the rmmError_t code, and as what() the call, the code's description and
/// rmmGetLastErrorMessage() at the time of the failure.
class error : public std::runtime_error {
 public:
  error(rmmError_t code, const std::string &what) : std::runtime_error(what), code_(code) {}
  error(rmmError_t code, const char *what) : std::runtime_error(what), code_(code) {}
  /// The rmmError_t the call returned.
  rmmError_t code() const noexcept { return code_; }

 private:
  rmmError_t code_;
};

/// An allocation that failed (catchable as std::bad_alloc), with the rmmError_t code. Not an
/// rmm::error: a class with both as bases would have std::exception twice, and a
/// `catch (const std::exception &)` would then miss it. Both carry code().
class bad_alloc : public std::bad_alloc {
 public:
  bad_alloc(rmmError_t code, const std::string &what) : message_(what), code_(code) {}
  bad_alloc(rmmError_t code, const char *what) : message_(what), code_(code) {}
  /// RAPIDS RMM's constructors: a failed allocation for another reason than memory.
  explicit bad_alloc(const char *what) : bad_alloc(RMM_ERROR_CUDA_ERROR, what) {}
  explicit bad_alloc(const std::string &what) : bad_alloc(RMM_ERROR_CUDA_ERROR, what) {}
  const char *what() const noexcept override { return message_.what(); }
  rmmError_t code() const noexcept { return code_; }

 private:
  std::runtime_error message_;  // its copies never throw, as an exception's must not
  rmmError_t code_;
};

/// RMM_ERROR_OUT_OF_MEMORY: the resource could not satisfy the allocation.
/// Its what() starts with "out_of_memory: ", as RAPIDS RMM's does.
class out_of_memory : public bad_alloc {
 public:
  out_of_memory(rmmError_t code, const std::string &what) : bad_alloc(code, "out_of_memory: " + what) {}
  out_of_memory(rmmError_t code, const char *what) : out_of_memory(code, std::string(what)) {}
  explicit out_of_memory(const std::string &what) : out_of_memory(RMM_ERROR_OUT_OF_MEMORY, what) {}
  explicit out_of_memory(const char *what) : out_of_memory(RMM_ERROR_OUT_OF_MEMORY, std::string(what)) {}
};

/// An element index past the end of a device_uvector.
class out_of_range : public std::out_of_range {
 public:
  using std::out_of_range::out_of_range;
};

/// RAPIDS RMM's exceptions for a broken precondition (RMM_EXPECTS, RMM_FAIL), a failed CUDA
/// call (RMM_CUDA_TRY) and an invalid argument.
struct logic_error : public std::logic_error {
  using std::logic_error::logic_error;
};
struct cuda_error : public std::runtime_error {
  using std::runtime_error::runtime_error;
};
class invalid_argument : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

namespace detail {

// "<call>: <code>: <rmmGetLastErrorMessage()>", or rmmGetErrorString's text without a message.
inline std::string describe(rmmError_t code, const char *call) {
  std::string text;
  if (call != nullptr && call[0] != '\0') {
    text += call;
    text += ": ";
  }
  const char *message = rmmGetLastErrorMessage();
  const char *name = rmmGetErrorName(static_cast<std::int32_t>(code));
  if (message != nullptr && message[0] != '\0') {
    text += name;
    text += ": ";
    text += message;
  } else {
    const char *description = rmmGetErrorString(static_cast<std::int32_t>(code));
    text += description != nullptr ? description : "unknown rmmError_t";
  }
  return text;
}

}  // namespace detail

/// Throws the exception for `code` (not RMM_SUCCESS): rmm::out_of_memory for
/// RMM_ERROR_OUT_OF_MEMORY, rmm::error otherwise. `call` names what failed in the message.
[[noreturn]] inline void throw_error(rmmError_t code, const char *call = nullptr) {
  if (code == RMM_ERROR_OUT_OF_MEMORY) throw out_of_memory(code, detail::describe(code, call));
  throw error(code, detail::describe(code, call));
}

/// As throw_error, for an allocation: a CUDA error is rmm::bad_alloc too, as in RMM.
[[noreturn]] inline void throw_alloc_error(rmmError_t code, const char *call = nullptr) {
  if (code == RMM_ERROR_OUT_OF_MEMORY) throw out_of_memory(code, detail::describe(code, call));
  if (code == RMM_ERROR_CUDA_ERROR) throw bad_alloc(code, detail::describe(code, call));
  throw error(code, detail::describe(code, call));
}

/// Turns an rmmError_t into an exception (see throw_error); RMM_SUCCESS does nothing.
inline void check(rmmError_t status, const char *call = nullptr) {
  if (status != RMM_SUCCESS) throw_error(status, call);
}

/// check() for allocating calls (see throw_alloc_error).
inline void check_alloc(rmmError_t status, const char *call = nullptr) {
  if (status != RMM_SUCCESS) throw_alloc_error(status, call);
}

}  // namespace rmm

/// Evaluates an rmm C call and throws on failure, with the call's text in the message.
#ifndef RMM_CHECK
#define RMM_CHECK(call) ::rmm::check((call), #call)
#endif

#define RMM_STRINGIFY_DETAIL(x) #x
#define RMM_STRINGIFY(x) RMM_STRINGIFY_DETAIL(x)
#define RMM_GET_MACRO_FOR_ARGUMENTS(_1, _2, _3, NAME, ...) NAME

/// RMM_EXPECTS(condition, message[, exception type]): throws (rmm::logic_error by default)
/// with the file and line when `condition` is false.
#ifndef RMM_EXPECTS
#define RMM_EXPECTS(...) \
  RMM_GET_MACRO_FOR_ARGUMENTS(__VA_ARGS__, RMM_EXPECTS_3, RMM_EXPECTS_2, RMM_EXPECTS_1)(__VA_ARGS__)
#define RMM_EXPECTS_3(condition, reason, exception_type)                                      \
  (!!(condition)) ? static_cast<void>(0)                                                      \
                  : throw exception_type {                                                    \
    std::string{"RMM failure at: "} + __FILE__ + ":" + RMM_STRINGIFY(__LINE__) + ": " + reason \
  }
#define RMM_EXPECTS_2(condition, reason) RMM_EXPECTS_3(condition, reason, ::rmm::logic_error)
#define RMM_EXPECTS_1(condition) RMM_EXPECTS_2(condition, "expectation failed")
#endif

/// RMM_FAIL(message[, exception type]): throws (rmm::logic_error by default) with the file
/// and line.
#ifndef RMM_FAIL
#define RMM_FAIL(...) \
  RMM_GET_MACRO_FOR_ARGUMENTS(__VA_ARGS__, RMM_FAIL_3, RMM_FAIL_2, RMM_FAIL_1)(__VA_ARGS__)
#define RMM_FAIL_2(reason, exception_type) \
  throw exception_type { std::string{"RMM failure at: "} + __FILE__ + ":" + RMM_STRINGIFY(__LINE__) + ": " + reason }
#define RMM_FAIL_1(reason) RMM_FAIL_2(reason, ::rmm::logic_error)
#define RMM_FAIL_3(reason, exception_type, unused) RMM_FAIL_2(reason, exception_type)
#endif

/// RMM_CUDA_TRY(call[, exception type]): throws (rmm::cuda_error by default) with CUDA's name
/// and description of the error when `call` does not return cudaSuccess. Needs the CUDA
/// runtime's header (included by rmm.h when it is on the include path).
#if defined(__CUDA_RUNTIME_API_H__) && !defined(RMM_CUDA_TRY)
#define RMM_CUDA_TRY(...) \
  RMM_GET_MACRO_FOR_ARGUMENTS(__VA_ARGS__, RMM_CUDA_TRY_3, RMM_CUDA_TRY_2, RMM_CUDA_TRY_1)(__VA_ARGS__)
#define RMM_CUDA_TRY_2(call, exception_type)                                                     \
  do {                                                                                           \
    cudaError_t const rmm_cuda_status = (call);                                                  \
    if (rmm_cuda_status != cudaSuccess) {                                                        \
      (void)cudaGetLastError();                                                                  \
      throw exception_type{std::string{"CUDA error at: "} + __FILE__ + ":" +                     \
                           RMM_STRINGIFY(__LINE__) + ": " + cudaGetErrorName(rmm_cuda_status) + \
                           " " + cudaGetErrorString(rmm_cuda_status)};                           \
    }                                                                                            \
  } while (0)
#define RMM_CUDA_TRY_1(call) RMM_CUDA_TRY_2(call, ::rmm::cuda_error)
#define RMM_CUDA_TRY_3(call, exception_type, unused) RMM_CUDA_TRY_2(call, exception_type)

/// RMM_CUDA_TRY_ALLOC(call[, bytes]): for an allocating CUDA call: rmm::out_of_memory when CUDA
/// ran out of memory, rmm::bad_alloc for any other error.
#define RMM_CUDA_TRY_ALLOC(...) \
  RMM_GET_MACRO_FOR_ARGUMENTS(__VA_ARGS__, RMM_CUDA_TRY_ALLOC_3, RMM_CUDA_TRY_ALLOC_2, RMM_CUDA_TRY_ALLOC_1)(__VA_ARGS__)
#define RMM_CUDA_TRY_ALLOC_3(call, bytes, unused) RMM_CUDA_TRY_ALLOC_2(call, bytes)
#define RMM_CUDA_TRY_ALLOC_2(call, bytes) \
  RMM_CUDA_TRY_ALLOC_DETAIL(call, std::string{"CUDA error (failed to allocate "} + std::to_string(bytes) + " bytes) at: ")
#define RMM_CUDA_TRY_ALLOC_1(call) RMM_CUDA_TRY_ALLOC_DETAIL(call, std::string{"CUDA error at: "})
#define RMM_CUDA_TRY_ALLOC_DETAIL(call, prefix)                                                          \
  do {                                                                                                   \
    cudaError_t const rmm_cuda_status = (call);                                                          \
    if (rmm_cuda_status != cudaSuccess) {                                                                \
      (void)cudaGetLastError();                                                                          \
      std::string const rmm_message = prefix + __FILE__ + ":" + RMM_STRINGIFY(__LINE__) + ": " +         \
                                      cudaGetErrorName(rmm_cuda_status) + " " +                         \
                                      cudaGetErrorString(rmm_cuda_status);                               \
      if (rmm_cuda_status == cudaErrorMemoryAllocation) throw ::rmm::out_of_memory{rmm_message};         \
      throw ::rmm::bad_alloc{rmm_message};                                                               \
    }                                                                                                    \
  } while (0)

/// RMM_ASSERT_CUDA_SUCCESS(call): asserts (in debug builds, with CUDA's message on stderr) that
/// `call` returned cudaSuccess; release builds only evaluate it.
#ifdef NDEBUG
#define RMM_ASSERT_CUDA_SUCCESS(call) \
  do {                                \
    (void)(call);                     \
  } while (0)
#else
#define RMM_ASSERT_CUDA_SUCCESS(call)                                                                  \
  do {                                                                                                 \
    cudaError_t const rmm_cuda_status = (call);                                                        \
    if (rmm_cuda_status != cudaSuccess) {                                                              \
      std::fprintf(stderr, "CUDA error: %s %s\n", cudaGetErrorName(rmm_cuda_status),                  \
                   cudaGetErrorString(rmm_cuda_status));                                               \
    }                                                                                                  \
    assert(rmm_cuda_status == cudaSuccess);                                                            \
  } while (0)
#endif

/// As RMM_ASSERT_CUDA_SUCCESS, where the CUDA runtime unloading (at process exit) is no error.
#ifdef NDEBUG
#define RMM_ASSERT_CUDA_SUCCESS_SAFE_SHUTDOWN(call) RMM_ASSERT_CUDA_SUCCESS(call)
#else
#define RMM_ASSERT_CUDA_SUCCESS_SAFE_SHUTDOWN(call)                                                    \
  do {                                                                                                 \
    cudaError_t const rmm_cuda_status = (call);                                                        \
    if (rmm_cuda_status != cudaSuccess && rmm_cuda_status != cudaErrorCudartUnloading) {               \
      std::fprintf(stderr, "CUDA error: %s %s\n", cudaGetErrorName(rmm_cuda_status),                  \
                   cudaGetErrorString(rmm_cuda_status));                                               \
      assert(rmm_cuda_status == cudaSuccess);                                                          \
    }                                                                                                  \
  } while (0)
#endif
#endif

#endif  // RMM_ERROR_HPP
