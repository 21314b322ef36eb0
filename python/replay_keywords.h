// kvsim.Replay's keyword arguments, generated from the replay's option table
// (replay/replay_config.h), so that Python and the command line never drift apart.
// Invariants:
//   1. One keyword per option: its command-line name with '-' as '_' (`--kv-cache-tokens` is
//      kv_cache_tokens); a name that is no option is a TypeError that says so.
//   2. A keyword's Python type follows the option's kind: switches and on/off options take
//      bool, numeric options int or float (never bool), text options str; every option also
//      takes its command-line text as str. A value of another type is a TypeError naming the
//      option and the types it takes; a value the option refuses is the command line's
//      ValueError (its message names the option).
//   3. The stub (kvsim.pyi) and the docstring list the same keywords with the same types.
#pragma once

#include <pybind11/pybind11.h>

#include <string>
#include <string_view>

#include "replay/replay_config.h"

namespace kv::python {

enum class OptionKind { kSwitch, kNumber, kText };

// From the option's row: a switch, or the form of its default value.
OptionKind option_kind(const replay::ConfigOption& option);
std::string python_name(std::string_view option_name);

// Sets `keyword` = `value` on `config` (invariant 2); throws TypeError or ValueError.
void set_keyword(replay::ReplayConfig& config, const std::string& keyword, const pybind11::handle& value);

// "    model: str = ...,\n" lines for the stub, and the docstring's list of options.
std::string stub_keywords();
std::string keywords_doc();

}  // namespace kv::python
