// Fuzz targets convert_sharegpt, convert_mooncake, convert_azure, convert_burstgpt and
// convert_tokens: any bytes as the input file of `kvsim convert --from FORMAT`
// (traces/converters.h). The build names the format in KVSIM_FUZZ_FORMAT.
// Properties: a conversion never crashes or hangs; when it succeeds, its output is a trace the
// reader accepts in full, with as many requests as the conversion reports.
#include <string>

#include "fuzz/fuzz_target.h"
#include "traces/converters.h"
#include "traces/trace_io.h"

#ifndef KVSIM_FUZZ_FORMAT
#error "KVSIM_FUZZ_FORMAT must name the source format (sharegpt, mooncake, azure, burstgpt, tokens)"
#endif

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace kv::trace;
  static const SourceFormat format = parse_source_format(KVSIM_FUZZ_FORMAT).value();
  const std::string in = kv::fuzz::write_scratch("input", kv::fuzz::as_text(data, size));
  ConvertOptions options;
  options.max_requests = 2000;  // keeps one input's work small
  options.allow_empty = true;   // an input with no requests converts to an empty trace that reads back
  const std::string out = kv::fuzz::scratch_dir() + "/out.kvtrace";
  auto writer = TraceWriter::create(out, convert_header(format, in, options), true);
  FUZZ_CHECK(writer.ok(), writer.status().message());
  auto stats = convert_trace(format, in, options, *writer);
  if (!stats.ok()) {
    writer->abandon();
    return 0;
  }
  FUZZ_CHECK(writer->close().ok(), "close");
  FUZZ_CHECK(stats->requests == writer->num_written(), "request count");
  auto reader = TraceReader::open(out);
  FUZZ_CHECK(reader.ok(), reader.status().message());
  TraceRequest r;
  std::int64_t n = 0;
  while (true) {
    auto got = reader->next(&r);
    FUZZ_CHECK(got.ok(), "converted trace does not read back: " + got.status().message());
    if (!*got) break;
    ++n;
  }
  FUZZ_CHECK(n == stats->requests, "read back " + std::to_string(n) + " of " + std::to_string(stats->requests));
  return 0;
}
