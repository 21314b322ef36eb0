// Status: the channel for bad input and I/O errors (never for an expected shortage such as a
// full cache, which is an empty optional, and never for a bug, which is KV_CHECK).
// A Status is ok, or carries a message that already names the file, line, record or field.
// StatusOr<T> holds a value or a non-ok Status.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace kv {

class [[nodiscard]] Status {
 public:
  Status() = default;
  static Status error(std::string message) { return Status(std::move(message)); }
  bool ok() const { return !failed_; }
  const std::string& message() const { return message_; }
  // Prefixes context ("trace.bin: record 12: ") to an error; ok stays ok.
  Status with_context(const std::string& context) const { return ok() ? *this : Status(context + message_); }

 private:
  explicit Status(std::string message) : failed_(true), message_(std::move(message)) {}
  bool failed_ = false;
  std::string message_;
};

template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(T value) : v_(std::move(value)) {}         // NOLINT: implicit by design
  StatusOr(Status status) : v_(std::move(status)) {}  // NOLINT: must be an error
  bool ok() const { return std::holds_alternative<T>(v_); }
  Status status() const { return ok() ? Status() : std::get<Status>(v_); }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace kv
