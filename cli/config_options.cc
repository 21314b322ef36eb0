#include "cli/config_options.h"

#include <cstdlib>
#include <map>
#include <memory>
#include <vector>

namespace po = boost::program_options;

namespace kv::cli {

void add_config_options(po::options_description& opts, const std::set<std::string>& only,
                        const std::set<std::string>& except) {
  const replay::ReplayConfig defaults;
  std::vector<std::string> group_order;
  std::map<std::string, std::unique_ptr<po::options_description>> groups;
  for (const replay::ConfigOption& o : replay::config_options()) {
    const std::string name(o.name);
    if ((!only.empty() && !only.count(name)) || except.count(name)) continue;
    const std::string group(o.group);
    if (!groups.count(group)) {
      group_order.push_back(group);
      groups[group] = std::make_unique<po::options_description>(group);
    }
    std::string help(o.help);
    if (o.is_switch) {
      groups[group]->add_options()(name.c_str(), po::bool_switch(), help.c_str());
      continue;
    }
    const std::string value = o.get(defaults);
    if (!value.empty()) help += " (default: " + value + ")";
    groups[group]->add_options()(name.c_str(), po::value<std::string>()->value_name("VALUE"), help.c_str());
  }
  for (const std::string& g : group_order) opts.add(*groups[g]);
}

Status apply_config_options(const po::variables_map& vm, replay::ReplayConfig& config,
                            const std::set<std::string>& only) {
  if (const char* path = std::getenv("KVSIM_GPU_PRESET_PATH")) config.device.gpu_search_path = path;
  for (const replay::ConfigOption& o : replay::config_options()) {
    const std::string name(o.name);
    if (!vm.count(name) || (!only.empty() && !only.count(name))) continue;
    if (o.is_switch) {
      if (!vm[name].as<bool>()) continue;
      if (Status s = o.set(config, "on"); !s.ok()) return s;
    } else if (Status s = o.set(config, vm[name].as<std::string>()); !s.ok()) {
      return s;
    }
  }
  return config.validate();
}

}  // namespace kv::cli
