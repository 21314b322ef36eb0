// The ZeroMQ writer of replay/kv_event_sink.h: vLLM's ZmqEventPublisher
// (vllm/distributed/kv_events.py) in C++. PUB frames are [topic, seq as 8 bytes big-endian,
// msgpack KVEventBatch]; the ROUTER socket answers a request [identity, "", start seq] with
// every buffered batch from that seq on ([identity, "", seq, payload] each) and then the end
// marker [identity, "", -1 as 8 bytes, ""].
// The PUB socket is used only by the replaying thread, the ROUTER socket only by its own
// service thread; the replay buffer is shared under a mutex.
#include <array>
#include <chrono>
#include <deque>
#include <mutex>
#include <thread>
#include <zmq.hpp>

#include "replay/kv_event_sink.h"

namespace kv::replay {

namespace {

std::array<char, 8> big_endian(std::int64_t v) {
  std::array<char, 8> out{};
  auto u = static_cast<std::uint64_t>(v);
  for (int i = 7; i >= 0; --i) {
    out[static_cast<std::size_t>(i)] = static_cast<char>(u & 0xffU);
    u >>= 8;
  }
  return out;
}

std::int64_t from_big_endian(const zmq::message_t& m) {
  std::uint64_t u = 0;
  const auto* p = static_cast<const unsigned char*>(m.data());
  for (std::size_t i = 0; i < m.size() && i < 8; ++i) u = (u << 8) | p[i];
  return static_cast<std::int64_t>(u);
}

// vLLM's heuristic: bind a wildcard, IPv6 or local endpoint; connect to anything else.
bool should_bind(const std::string& endpoint) {
  return endpoint.find('*') != std::string::npos || endpoint.find("::") != std::string::npos ||
         endpoint.rfind("ipc://", 0) == 0 || endpoint.rfind("inproc://", 0) == 0;
}

class ZmqSink : public KvEventSink {
 public:
  explicit ZmqSink(const ZmqSinkOptions& o) : options_(o), pub_(ctx_, zmq::socket_type::pub) {}

  ~ZmqSink() override { (void)close(); }

  Status open() {
    try {
      pub_.set(zmq::sockopt::sndhwm, options_.hwm);
      pub_.set(zmq::sockopt::linger, 2000);
      if (should_bind(options_.endpoint))
        pub_.bind(options_.endpoint);
      else
        pub_.connect(options_.endpoint);
      if (!options_.replay_endpoint.empty()) {
        router_ = zmq::socket_t(ctx_, zmq::socket_type::router);
        router_.set(zmq::sockopt::linger, 0);
        // A replay may be thousands of batches: never drop one silently at the high-water mark
        // (ZeroMQ's ROUTER would); wait for the reader, and give up on one gone for 5 s.
        router_.set(zmq::sockopt::sndhwm, options_.hwm);
        router_.set(zmq::sockopt::router_mandatory, 1);
        router_.set(zmq::sockopt::sndtimeo, 5000);
        router_.bind(options_.replay_endpoint);
        service_ = std::thread([this] { serve_replays(); });
      }
      // ZeroMQ drops what a PUB socket sends before a subscriber has joined.
      std::this_thread::sleep_for(std::chrono::milliseconds(options_.startup_ms));
    } catch (const zmq::error_t& e) {
      return Status::error("--kv-events-zmq: " + options_.endpoint +
                           (options_.replay_endpoint.empty() ? "" : " / " + options_.replay_endpoint) + ": " +
                           e.what());
    }
    return {};
  }

