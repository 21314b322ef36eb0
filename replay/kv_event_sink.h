// KvEventSink: where a replay's KV-cache events go (BlockStored / BlockRemoved /
// AllBlocksCleared, model/kv_events.h). The Replayer drains KvCacheManager::take_events() after
// each step and hands the non-empty batch to the sink, stamped with the simulated clock, as
// vLLM's scheduler hands a KVEventBatch to its EventPublisher.
//
// Two writers: a JSONL file (one batch a line) and a ZeroMQ PUB socket in vLLM's wire format
// (vllm/distributed/kv_events.py: multipart [topic, 8-byte big-endian sequence number, msgpack
// KVEventBatch], plus an optional ROUTER socket that replays missed sequence numbers).
//
// Invariants:
//   1. A sink only observes: enabling one changes no decision (the digest stays the same).
//   2. Batches are written in step order; sequence numbers start at 0 and rise by one a batch.
//   3. close() flushes everything (and puts the JSONL file in place); publish() after close()
//      is an error.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model/kv_events.h"
#include "model/util/status.h"

namespace kv::replay {

class KvEventSink {
 public:
  virtual ~KvEventSink() = default;
  // One batch: the events of `step`, at simulated time `ts_seconds`.
  virtual Status publish(std::int64_t step, double ts_seconds, const std::vector<KvEvent>& events) = 0;
  virtual Status close() = 0;
};

// One JSON object per batch and line: {"step", "ts", "events": [{"type": "BlockStored", ...}]},
// hashes as lowercase hex. Written as a files::AtomicFile: PATH appears, whole, only when
// close() succeeds; a sink destroyed without close() leaves PATH as it was. An existing PATH is
// refused unless `overwrite` (kvsim replay --force).
StatusOr<std::unique_ptr<KvEventSink>> make_jsonl_event_sink(const std::string& path, bool overwrite);

struct ZmqSinkOptions {
  std::string endpoint;         // PUB: binds if it holds '*', "::", or is ipc:// / inproc://; else connects
  std::string replay_endpoint;  // ROUTER (bound), empty: none
  std::string topic;
  int buffer_steps = 10000;  // batches kept for replay
  int hwm = 100000;          // PUB high-water mark
  int linger_ms = 0;         // close(): keep answering replay requests this long
  int startup_ms = 0;        // open(): wait this long for subscribers to connect
  int data_parallel_rank = 0;
};

StatusOr<std::unique_ptr<KvEventSink>> make_zmq_event_sink(const ZmqSinkOptions& options);

// Where a replay's events go: the "KV events" rows of the option table write here. Either
// writer turns the core's event queue on; `zmq` is used when its endpoint is set.
struct KvEventOptions {
  std::string file;             // JSONL, one batch a step (--kv-events)
  ZmqSinkOptions zmq;           // PUB endpoint in vLLM's wire format, its ROUTER, topic, ...
  bool observed = false;        // not an option: a caller's own sink (the Python module)
  bool overwrite_file = false;  // not an option: kvsim replay --force (replace --kv-events FILE)

  bool writes() const { return !file.empty() || !zmq.endpoint.empty(); }
  bool enabled() const { return observed || writes(); }
  Status validate() const;  // a replay endpoint needs a PUB endpoint; the error names the option
};

// Sends every batch to each sink in turn.
std::unique_ptr<KvEventSink> make_fanout_event_sink(std::vector<std::unique_ptr<KvEventSink>> sinks);

// vLLM's KVEventBatch as msgpack (msgspec array_like, tagged): [ts, [events...], dp_rank].
std::string encode_kv_event_batch(double ts_seconds, const std::vector<KvEvent>& events, int data_parallel_rank);

}  // namespace kv::replay
