// Fuzz target ops: any bytes as a `kvsim ops` script (ops/ops_interpreter.h).
// Property: the interpreter never aborts on user input (its header's invariant); a script ends
// with status 0, 1 (a failed check) or 2 (a bad line).
#include <sstream>
#include <string>

#include "fuzz/fuzz_target.h"
#include "ops/ops_interpreter.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::istringstream in{std::string(kv::fuzz::as_text(data, size))};
  std::ostringstream out, err;
  const int status = kv::OpsInterpreter::run_script(in, out, err);
  FUZZ_CHECK(status == 0 || status == 1 || status == 2, std::to_string(status));
  FUZZ_CHECK(status == 0 || !err.str().empty(), "a failed script says why");
  return 0;
}
