// option_error: the error of one command-line option, named as the user types it ("--rate: ...").
// Every option check of replay/ words its errors through it, so they all read alike.
#pragma once

#include <string>
#include <string_view>

#include "model/util/status.h"

namespace kv::replay {

inline Status option_error(std::string_view option, const std::string& why) {
  return Status::error("--" + std::string(option) + ": " + why);
}

}  // namespace kv::replay
