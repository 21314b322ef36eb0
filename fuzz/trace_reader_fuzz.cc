// Fuzz target trace_reader: any bytes as a .kvtrace file (traces/trace_io.h).
// Properties: the reader never crashes; every request it returns keeps the invariants of
// traces/trace.h; and what it accepted, the writer accepts too (the two share their rules), so
// a trace copied request by request reads back the same.
#include <string>

#include "fuzz/fuzz_target.h"
#include "traces/trace_io.h"

namespace {

constexpr int kMaxRequests = 2000;  // keeps one input's work small

void check_invariants(const kv::trace::TraceHeader& h, const kv::trace::TraceRequest& r, std::int64_t prev_us) {
  using namespace kv::trace;
  FUZZ_CHECK(!r.prompt.empty() && static_cast<std::int64_t>(r.prompt.size()) <= kMaxPromptTokens, r.id);
  FUZZ_CHECK(r.arrival_time_us >= prev_us && r.arrival_time_us <= kMaxArrivalTimeUs, r.id);
  FUZZ_CHECK(r.output_length >= 0 && r.output_length <= kMaxOutputTokens, r.id);
  for (kv::TokenId t : r.prompt) FUZZ_CHECK(t >= 0 && (h.vocab_size == 0 || t < h.vocab_size), r.id);
  for (kv::TokenId t : r.output_tokens) FUZZ_CHECK(t >= 0 && (h.vocab_size == 0 || t < h.vocab_size), r.id);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace kv::trace;
  const std::string path = kv::fuzz::write_scratch("in.kvtrace", kv::fuzz::as_text(data, size));
  auto reader = TraceReader::open(path);
  if (!reader.ok()) return 0;
  auto writer = TraceWriter::create(kv::fuzz::scratch_dir() + "/copy.kvtrace", reader->header(), true);
  FUZZ_CHECK(writer.ok(), writer.status().message());
  TraceRequest r;
  std::int64_t prev_us = 0;
  int n = 0;
  for (; n < kMaxRequests; ++n) {
    auto got = reader->next(&r);
    if (!got.ok() || !*got) break;
    check_invariants(reader->header(), r, prev_us);
    prev_us = r.arrival_time_us;
    kv::Status written = writer->write(r);
    FUZZ_CHECK(written.ok(), "the reader accepted what the writer rejects: " + written.message());
  }
  FUZZ_CHECK(writer->close().ok(), "close");
  auto copy = TraceReader::open(writer->path());
  FUZZ_CHECK(copy.ok(), copy.status().message());
  TraceRequest again;
  for (int i = 0; i < n; ++i) {
    auto got = copy->next(&again);
    FUZZ_CHECK(got.ok() && *got, got.ok() ? "copy ends early" : got.status().message());
  }
  return 0;
}
