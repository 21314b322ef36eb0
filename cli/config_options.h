// The replay options on the command line: every row of replay::config_options() becomes a
// Boost.Program_options option (grouped as the table groups them, defaults shown from a
// default ReplayConfig), and the given ones are applied with replay::set_option in table
// order. No option of a replay is declared anywhere else.
#pragma once

#include <boost/program_options.hpp>
#include <set>
#include <string>

#include "model/util/status.h"
#include "replay/replay_config.h"

namespace kv::cli {

// Adds the table's options to `opts`; `only` (if not empty) restricts them to those names, and
// those in `except` are left out.
void add_config_options(boost::program_options::options_description& opts, const std::set<std::string>& only = {},
                        const std::set<std::string>& except = {});

// Applies the options present in `vm` (of those named in `only`, if not empty) to `config`
// (after setting its preset search path from $KVSIM_GPU_PRESET_PATH), then validates it.
Status apply_config_options(const boost::program_options::variables_map& vm, replay::ReplayConfig& config,
                            const std::set<std::string>& only = {});

}  // namespace kv::cli
