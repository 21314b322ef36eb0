// Mamba cache modes by name: the one spelling that the ops language (`mamba=`), the scenario
// files (a layer's "mode") and `kvsim replay --mamba-cache-mode` share. The names are
// to_string(MambaCacheMode)'s: none, align, all.
#pragma once

#include <optional>
#include <string_view>

#include "model/kv_cache_spec.h"

namespace kv {

// The mode named `text`; nullopt for any other text.
std::optional<MambaCacheMode> parse_mamba_cache_mode(std::string_view text);

}  // namespace kv
