#include <iostream>
#include "cli/commands.h"
namespace kv::cli {
int run_calibrate(int, char**) { std::cerr << "kvsim calibrate: not yet\n"; return 2; }
}  // namespace kv::cli
