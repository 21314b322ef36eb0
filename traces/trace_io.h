// TraceWriter and TraceReader: streaming access to trace files (format in trace.proto).
//
// Neither ever holds more than one record in memory. The reader validates as it goes and turns
// every bad input into a Status naming the file, the request index (0-based, header excluded),
// the byte offset and the field: missing file, wrong magic or version, truncated or corrupt
// frame (CRC mismatch, unparsable message), empty prompt, negative or decreasing arrival time,
// duplicate request id, negative token ids or lengths, token ids not below the header's
// vocab_size, an unknown hash_algo, values beyond the limits of trace.h. After an error, next()
// keeps failing.
// The writer writes to a temporary file beside the path and renames it into place only in a
// successful close() (files/output_file.h): an existing file is never replaced unless created
// with overwrite = true, and even then only by a complete trace; abandon(), a failed close()
// or destruction without close() leave the path as it was (a failed conversion loses nothing).
// Neither class is thread-safe; both are movable, not copyable.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>

#include "files/output_file.h"
#include "model/util/status.h"
#include "traces/request_id_set.h"
#include "traces/trace.h"

namespace kv::trace {

class TraceWriter {
 public:
  static StatusOr<TraceWriter> create(const std::string& path, const TraceHeader& header, bool overwrite = false);
  TraceWriter(TraceWriter&&) noexcept;
  TraceWriter& operator=(TraceWriter&&) noexcept;
  ~TraceWriter();  // abandons if close() was not called

  // Checks the request (same rules as the reader) and appends it.
  Status write(const TraceRequest& request);
  // Flushes, syncs and renames the file into place; it exists only when this returns ok.
  Status close();
  // Drops what was written; the path keeps its previous content.
  void abandon();

  std::int64_t num_written() const { return num_written_; }
  // Called after every request written (progress display); may be empty.
  std::function<void(std::int64_t num_written)> on_write;
  std::int64_t bytes_written() const { return bytes_written_; }
  const std::string& path() const { return path_; }

 private:
  TraceWriter() = default;
  Status write_frame(const std::string& bytes);

  std::string path_;
  std::unique_ptr<files::AtomicFile> file_;  // open until close() or abandon()
  std::int64_t num_written_ = 0;
  std::int64_t bytes_written_ = 0;
  std::int64_t last_arrival_us_ = 0;
  std::int64_t vocab_size_ = 0;  // the header's: token ids must be below it when > 0
  RequestIdSet ids_;             // every id written so far
};

class TraceReader {
 public:
  static StatusOr<TraceReader> open(const std::string& path);
  TraceReader(TraceReader&&) noexcept;
  TraceReader& operator=(TraceReader&&) noexcept;
  ~TraceReader();

  const TraceHeader& header() const { return header_; }
  // Reads the next request into *out: true, false at a clean end of file, or an error.
  StatusOr<bool> next(TraceRequest* out);
  // From now on, a record stored as prompt segments comes back as its prompt_segments (prompt
  // left empty, every check done as for the expansion) when the header's vocab_size admits
  // every block token; otherwise, and for records stored as tokens, prompt is expanded.
  void keep_prompt_segments() { keep_segments_ = true; }
  // Requests returned so far.
  std::int64_t num_read() const { return num_read_; }
  const std::string& path() const { return path_; }

 private:
  struct Impl;
  TraceReader() = default;

  std::string path_;
  TraceHeader header_;
  std::unique_ptr<Impl> impl_;
  std::int64_t num_read_ = 0;
  std::int64_t last_arrival_us_ = 0;
  RequestIdSet ids_;  // every id read so far (duplicate detection)
  Status failed_;     // sticky: once not ok, every next() returns it
  bool keep_segments_ = false;
};

// CRC-32C (Castagnoli) of `size` bytes, as stored after each frame.
std::uint32_t crc32c(const void* data, std::size_t size);

}  // namespace kv::trace
