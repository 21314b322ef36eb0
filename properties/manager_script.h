// The manager-level state machine's shared pieces: the system under test, the command base
// class (every command can print itself as `ops` lines), and the writer that turns a command
// sequence into an ops script with its expected output (docs/semantics.md §6).
// Invariants:
//   1. A command's ops lines, run by `kvsim ops` from the state the model was in, print exactly
//      the model's printed() lines for it (checked by replaying every generated case).
//   2. write_manager_script(config, commands, k) stops after command k (all when k < 0) and ends
//      with `queue`, `num_free`, `stats` and `check` queries and their expected output.
#pragma once

#include <rapidcheck.h>
#include <rapidcheck/state.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "model/kv_cache_manager.h"
#include "properties/manager_model.h"

namespace kv::props {

// The real system, driven exactly as OpsInterpreter drives it (KV events on).
struct ManagerSut {
  explicit ManagerSut(const ModelConfig& c);
  KvCacheConfig config;
  std::unique_ptr<BlockHasher> hasher;
  std::unique_ptr<KvCacheManager> manager;
  std::map<std::string, std::unique_ptr<Request>> requests;
  std::map<std::string, CacheHit> pending;  // remembered by lookup, consumed by alloc
  // Isolation: the tenant (salt and LoRA) whose request last got each block fresh from the
  // free queue, i.e. whose KV it holds; a hit must come from the same tenant.
  std::map<BlockId, std::string> tenant_of;
};

class ManagerCommand : public rc::state::Command<ManagerModel, ManagerSut> {
 public:
  // The ops lines of this command, given the model state before it.
  virtual std::vector<std::string> ops_lines(const ManagerModel& before) const = 0;

  void apply(ManagerModel& m) const final {
    m.begin_command();
    do_apply(m);
  }
  // Runs the command on the real system, then compares every observable with the model.
  void run(const ManagerModel& before, ManagerSut& sut) const final;
  void show(std::ostream& os) const final;

 protected:
  virtual void do_apply(ManagerModel& m) const = 0;
  virtual void do_run(const ManagerModel& before, const ManagerModel& after, ManagerSut& sut) const = 0;
};

using ManagerCommands = rc::state::Commands<rc::state::Command<ManagerModel, ManagerSut>>;

struct ManagerScript {
  std::string text;      // the script, expected output as `#> ` comments
  std::string expected;  // exactly what `kvsim ops` prints for it when the core is right
  int num_lines = 0;     // command lines (comments and blank lines excluded)
};

ManagerScript write_manager_script(const ModelConfig& config, const ManagerCommands& commands, int failed_step);

// The failure report's reproducer section (stable markers that scripts/run-mutants parses).
std::string format_reproducer(const ManagerScript& script);

}  // namespace kv::props
