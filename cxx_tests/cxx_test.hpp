// Helpers of the rmm.hpp tests: rmm_test.h's CHECK macros and finish (race count), plus
// checks that a statement throws a given exception type with a given rmmError_t.
#ifndef RMM_CXX_TEST_HPP
#define RMM_CXX_TEST_HPP

#include "rmm.hpp"
#include "rmm_test.h"

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

namespace cxx_test {

[[noreturn]] inline void fail(const char *file, int line, const std::string &what) {
  std::fprintf(stderr, "%s:%d: FAILED: %s\n", file, line, what.c_str());
  std::fflush(stderr);
  std::exit(1);
}

inline bool contains(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

}  // namespace cxx_test

// `statement` must throw `type` (or a class derived from it). Inside the handler `caught`
// names the exception, for further checks in `then`.
#define EXPECT_THROW_THEN(statement, type, then)                                            \
  do {                                                                                      \
    bool cxx_test_thrown_ = false;                                                          \
    try {                                                                                   \
      statement;                                                                            \
    } catch (const type &caught) {                                                          \
      cxx_test_thrown_ = true;                                                              \
      if (std::string(caught.what()).empty())                                               \
        cxx_test::fail(__FILE__, __LINE__, #statement ": what() is empty");                \
      then;                                                                                 \
    } catch (const std::exception &other) {                                                 \
      cxx_test::fail(__FILE__, __LINE__,                                                    \
                     std::string(#statement " threw another exception than " #type ": ") + \
                         other.what());                                                     \
    }                                                                                       \
    if (!cxx_test_thrown_)                                                                  \
      cxx_test::fail(__FILE__, __LINE__, #statement " did not throw " #type);              \
  } while (0)

#define EXPECT_THROW(statement, type) EXPECT_THROW_THEN(statement, type, (void)caught)

// `statement` must throw `type` whose code() is `expected`.
#define EXPECT_THROW_CODE(statement, type, expected)                                        \
  EXPECT_THROW_THEN(statement, type, {                                                      \
    if (caught.code() != (expected)) {                                                      \
      cxx_test::fail(__FILE__, __LINE__,                                                    \
                     std::string(#statement ": code ") + rmm_test_code_name(caught.code()) + \
                         ", expected " + rmm_test_code_name(expected) + " (" + caught.what() + \
                         ")");                                                              \
    }                                                                                       \
  })

#endif  // RMM_CXX_TEST_HPP
