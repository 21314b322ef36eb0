#include "traces/trace_io.h"

#include <fcntl.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <simdjson.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <utility>

#include "files/output_file.h"
#include "model/policies/block_retention.h"
#include "model/util/check.h"
#include "traces/block_tokens.h"
#include "traces/trace.pb.h"

namespace kv::trace {

namespace {

namespace pb = ::kvsim::trace;
namespace pio = ::google::protobuf::io;

constexpr char kMagic[8] = {'K', 'V', 'T', 'R', 'A', 'C', 'E', '\n'};
constexpr std::uint32_t kMaxFrameBytes = 256u << 20;  // larger lengths are corruption

std::array<std::uint32_t, 256> make_crc_table() {
  std::array<std::uint32_t, 256> table{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1u) ? (c >> 1) ^ 0x82f63b78u : c >> 1;
    table[i] = c;
  }
  return table;
}

void put_le32(std::uint32_t v, unsigned char* out) {
  for (int i = 0; i < 4; ++i) out[i] = static_cast<unsigned char>(v >> (8 * i));
}

std::string errno_text() { return std::strerror(errno); }

// Token ids of `field` are >= 0 and, when vocab_size > 0, below it.
Status check_tokens(const char* field, const std::vector<TokenId>& ids, std::int64_t vocab_size) {
  for (TokenId t : ids) {
    if (t < 0) return Status::error(std::string("field ") + field + ": negative token id " + std::to_string(t));
    if (vocab_size > 0 && t >= vocab_size) {
      return Status::error(std::string("field ") + field + ": token id " + std::to_string(t) +
                           " is not below the header's vocab_size " + std::to_string(vocab_size));
    }
  }
  return Status();
}

// The header's rules (trace.h), for the writer and the reader alike.
// Protobuf refuses to parse a string field that is not UTF-8, so the writer refuses to write one.
Status check_utf8(const char* field, const std::string& text) {
  if (simdjson::validate_utf8(text.data(), text.size())) return Status();
  return Status::error(std::string("field ") + field + ": not valid UTF-8");
}

Status check_header(const TraceHeader& h) {
  for (const auto& [field, text] : {std::pair<const char*, const std::string*>{"source", &h.source},
                                    {"hash_seed", &h.hash_seed},
                                    {"tokenizer", &h.tokenizer},
                                    {"notes", &h.notes}}) {
    if (Status s = check_utf8(field, *text); !s.ok()) return s;
  }
  if (!h.hash_algo.empty() && !parse_hash_algo(h.hash_algo)) {
    return Status::error("field hash_algo: unknown '" + h.hash_algo + "' (valid: sha256_cbor, xxhash_cbor)");
  }
  if (h.vocab_size < 0) return Status::error("field vocab_size: negative (" + std::to_string(h.vocab_size) + ")");
  if (h.block_size < 0) return Status::error("field block_size: negative");
  return Status();
}

// Rules shared by the writer and the reader; `where` already names the file and record.
Status check_request(const TraceRequest& r, std::int64_t prompt_size, bool have_prev, std::int64_t prev_arrival_us,
                     std::int64_t vocab_size, RequestIdSet& ids) {
  if (r.id.empty()) return Status::error("field id: empty request id");
  for (const auto& [field, text] : {std::pair<const char*, const std::string*>{"id", &r.id},
                                    {"cache_salt", &r.cache_salt},
                                    {"lora_name", &r.lora_name},
                                    {"session_id", &r.session_id}}) {
    if (Status s = check_utf8(field, *text); !s.ok()) return s;
  }
  if (prompt_size == 0) return Status::error("field prompt: empty prompt (request '" + r.id + "')");
  if (prompt_size > kMaxPromptTokens) {
    return Status::error("field prompt: " + std::to_string(prompt_size) + " tokens, more than " +
                         std::to_string(kMaxPromptTokens) + " (request '" + r.id + "')");
  }
  if (r.arrival_time_us < 0) {
    return Status::error("field arrival_time_us: negative arrival time " + std::to_string(r.arrival_time_us) +
                         " (request '" + r.id + "')");
  }
  if (r.arrival_time_us > kMaxArrivalTimeUs) {
    return Status::error("field arrival_time_us: " + std::to_string(r.arrival_time_us) + " is beyond " +
                         std::to_string(kMaxArrivalTimeUs) + " (about 31 years; request '" + r.id + "')");
  }
  if (have_prev && r.arrival_time_us < prev_arrival_us) {
    return Status::error("field arrival_time_us: arrivals go backwards (" + std::to_string(r.arrival_time_us) +
                         " after " + std::to_string(prev_arrival_us) + ", request '" + r.id + "')");
  }
  if (r.output_length < 0 || r.output_length > kMaxOutputTokens) {
    return Status::error("field output_length: " + std::to_string(r.output_length) + " is outside 0.." +
                         std::to_string(kMaxOutputTokens) + " (request '" + r.id + "')");
  }
  if (!r.output_tokens.empty() && r.output_length != static_cast<std::int64_t>(r.output_tokens.size())) {
    return Status::error("field output_length: " + std::to_string(r.output_length) + " but " +
                         std::to_string(r.output_tokens.size()) + " output tokens (request '" + r.id + "')");
  }
  if (Status s = check_tokens("output_tokens", r.output_tokens, vocab_size); !s.ok()) {
    return s.with_context("request '" + r.id + "': ");
  }
  if (r.retention_priority < BlockRetention::kMinPriority || r.retention_priority > BlockRetention::kMaxPriority) {
    return Status::error("field retention_priority: " + std::to_string(r.retention_priority) +
                         " is not in 0..100 (request '" + r.id + "')");
  }
  if (r.retention_duration < 0) {
    return Status::error("field retention_duration: negative (" + std::to_string(r.retention_duration) + ", request '" +
                         r.id + "')");
  }
  if (!ids.insert(r.id)) return Status::error("field id: duplicate request id '" + r.id + "'");
  return Status();
}

}  // namespace

