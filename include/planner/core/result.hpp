#pragma once
/// Errors as values. g++ 12 has no std::expected, so libraries return
/// Result<T>: either a value or an Error carrying one human-readable line that
/// names the file, op or field at fault. Only `main` turns an Error into an
/// exit status.

#include <cassert>
#include <string>
#include <utility>
#include <variant>

#include <fmt/format.h>

namespace planner {

/// Why an operation failed. `message` is one line, without a trailing newline.
struct Error {
  std::string message;
};

/// Builds an Error from a fmt format string.
template <typename... Args>
Error make_error(fmt::format_string<Args...> f, Args&&... args) {
  return Error{fmt::format(f, std::forward<Args>(args)...)};
}

/// A value of T or an Error.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}           // NOLINT: implicit by design
  Result(Error error) : v_(std::move(error)) {}       // NOLINT: implicit by design

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  /// Requires: ok().
  T& value() & { assert(ok()); return std::get<0>(v_); }
  const T& value() const& { assert(ok()); return std::get<0>(v_); }
  T&& value() && { assert(ok()); return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  /// Requires: !ok().
  const Error& error() const { assert(!ok()); return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

/// Success or an Error, for operations without a value.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error error) : error_(std::move(error)), failed_(true) {}  // NOLINT
  static Status success() { return {}; }
  bool ok() const { return !failed_; }
  explicit operator bool() const { return ok(); }
  /// Requires: !ok().
  const Error& error() const { assert(failed_); return error_; }

 private:
  Error error_;
  bool failed_ = false;
};

}  // namespace planner

/// Propagates an error: `PLANNER_TRY(auto x, f());` or `PLANNER_TRY_STATUS(g());`
#define PLANNER_CONCAT_INNER(a, b) a##b
#define PLANNER_CONCAT(a, b) PLANNER_CONCAT_INNER(a, b)
#define PLANNER_TRY(decl, expr)                                  \
  auto PLANNER_CONCAT(_planner_r_, __LINE__) = (expr);           \
  if (!PLANNER_CONCAT(_planner_r_, __LINE__).ok())               \
    return PLANNER_CONCAT(_planner_r_, __LINE__).error();        \
  decl = std::move(PLANNER_CONCAT(_planner_r_, __LINE__)).value()
#define PLANNER_TRY_STATUS(expr)                                 \
  do {                                                           \
    auto _planner_s = (expr);                                    \
    if (!_planner_s.ok()) return _planner_s.error();             \
  } while (0)
