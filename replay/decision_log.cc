#include "replay/decision_log.h"

#include <openssl/evp.h>

#include <algorithm>
#include <charconv>

#include "model/block_hash.h"
#include "model/util/check.h"

namespace kv::replay {

struct DecisionLog::Sha {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  ~Sha() { EVP_MD_CTX_free(ctx); }
};

DecisionLog::DecisionLog(bool keep_text) : sha_(std::make_unique<Sha>()), keep_text_(keep_text) {
  KV_CHECK(sha_->ctx != nullptr && EVP_DigestInit_ex(sha_->ctx, EVP_sha256(), nullptr) == 1,
           "OpenSSL SHA-256 unavailable");
}

DecisionLog::~DecisionLog() = default;

void DecisionLog::append(const std::string& line) {
  KV_CHECK(EVP_DigestUpdate(sha_->ctx, line.data(), line.size()) == 1);
  if (keep_text_) text_ += line;
  if (sink_) sink_(line);
  ++lines_;
}

std::string DecisionLog::digest_hex() const {
  EVP_MD_CTX* copy = EVP_MD_CTX_new();
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  KV_CHECK(copy && EVP_MD_CTX_copy_ex(copy, sha_->ctx) == 1 && EVP_DigestFinal_ex(copy, md, &len) == 1);
  EVP_MD_CTX_free(copy);
  BlockHash h;
  std::copy(md, md + 32, h.bytes.begin());
  h.size = 32;
  return h.hex();
}

namespace {
// Appends an integer's decimal digits (as std::to_string, without a temporary string).
template <typename T>
void put_int(std::string& s, T value) {
  char digits[24];
  const auto end = std::to_chars(digits, digits + sizeof digits, value).ptr;
  s.append(digits, static_cast<std::size_t>(end - digits));
}

template <typename T>
void put_list(std::string& s, const std::vector<T>& items) {
  s += '[';
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i) s += ',';
    if constexpr (std::is_integral_v<T>)
      put_int(s, items[i]);
    else
      s += items[i];
  }
  s += ']';
}
}  // namespace

void DecisionLog::record(const StepPlan& plan, std::int64_t new_evictions, std::int64_t free_blocks) {
  std::string& s = line_;
  s.assign("step ");
  put_int(s, plan.step);
  s += " tokens ";
  put_int(s, plan.total_tokens);
  s += " |";
  for (const ScheduledRequest& r : plan.requests) {
    s += ' ';
    s += r.id;
    s += " +";
    put_int(s, r.token_ids.size());
    if (r.is_new) {
      s += " new@";
      put_int(s, r.num_computed_tokens);
      s += " hit=";
      put_int(s, r.num_cached_tokens);
    }
    if (r.num_external_tokens > 0) [[unlikely]] {
      s += " tier=";
      put_int(s, r.num_external_tokens);
    }
    s += " blocks=";
    put_list(s, r.block_ids);
    if (!r.group_block_ids.empty()) [[unlikely]] {  // hybrid: never for one group
      s += " groups=";
      for (std::size_t g = 0; g < r.group_block_ids.size(); ++g) {
        if (g) s += '/';
        put_list(s, r.group_block_ids[g]);
      }
    }
    if (r.samples) s += " sample";
    s += ';';
  }
  s += " | preempted=";
  put_list(s, plan.preempted);
  s += " finished=";
  put_list(s, plan.finished);
  s += " evictions=";
  put_int(s, new_evictions);
  s += " free=";
  put_int(s, free_blocks);
  s += '\n';
  append(s);
}

void DecisionLog::record_route(const std::string& request_id, int replica) {
  append("route " + request_id + " -> " + std::to_string(replica) + "\n");
}

void DecisionLog::record_replica_digest(int replica, const std::string& digest_hex) {
  append("replica " + std::to_string(replica) + " " + digest_hex + "\n");
}

void DecisionLog::record_rejection(const std::string& request_id, const std::string& reason) {
  append("reject " + request_id + ": " + reason + "\n");
}

}  // namespace kv::replay