std::uint32_t crc32c(const void* data, std::size_t size) {
  static const std::array<std::uint32_t, 256> table = make_crc_table();
  const auto* p = static_cast<const unsigned char*>(data);
  std::uint32_t c = 0xffffffffu;
  for (std::size_t i = 0; i < size; ++i) c = table[(c ^ p[i]) & 0xffu] ^ (c >> 8);
  return c ^ 0xffffffffu;
}

std::int64_t TraceRequest::prompt_size() const {
  auto n = static_cast<std::int64_t>(prompt.size());
  for (const PromptSegment& s : prompt_segments) {
    n += s.num_tokens > 0 ? s.num_tokens : static_cast<std::int64_t>(s.tokens.size());
  }
  return n;
}

void expand_segments(const std::vector<PromptSegment>& segments, std::vector<TokenId>& out) {
  for (const PromptSegment& s : segments) {
    if (s.num_tokens > 0) {
      expand_block_tokens(s.block_id, s.num_tokens, out);
    } else {
      out.insert(out.end(), s.tokens.begin(), s.tokens.end());
    }
  }
}

// ---------------------------------------------------------------------------------------------
// TraceWriter

StatusOr<TraceWriter> TraceWriter::create(const std::string& path, const TraceHeader& header, bool overwrite) {
  if (Status s = check_header(header); !s.ok()) return s.with_context(path + ": header: ");
  StatusOr<files::AtomicFile> file = files::AtomicFile::create(path, overwrite);
  if (!file.ok()) {
    if (file.status().message().find(" exists") != std::string::npos) {
      return Status::error(path + ": already exists (refusing to overwrite it; --force to replace)");
    }
    return Status::error(path + ": " + file.status().message());
  }
  TraceWriter w;
  w.path_ = path;
  w.vocab_size_ = header.vocab_size;
  w.file_ = std::make_unique<files::AtomicFile>(std::move(file.value()));
  std::string preamble(kMagic, 8);
  preamble.resize(12);
  put_le32(kFormatVersion, reinterpret_cast<unsigned char*>(preamble.data()) + 8);
  w.file_->out().write(preamble);
  w.bytes_written_ = static_cast<std::int64_t>(preamble.size());
  pb::Header h;
  h.set_format_version(kFormatVersion);
  h.set_source(header.source);
  h.set_hash_seed(header.hash_seed);
  h.set_hash_algo(header.hash_algo);
  h.set_block_size(header.block_size);
  h.set_tokenizer(header.tokenizer);
  h.set_vocab_size(header.vocab_size);
  h.set_notes(header.notes);
  if (Status s = w.write_frame(h.SerializeAsString()); !s.ok()) {
    w.abandon();
    return s;
  }
  return w;
}

TraceWriter::TraceWriter(TraceWriter&& o) noexcept = default;
TraceWriter& TraceWriter::operator=(TraceWriter&& o) noexcept = default;
TraceWriter::~TraceWriter() = default;

