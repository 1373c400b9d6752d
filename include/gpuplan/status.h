// Status / Result<T>: expected failures as values, each with a location and a field.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace gpuplan {

enum class StatusCode { kOk = 0, kBadInput = 1, kInfeasible = 2, kInternal = 3 };

// Where a bad value came from: "job.yaml:12" plus the dotted key "training.seq_len".
struct Location {
  std::string file;  // Default: "" (command line or built-in).
  int line = 0;      // Default: 0 (unknown line).
  std::string key;   // Default: "" (no particular key).
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  static Status Ok() { return Status(); }
  static Status BadInput(Location loc, std::string reason) {
    return Status(StatusCode::kBadInput, std::move(loc), std::move(reason));
  }
  static Status Infeasible(std::string reason) {
    return Status(StatusCode::kInfeasible, {}, std::move(reason));
  }
  static Status Internal(std::string reason) {
    return Status(StatusCode::kInternal, {}, std::move(reason));
  }
  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const Location& location() const { return loc_; }
  const std::string& reason() const { return reason_; }
  // "file:line: key: reason" (parts that are unknown are left out).
  std::string ToString() const;
  int ExitCode() const { return static_cast<int>(code_); }

 private:
  Status(StatusCode code, Location loc, std::string reason)
      : code_(code), loc_(std::move(loc)), reason_(std::move(reason)) {}
  StatusCode code_ = StatusCode::kOk;
  Location loc_;
  std::string reason_;
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design.
  Result(Status status) : v_(std::move(status)) {}  // NOLINT
  bool ok() const { return std::holds_alternative<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T& value() & { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  const T& operator*() const& { return value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }
  Status status() const { return ok() ? Status::Ok() : std::get<Status>(v_); }

 private:
  std::variant<T, Status> v_;
};

#define GPUPLAN_RETURN_IF_ERROR(expr)      \
  do {                                     \
    ::gpuplan::Status _st = (expr);        \
    if (!_st.ok()) return _st;             \
  } while (0)

}  // namespace gpuplan
