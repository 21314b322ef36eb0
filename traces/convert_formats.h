// The converters behind convert_trace (converters.h), one source format per file:
// convert_sharegpt.cc, convert_mooncake.cc, convert_tokens.cc, convert_azure.cc and
// convert_burstgpt.cc. Internal to traces/; callers go through convert_trace.
//
// Each converter:
//   1. reads `input` once, front to back, and writes each request to `writer` as it is read;
//   2. stops after ConvertOptions::max_requests requests when it is above 0;
//   3. returns a Status naming the file, the line (or JSON record) and the field of the first
//      bad input, and writes nothing after it (the caller abandons the writer).
#pragma once

#include <string>

#include "model/util/status.h"
#include "traces/converters.h"
#include "traces/trace_io.h"

namespace kv::trace {

StatusOr<ConvertStats> convert_sharegpt(const std::string& input, const ConvertOptions& o, TraceWriter& writer);
StatusOr<ConvertStats> convert_mooncake(const std::string& input, const ConvertOptions& o, TraceWriter& writer);
StatusOr<ConvertStats> convert_tokens(const std::string& input, const ConvertOptions& o, TraceWriter& writer);
StatusOr<ConvertStats> convert_azure(const std::string& input, const ConvertOptions& o, TraceWriter& writer);
StatusOr<ConvertStats> convert_burstgpt(const std::string& input, const ConvertOptions& o, TraceWriter& writer);

}  // namespace kv::trace