Status TraceWriter::write_frame(const std::string& bytes) {
  unsigned char head[8];
  unsigned char* end = pio::CodedOutputStream::WriteVarint32ToArray(static_cast<std::uint32_t>(bytes.size()), head);
  const auto head_len = static_cast<std::size_t>(end - head);
  unsigned char crc[4];
  put_le32(crc32c(bytes.data(), bytes.size()), crc);
  files::OutputFile& out = file_->out();
  out.write(std::string_view(reinterpret_cast<const char*>(head), head_len));
  out.write(bytes);
  out.write(std::string_view(reinterpret_cast<const char*>(crc), 4));
  if (!out.status().ok()) return Status::error(path_ + ": write failed: " + out.status().message());
  bytes_written_ += static_cast<std::int64_t>(head_len + bytes.size() + 4);
  return Status();
}

Status TraceWriter::write(const TraceRequest& r) {
  KV_CHECK(file_ != nullptr, "write after close");
  const std::string where = path_ + ": request " + std::to_string(num_written_) + ": ";
  if (!r.prompt.empty() && !r.prompt_segments.empty()) {
    return Status::error(where + "field prompt: both literal tokens and segments given");
  }
  std::int64_t prompt_size = static_cast<std::int64_t>(r.prompt.size());
  pb::Request m;
  for (const PromptSegment& s : r.prompt_segments) {
    pb::PromptSegment* ps = m.add_prompt_segments();
    if (s.num_tokens > 0) {
      if (s.num_tokens > kMaxBlockRefTokens) {
        return Status::error(where + "field prompt_segments: block reference too long");
      }
      ps->mutable_block()->set_block_id(s.block_id);
      ps->mutable_block()->set_num_tokens(s.num_tokens);
      prompt_size += s.num_tokens;
      if (vocab_size_ > 0 && vocab_size_ < kBlockTokenVocab) {  // block tokens may not fit
        std::vector<TokenId> expanded;
        expand_block_tokens(s.block_id, s.num_tokens, expanded);
        if (Status bad = check_tokens("prompt_segments", expanded, vocab_size_); !bad.ok()) {
          return bad.with_context(where);
        }
      }
    } else {
      if (Status bad = check_tokens("prompt_segments", s.tokens, vocab_size_); !bad.ok()) {
        return bad.with_context(where);
      }
      ps->mutable_tokens()->mutable_ids()->Add(s.tokens.begin(), s.tokens.end());
      prompt_size += static_cast<std::int64_t>(s.tokens.size());
    }
  }
  if (Status s = check_tokens("prompt", r.prompt, vocab_size_); !s.ok()) return s.with_context(where);
  if (Status s = check_request(r, prompt_size, num_written_ > 0, last_arrival_us_, vocab_size_, ids_); !s.ok()) {
    return s.with_context(where);
  }
  m.set_id(r.id);
  m.set_arrival_time_us(r.arrival_time_us);
  m.mutable_prompt_tokens()->Add(r.prompt.begin(), r.prompt.end());
  m.mutable_output_tokens()->Add(r.output_tokens.begin(), r.output_tokens.end());
  m.set_output_length(r.output_length);
  m.set_cache_salt(r.cache_salt);
  m.set_lora_name(r.lora_name);
  m.set_priority(r.priority);
  m.set_session_id(r.session_id);
  if (r.retention_priority != BlockRetention::kDefaultPriority) m.set_retention_priority(r.retention_priority);
  m.set_retention_duration(r.retention_duration);
  if (Status s = write_frame(m.SerializeAsString()); !s.ok()) return s;
  last_arrival_us_ = r.arrival_time_us;
  ++num_written_;
  if (on_write) on_write(num_written_);
  return Status();
}

Status TraceWriter::close() {
  if (file_ == nullptr) return Status();
  Status s = file_->commit();
  file_.reset();
  if (!s.ok()) return Status::error(path_ + ": write failed: " + s.message());
  return Status();
}

void TraceWriter::abandon() {
  if (file_ != nullptr) file_->abandon();
  file_.reset();
}

// ---------------------------------------------------------------------------------------------
// TraceReader

struct TraceReader::Impl {
  int fd = -1;
  std::unique_ptr<pio::FileInputStream> stream;
  std::int64_t offset = 0;  // bytes consumed so far
  std::string frame;        // reused buffers
  pb::Request request;

  ~Impl() {
    stream.reset();
    if (fd >= 0) ::close(fd);
  }

