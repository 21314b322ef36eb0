// ProgressLine: a count that updates in place on standard error while a long command runs
// ("  120000 requests  41000/s"), at most five times a second, only on a terminal (or when
// forced). Display only: it reads the wall clock and never touches what the command computes.
// Every command's --progress takes the same three modes (check_progress_mode, progress_shown).
#pragma once

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

#include "model/util/status.h"

namespace kv::cli {

// --progress: "auto" (on a terminal), "on" or "off"; anything else is named in the error.
inline Status check_progress_mode(const std::string& mode) {
  if (mode == "auto" || mode == "on" || mode == "off") return Status();
  return Status::error("--progress must be auto, on or off, got '" + mode + "'");
}

// Whether a command with --progress `mode` shows its progress.
inline bool progress_shown(const std::string& mode) {
  return mode == "on" || (mode == "auto" && isatty(STDERR_FILENO));
}

class ProgressLine {
 public:
  // mode: "auto" (on a terminal), "on" or "off".
  ProgressLine(std::string unit, const std::string& mode)
      : unit_(std::move(unit)),
        enabled_(progress_shown(mode)),
        start_(std::chrono::steady_clock::now()),
        last_(start_) {}
  ~ProgressLine() { done(); }

  void update(std::int64_t count) {
    if (!enabled_) return;
    const auto now = std::chrono::steady_clock::now();
    if (now - last_ < std::chrono::milliseconds(200)) return;
    last_ = now;
    const double s = std::chrono::duration<double>(now - start_).count();
    std::fprintf(stderr, "\r  %lld %s  %.0f/s   ", static_cast<long long>(count), unit_.c_str(),
                 s > 0 ? static_cast<double>(count) / s : 0.0);
    shown_ = true;
  }
  void done() {
    if (shown_) std::fprintf(stderr, "\r%60s\r", "");
    shown_ = false;
  }

 private:
  std::string unit_;
  bool enabled_;
  std::chrono::steady_clock::time_point start_, last_;
  bool shown_ = false;
};

}  // namespace kv::cli
