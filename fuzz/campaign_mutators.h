// Mutations of a real input for the reliability campaign, each of a class that says what a
// correct reader must do with the result:
//   kRandom        bytes flipped, inserted, deleted, duplicated or cut: anything may follow,
//                  except a crash, a hang or a partial output;
//   kInvalidating  a change the format's own rules forbid (a required field renamed away, a
//                  number that is not one, a row one field short, a lone carriage return, an
//                  unknown command or option, a size with no unit): it must be refused;
//   kNeutral       a change the format says means nothing (CRLF line ends, blank lines or
//                  whitespace where they are allowed): it must give the seed's own output.
// Invariants: deterministic in (kind, seed, rng state); an invalidating mutation that cannot
// apply to this seed (no data row, no such field) falls back to a random one and says so.
#pragma once

#include <random>
#include <string>

#include "fuzz/campaign_kinds.h"

namespace kv::campaign {

enum class MutationClass { kRandom, kInvalidating, kNeutral };

struct Mutation {
  MutationClass cls = MutationClass::kRandom;
  std::string name;  // e.g. "csv-drop-field"
  std::string bytes;
};

Mutation mutate(const InputKind& kind, const std::string& seed, std::mt19937_64& rng);

const char* class_name(MutationClass c);

}  // namespace kv::campaign