  // Reads one frame into `frame`: true, false at a clean end of file, or an error message.
  StatusOr<bool> read_frame() {
    pio::CodedInputStream coded(stream.get());
    const void* data = nullptr;
    int avail = 0;
    if (!coded.GetDirectBufferPointer(&data, &avail)) return false;
    std::uint32_t size = 0;
    if (!coded.ReadVarint32(&size)) {
      return Status::error("truncated or corrupt frame length at byte offset " + std::to_string(offset));
    }
    if (size > kMaxFrameBytes) {
      return Status::error("corrupt frame: length " + std::to_string(size) + " at byte offset " +
                           std::to_string(offset) + " exceeds the limit");
    }
    if (!coded.ReadString(&frame, static_cast<int>(size))) {
      return Status::error("truncated frame at byte offset " + std::to_string(offset) + ": " + std::to_string(size) +
                           " bytes announced, file ends first");
    }
    std::uint32_t crc = 0;
    if (!coded.ReadLittleEndian32(&crc)) {
      return Status::error("truncated frame at byte offset " + std::to_string(offset) + ": checksum missing");
    }
    if (crc != crc32c(frame.data(), frame.size())) {
      return Status::error("corrupt frame at byte offset " + std::to_string(offset) + ": checksum mismatch");
    }
    offset += coded.CurrentPosition();
    return true;
  }
};

StatusOr<TraceReader> TraceReader::open(const std::string& path) {
  TraceReader r;
  r.path_ = path;
  r.impl_ = std::make_unique<Impl>();
  r.impl_->fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (r.impl_->fd < 0) return Status::error(path + ": cannot open: " + errno_text());
  r.impl_->stream = std::make_unique<pio::FileInputStream>(r.impl_->fd, 1 << 20);
  unsigned char preamble[12];
  {
    pio::CodedInputStream coded(r.impl_->stream.get());
    if (!coded.ReadRaw(preamble, sizeof preamble)) {
      if (r.impl_->stream->GetErrno() != 0) {
        return Status::error(path + ": cannot read: " + std::strerror(r.impl_->stream->GetErrno()));
      }
      return Status::error(path + ": not a kvsim trace (file shorter than the 12-byte preamble)");
    }
  }
  if (std::memcmp(preamble, kMagic, 8) != 0) {
    return Status::error(path + ": not a kvsim trace (wrong magic; expected \"KVTRACE\\n\")");
  }
  std::uint32_t version = 0;
  for (int i = 0; i < 4; ++i) version |= static_cast<std::uint32_t>(preamble[8 + i]) << (8 * i);
  if (version != kFormatVersion) {
    return Status::error(path + ": unsupported trace format version " + std::to_string(version) +
                         " (this kvsim reads version " + std::to_string(kFormatVersion) + ")");
  }
  r.impl_->offset = sizeof preamble;
  StatusOr<bool> got = r.impl_->read_frame();
  if (!got.ok()) return got.status().with_context(path + ": header: ");
  if (!*got) return Status::error(path + ": header: missing (file ends after the preamble)");
  pb::Header h;
  if (!h.ParseFromString(r.impl_->frame)) {
    return Status::error(path + ": header: corrupt (unparsable message)");
  }
  if (h.format_version() != kFormatVersion) {
    return Status::error(path + ": header: field format_version: " + std::to_string(h.format_version()) +
                         ", expected " + std::to_string(kFormatVersion));
  }
  r.header_.source = h.source();
  r.header_.hash_seed = h.hash_seed();
  r.header_.hash_algo = h.hash_algo();
  r.header_.block_size = h.block_size();
  r.header_.tokenizer = h.tokenizer();
  r.header_.vocab_size = h.vocab_size();
  r.header_.notes = h.notes();
  if (Status s = check_header(r.header_); !s.ok()) return s.with_context(path + ": header: ");
  return r;
}

TraceReader::TraceReader(TraceReader&&) noexcept = default;
TraceReader& TraceReader::operator=(TraceReader&&) noexcept = default;
TraceReader::~TraceReader() = default;

namespace {

// The tokens a request's prompt segments expand to (out-of-range counts are caught later).
std::size_t segment_tokens(const pb::Request& m) {
  std::size_t n = 0;
  for (const pb::PromptSegment& s : m.prompt_segments()) {
    if (s.has_block() && s.block().num_tokens() > 0 && s.block().num_tokens() <= kMaxBlockRefTokens) {
      n += static_cast<std::size_t>(s.block().num_tokens());
    } else if (s.has_tokens()) {
      n += static_cast<std::size_t>(s.tokens().ids_size());
    }
  }
  return std::min<std::size_t>(n, static_cast<std::size_t>(kMaxPromptTokens));
}

}  // namespace

