#include "model/util/check.h"

#include <cstdio>
#include <cstdlib>

namespace kv::detail {
void check_failed(const char* cond, const char* file, int line, const std::string& msg) {
  std::fprintf(stderr, "kvsim: invariant broken at %s:%d: %s%s%s\n", file, line, cond, msg.empty() ? "" : ": ",
               msg.c_str());
  std::fflush(stderr);
  std::abort();
}
}  // namespace kv::detail
