// OpsInterpreter: the what-if shell of docs/semantics.md §6 (the ops language).
// Each line is one command against a KvCacheManager; query commands print exactly one line in
// the documented format. A malformed line is an error naming the line; a failed `check` is a
// separate outcome (the state is broken, the script is not).
// Invariant: the interpreter never aborts on user input; only broken core invariants abort.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/kv_cache_groups.h"
#include "model/kv_cache_manager.h"
#include "model/util/status.h"

namespace kv {

// What the layers of a `layers=` LIST take from the config line rather than from the list.
struct LayerListDefaults {
  int block_size = 16;
  MambaCacheMode mamba_mode = MambaCacheMode::kAlign;  // `mamba=`
  std::int64_t max_model_len = 1 << 20;                // a Mamba block in mode none
  int num_speculative_blocks = 0;                      // `spec_tokens=`: a Mamba group's extra blocks
};

// Parses a `layers=` LIST (§6.5): comma-separated `full`, `sliding_window:W`, `chunked_local:C`,
// `mamba`, `cross_attention` or `rswa:W`, each optionally `*COUNT`; the layers are named
// layer.0, layer.1, ... in order. A Mamba layer's state fills one attention page.
StatusOr<std::vector<LayerKvCacheSpec>> parse_layers_spec(std::string_view spec, const LayerListDefaults& defaults);
// Parses a token SPEC: comma-separated `7`, `3*16` (token 3 sixteen times), `10:20` (10..19).
StatusOr<std::vector<TokenId>> parse_token_spec(std::string_view spec);
// `ID@OFFSET+LENGTH[,ID@OFFSET+LENGTH...]`: multimodal items of a request, in offset order.
StatusOr<std::vector<MultiModalItem>> parse_mm_spec(std::string_view spec);

class OpsInterpreter {
 public:
  enum class Outcome { kOk, kError, kCheckFailed };

  explicit OpsInterpreter(std::ostream& out) : out_(out) {}

  // Runs one line (1-based line_no for messages). On kError or kCheckFailed, error() holds
  // the message ("line N: reason").
  Outcome execute(std::string_view line, int line_no);
  const std::string& error() const { return error_; }

  // Runs a whole script; returns the process exit status (0 ok, 1 failed check, 2 bad line)
  // and writes the error, if any, to `err`.
  static int run_script(std::istream& in, std::ostream& out, std::ostream& err);

  // The manager, or null before the first config line.
  const KvCacheManager* manager() const { return manager_.get(); }

 private:
  struct OpsRequest {
    std::unique_ptr<Request> request;
    std::optional<CacheHit> pending_hit;  // from `lookup`, consumed by the next `alloc`
  };

  Status dispatch(const std::vector<std::string_view>& words, bool* check_failed);
  Status cmd_config(const std::vector<std::string_view>& words);
  Status cmd_request(const std::vector<std::string_view>& words);
  Status cmd_alloc(const std::vector<std::string_view>& words);
  Status cmd_rollback(const std::vector<std::string_view>& words);
  Status cmd_table(const std::vector<std::string_view>& words);
  Status cmd_request_query(std::string_view cmd, std::string_view id);
  Status cmd_pool_query(std::string_view cmd, bool* check_failed);
  StatusOr<OpsRequest*> find(std::string_view id);

  std::ostream& out_;
  std::string error_;
  KvCacheConfig config_;
  std::unique_ptr<BlockHasher> hasher_;
  std::unique_ptr<KvCacheManager> manager_;
  std::map<std::string, OpsRequest, std::less<>> requests_;
};

}  // namespace kv
