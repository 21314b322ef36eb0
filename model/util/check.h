// KV_CHECK: the channel for broken invariants (a bug in kvsim, never bad user input).
// A failed check prints the condition, the source location and a message built from the
// streamed arguments, then aborts. It stays on in every build type: the core is cheap to check
// and a silently corrupted cache is worse than a crash.
#pragma once

#include <sstream>
#include <string>

namespace kv::detail {
[[noreturn]] void check_failed(const char* cond, const char* file, int line, const std::string& msg);
}  // namespace kv::detail

// The failure path is a cold lambda that is never inlined: a function with checks keeps only
// the test and a call on its fast path, and stays small enough for the compiler to inline.
// Clang before 16 cannot capture structured bindings in a lambda (a C++20 rule, P1091R3), so
// there the message is built in place instead.
// clang-format off
#define KV_CHECK_REPORT_(cond_text, ...)                                      \
  std::ostringstream kv_check_os_;                                            \
  static_cast<void>(kv_check_os_ __VA_OPT__(<< __VA_ARGS__));                 \
  ::kv::detail::check_failed(cond_text, __FILE__, __LINE__, kv_check_os_.str())
#if defined(__clang__) && __clang_major__ < 16
#define KV_CHECK_FAILED_(cond_text, ...)                                      \
  do {                                                                        \
    KV_CHECK_REPORT_(cond_text __VA_OPT__(, ) __VA_ARGS__);                   \
  } while (0)
#else
#define KV_CHECK_FAILED_(cond_text, ...)                                      \
  [&]() __attribute__((cold, noinline)) {                                     \
    KV_CHECK_REPORT_(cond_text __VA_OPT__(, ) __VA_ARGS__);                   \
  }()
#endif
#define KV_CHECK(cond, ...)                                                   \
  do {                                                                        \
    if (!(cond)) [[unlikely]] {                                               \
      KV_CHECK_FAILED_(#cond __VA_OPT__(, ) __VA_ARGS__);                     \
    }                                                                         \
  } while (0)
// clang-format on
