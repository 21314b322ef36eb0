#include "replay/decision_log.h"

#include <openssl/evp.h>

#include <algorithm>
#include <charconv>
#include <cstring>

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

void DecisionLog::append(std::string_view line) {
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
// A line built in a reused buffer: each piece first makes room for its longest form, so that
// the writes are plain stores (std::string's appends check capacity per character and call
// out of line per piece: a step's line has a few pieces per scheduled request).
class LineBuffer {
 public:
  explicit LineBuffer(std::vector<char>& buf) : buf_(buf) {}
  std::string_view view() const { return {buf_.data(), size_}; }

  void put(std::string_view s) {
    std::memcpy(room(s.size()), s.data(), s.size());
    size_ += s.size();
  }
  void put(char c) {
    *room(1) = c;
    ++size_;
  }
  template <typename T>
  void put_int(T value) {
    char* const p = room(kMaxDigits);
    size_ += static_cast<std::size_t>(std::to_chars(p, p + kMaxDigits, value).ptr - p);
  }
  // [a,b,...] of integers.
  template <typename T>
  void put_list(const std::vector<T>& items) {
    char* p = room(2 + items.size() * (kMaxDigits + 1));
    char* const begin = p;
    *p++ = '[';
    for (std::size_t i = 0; i < items.size(); ++i) {
      if (i) *p++ = ',';
      p = std::to_chars(p, p + kMaxDigits, items[i]).ptr;
    }
    *p++ = ']';
    size_ += static_cast<std::size_t>(p - begin);
  }
  // [a,b,...] of request ids.
  void put_names(const std::vector<RequestId>& names) {
    put('[');
    for (std::size_t i = 0; i < names.size(); ++i) {
      if (i) put(',');
      put(names[i]);
    }
    put(']');
  }

 private:
  static constexpr std::size_t kMaxDigits = 20;  // an int64's sign and 19 digits
  char* room(std::size_t bound) {
    if (size_ + bound > buf_.size()) buf_.resize(std::max(2 * buf_.size(), size_ + bound));
    return buf_.data() + size_;
  }
  std::vector<char>& buf_;
  std::size_t size_ = 0;
};
}  // namespace

void DecisionLog::record(const StepPlan& plan, std::int64_t new_evictions, std::int64_t free_blocks) {
  LineBuffer s(line_);
  s.put("step ");
  s.put_int(plan.step);
  s.put(" tokens ");
  s.put_int(plan.total_tokens);
  s.put(" |");
  for (const ScheduledRequest& r : plan.requests) {
    s.put(' ');
    s.put(r.id);
    s.put(" +");
    s.put_int(r.token_ids.size());
    if (r.is_new) {
      s.put(" new@");
      s.put_int(r.num_computed_tokens);
      s.put(" hit=");
      s.put_int(r.num_cached_tokens);
    }
    if (r.num_external_tokens > 0) [[unlikely]] {
      s.put(" tier=");
      s.put_int(r.num_external_tokens);
    }
    s.put(" blocks=");
    s.put_list(r.block_ids);
    if (!r.group_block_ids.empty()) [[unlikely]] {  // hybrid: never for one group
      s.put(" groups=");
      for (std::size_t g = 0; g < r.group_block_ids.size(); ++g) {
        if (g) s.put('/');
        s.put_list(r.group_block_ids[g]);
      }
    }
    if (r.samples) s.put(" sample");
    s.put(';');
  }
  s.put(" | preempted=");
  s.put_names(plan.preempted);
  s.put(" finished=");
  s.put_names(plan.finished);
  s.put(" evictions=");
  s.put_int(new_evictions);
  s.put(" free=");
  s.put_int(free_blocks);
  s.put('\n');
  append(s.view());
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