  Status publish(std::int64_t, double ts_seconds, const std::vector<KvEvent>& events) override {
    if (closed_) return Status::error("--kv-events-zmq: publish after close");
    std::string payload = encode_kv_event_batch(ts_seconds, events, options_.data_parallel_rank);
    const std::int64_t seq = next_seq_++;
    const std::array<char, 8> seq_bytes = big_endian(seq);
    try {
      (void)pub_.send(zmq::buffer(options_.topic), zmq::send_flags::sndmore);
      (void)pub_.send(zmq::buffer(seq_bytes), zmq::send_flags::sndmore);
      (void)pub_.send(zmq::buffer(payload), zmq::send_flags::none);
    } catch (const zmq::error_t& e) {
      return Status::error(std::string("--kv-events-zmq: send failed: ") + e.what());
    }
    std::lock_guard<std::mutex> lock(mu_);
    buffer_.emplace_back(seq, std::move(payload));
    while (static_cast<int>(buffer_.size()) > options_.buffer_steps) buffer_.pop_front();
    return {};
  }

  // Keeps answering replay requests for linger_ms, then closes both sockets.
  Status close() override {
    if (closed_) return {};
    closed_ = true;
    if (service_.joinable()) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        stop_at_ = std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.linger_ms);
        stopping_ = true;
      }
      service_.join();
    }
    pub_.close();
    router_.close();
    return {};
  }

 private:
  bool should_stop() {
    std::lock_guard<std::mutex> lock(mu_);
    return stopping_ && std::chrono::steady_clock::now() >= stop_at_;
  }

  void serve_replays() {
    while (!should_stop()) {
      zmq::pollitem_t item{router_.handle(), 0, ZMQ_POLLIN, 0};
      zmq::poll(&item, 1, std::chrono::milliseconds(20));
      if ((item.revents & ZMQ_POLLIN) != 0) serve_one();
    }
  }

  // One request: [identity, "", start seq]; anything else is dropped, as vLLM does.
  void serve_one() {
    std::vector<zmq::message_t> frames;
    while (true) {
      zmq::message_t m;
      if (!router_.recv(m, zmq::recv_flags::dontwait)) break;
      const bool more = m.more();
      frames.push_back(std::move(m));
      if (!more) break;
    }
    if (frames.size() != 3) return;
    const std::int64_t start = from_big_endian(frames[2]);
    const std::string identity = frames[0].to_string();
    std::vector<std::pair<std::int64_t, std::string>> batches;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (const auto& b : buffer_) {
        if (b.first >= start) batches.push_back(b);
      }
    }
    try {
      for (const auto& [seq, payload] : batches) send_reply(identity, big_endian(seq), payload);
      send_reply(identity, big_endian(-1), "");
    } catch (const zmq::error_t&) {
      // The requester went away or stopped reading: drop the rest of its replay, as vLLM does.
    }
  }

  void send_reply(const std::string& identity, const std::array<char, 8>& seq, const std::string& payload) {
    (void)router_.send(zmq::buffer(identity), zmq::send_flags::sndmore);
    (void)router_.send(zmq::message_t(), zmq::send_flags::sndmore);
    (void)router_.send(zmq::buffer(seq), zmq::send_flags::sndmore);
    (void)router_.send(zmq::buffer(payload), zmq::send_flags::none);
  }

  ZmqSinkOptions options_;
  zmq::context_t ctx_;
  zmq::socket_t pub_;
  zmq::socket_t router_;  // unset without a replay endpoint
  std::thread service_;
  std::mutex mu_;
  std::deque<std::pair<std::int64_t, std::string>> buffer_;  // the last buffer_steps batches, seq order
  bool stopping_ = false;                                    // guarded by mu_
  std::chrono::steady_clock::time_point stop_at_;            // guarded by mu_
  std::int64_t next_seq_ = 0;
  bool closed_ = false;
};

}  // namespace

StatusOr<std::unique_ptr<KvEventSink>> make_zmq_event_sink(const ZmqSinkOptions& options) {
  if (options.endpoint.empty()) return Status::error("--kv-events-zmq: an endpoint is required");
  auto sink = std::make_unique<ZmqSink>(options);
  if (Status s = sink->open(); !s.ok()) return s;
  return std::unique_ptr<KvEventSink>(std::move(sink));
}

}  // namespace kv::replay
