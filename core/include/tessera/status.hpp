// tessera/status.hpp: error values that cross the plugin boundary.
//
// Contract: no exception ever crosses a plugin boundary. Every call into a
// plugin that can fail returns a Status (or a Result<T>); a plugin converts its
// own exceptions into a Status at the edge (see guard() below).
#pragma once

#include <cassert>
#include <exception>
#include <new>
#include <string>
#include <utility>
#include <variant>

namespace tessera {

enum class StatusCode : int {
  ok = 0,
  invalid_argument,  // the caller passed something wrong (bad parameter, bad shape)
  not_found,         // a named thing (tensor, plugin, file) does not exist
  out_of_memory,     // a pool or budget is exhausted; the caller may retry later
  unsupported,       // valid request this implementation cannot serve
  corrupt_data,      // a file or buffer violates its format
  internal,          // a bug or an unexpected exception
  unavailable,       // a resource the run needs cannot be read now (a missing or unreadable file)
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return {}; }
  bool ok() const { return code_ == StatusCode::ok; }
  explicit operator bool() const { return ok(); }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

 private:
  StatusCode code_ = StatusCode::ok;
  std::string message_;
};

inline Status InvalidArgument(std::string m) { return {StatusCode::invalid_argument, std::move(m)}; }
inline Status NotFound(std::string m) { return {StatusCode::not_found, std::move(m)}; }
inline Status OutOfMemory(std::string m) { return {StatusCode::out_of_memory, std::move(m)}; }
inline Status Unsupported(std::string m) { return {StatusCode::unsupported, std::move(m)}; }
inline Status CorruptData(std::string m) { return {StatusCode::corrupt_data, std::move(m)}; }
inline Status Internal(std::string m) { return {StatusCode::internal, std::move(m)}; }
inline Status Unavailable(std::string m) { return {StatusCode::unavailable, std::move(m)}; }

// A value or the Status saying why there is none (std::expected arrives only in C++23).
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  // From a failed Status. A Result made from an OK Status would hold neither a
  // value nor an error: a programming error, caught by the assert in debug
  // builds and turned into an internal error elsewhere, never read as a value.
  Result(Status status) : v_(std::move(status)) {  // NOLINT: implicit by design
    assert(!std::get<Status>(v_).ok() && "Result made from an OK Status");
    if (std::get<Status>(v_).ok()) v_ = Status(StatusCode::internal, "a Result was made from an OK Status (a bug)");
  }
  bool ok() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return ok(); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }

 private:
  std::variant<T, Status> v_;
};

// The Status for an exception with message `what`. Never throws: if even the
// message cannot be copied (no memory), a message short enough for
// std::string's inline buffer stands in.
inline Status exception_status(const char* what) noexcept {
  try {
    return Internal(what);
  } catch (...) {
    return Status(StatusCode::internal, "exception");
  }
}

// Runs `body` (returning Status or Result<T>) and turns any exception into a
// Status: out_of_memory for std::bad_alloc, internal otherwise. Used at the
// edge of every plugin entry point so that no exception crosses the boundary.
template <typename Fn>
auto guard(Fn&& body) noexcept -> decltype(body()) {
  using Returned = decltype(body());
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return Returned(Status(StatusCode::out_of_memory, "out of memory"));  // inline buffer: no allocation
  } catch (const std::exception& e) {
    return Returned(exception_status(e.what()));
  } catch (...) {
    return Returned(Status(StatusCode::internal, "unknown exception"));
  }
}

}  // namespace tessera

// Propagate a failed Status to the caller.
#define TESSERA_RETURN_IF_ERROR(expr)            \
  do {                                           \
    ::tessera::Status tessera_status_ = (expr);  \
    if (!tessera_status_.ok()) return tessera_status_; \
  } while (0)
