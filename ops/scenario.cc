#include "ops/scenario.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "ops/hybrid_scenario.h"
#include "ops/scheduler_scenario.h"

namespace kv::ops {

StatusOr<ScenarioOutcome> run_scenario(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::error(path + ": cannot open");
  std::stringstream text;
  text << in.rdbuf();
  const nlohmann::json j = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return Status::error(path + ": not a JSON object");
  if (j.contains("requests")) return run_scheduler_scenario(path);
  if (j.contains("config") && j["config"].is_object() && j["config"].contains("layers")) {
    return run_hybrid_scenario(path);
  }
  return Status::error(path +
                       ": neither a scheduler scenario (no 'requests') nor a KV-cache groups scenario "
                       "(no 'config.layers')");
}

}  // namespace kv::ops