StatusOr<bool> TraceReader::next(TraceRequest* out) {
  if (!failed_.ok()) return failed_;
  const std::string where = path_ + ": request " + std::to_string(num_read_) + ": ";
  auto fail = [&](const std::string& message) -> StatusOr<bool> {
    failed_ = Status::error(where + message);
    return failed_;
  };
  StatusOr<bool> got = impl_->read_frame();
  if (!got.ok()) return fail(got.status().message());
  if (!*got) return false;
  pb::Request& m = impl_->request;
  if (!m.ParseFromString(impl_->frame)) return fail("corrupt record (unparsable message)");
  if (m.prompt_tokens_size() > 0 && m.prompt_segments_size() > 0) {
    return fail("field prompt: both prompt_tokens and prompt_segments are set");
  }
  if (m.prompt_tokens_size() > kMaxPromptTokens) {
    return fail("field prompt: more than " + std::to_string(kMaxPromptTokens) + " tokens");
  }
  if (m.output_tokens_size() > kMaxOutputTokens) {
    return fail("field output_tokens: more than " + std::to_string(kMaxOutputTokens) + " tokens");
  }
  out->id = m.id();
  out->arrival_time_us = m.arrival_time_us();
  out->prompt.assign(m.prompt_tokens().begin(), m.prompt_tokens().end());
  out->prompt_segments.clear();
  // Block tokens lie below kBlockTokenVocab: kept as references only where that is allowed.
  const bool keep = keep_segments_ && (header_.vocab_size == 0 || header_.vocab_size >= kBlockTokenVocab);
  if (!keep) out->prompt.reserve(out->prompt.size() + segment_tokens(m));  // exact: prompts live as long as requests
  std::int64_t prompt_size = out->prompt_size();
  for (int i = 0; i < m.prompt_segments_size(); ++i) {
    const pb::PromptSegment& s = m.prompt_segments(i);
    if (s.has_block()) {
      const int n = s.block().num_tokens();
      if (n <= 0 || n > kMaxBlockRefTokens) {
        return fail("field prompt_segments[" + std::to_string(i) + "].block.num_tokens: " + std::to_string(n) +
                    " is out of range");
      }
      if (prompt_size + n > kMaxPromptTokens) {
        return fail("field prompt: more than " + std::to_string(kMaxPromptTokens) + " tokens");
      }
      if (keep) {
        out->prompt_segments.push_back(PromptSegment::block(s.block().block_id(), n));
      } else {
        expand_block_tokens(s.block().block_id(), n, out->prompt);
      }
      prompt_size += n;
    } else if (s.has_tokens()) {
      if (prompt_size + s.tokens().ids_size() > kMaxPromptTokens) {
        return fail("field prompt: more than " + std::to_string(kMaxPromptTokens) + " tokens");
      }
      std::vector<TokenId>& into = keep ? out->prompt_segments.emplace_back().tokens : out->prompt;
      into.insert(into.end(), s.tokens().ids().begin(), s.tokens().ids().end());
      prompt_size += s.tokens().ids_size();
    } else {
      return fail("field prompt_segments[" + std::to_string(i) + "]: empty segment");
    }
  }
  if (Status s = check_tokens("prompt", out->prompt, header_.vocab_size); !s.ok()) return fail(s.message());
  for (const PromptSegment& seg : out->prompt_segments) {
    if (Status s = check_tokens("prompt", seg.tokens, header_.vocab_size); !s.ok()) return fail(s.message());
  }
  out->output_tokens.assign(m.output_tokens().begin(), m.output_tokens().end());
  out->output_length = m.output_length();
  out->cache_salt = m.cache_salt();
  out->lora_name = m.lora_name();
  out->priority = m.priority();
  out->session_id = m.session_id();
  out->retention_priority = m.has_retention_priority() ? m.retention_priority() : BlockRetention::kDefaultPriority;
  out->retention_duration = m.retention_duration();
  if (Status s = check_request(*out, prompt_size, num_read_ > 0, last_arrival_us_, header_.vocab_size, ids_); !s.ok()) {
    return fail(s.message());
  }
  last_arrival_us_ = out->arrival_time_us;
  ++num_read_;
  return true;
}

}  // namespace kv::trace
