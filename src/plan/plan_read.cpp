// JSON text -> Plan, strictly: every field type-checked, unknown and
// duplicate keys rejected, then validate(). Each error is one line,
// "<source>: <json path>: <problem>".

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "fields.hpp"
#include "internal.hpp"
#include "planner/core/json_path.hpp"

namespace planner::plan {
namespace {

using nlohmann::json;
using detail::one_line;

std::string describe(const json& v) {
  switch (v.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return fmt::format("a boolean ({})", v.get<bool>());
    case json::value_t::string: {
      auto s = v.get<std::string>();
      if (s.size() > 40) s = s.substr(0, 37) + "...";
      return fmt::format("a string (\"{}\")", s);
    }
    case json::value_t::array: return "an array";
    case json::value_t::object: return "an object";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
    case json::value_t::number_float: return fmt::format("a number ({})", v.dump());
    default: return "an unsupported value";
  }
}

class Reader {
 public:
  explicit Reader(std::string_view source) : source_(source) {}

  Error fail(std::string_view path, std::string_view msg) const {
    return Error{one_line(fmt::format("{}: {}: {}", source_, core::describe_json_path(path), msg))};
  }
  Error expected(std::string_view path, std::string_view what, const json& got) const {
    return fail(path, fmt::format("expected {}, got {}", what, describe(got)));
  }
  const std::string& source() const { return source_; }

 private:
  std::string source_;
};

// --- scalar and container readers: read(r, value, path, out) ---------------

Status read(const Reader& r, const json& v, const std::string& path, std::int64_t& out) {
  if (v.is_number_unsigned()) {
    if (v.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
      return r.fail(path, fmt::format("integer {} is out of range", v.dump()));
    out = static_cast<std::int64_t>(v.get<std::uint64_t>());
    return {};
  }
  if (!v.is_number_integer()) return r.expected(path, "an integer", v);
  out = v.get<std::int64_t>();
  return {};
}

Status read(const Reader& r, const json& v, const std::string& path, int& out) {
  std::int64_t x = 0;
  PLANNER_TRY_STATUS(read(r, v, path, x));
  if (x < std::numeric_limits<int>::min() || x > std::numeric_limits<int>::max())
    return r.fail(path, fmt::format("integer {} is out of range", x));
  out = static_cast<int>(x);
  return {};
}

Status read(const Reader& r, const json& v, const std::string& path, std::uint64_t& out) {
  if (v.is_number_unsigned()) {
    out = v.get<std::uint64_t>();
    return {};
  }
  if (v.is_number_integer()) return r.fail(path, fmt::format("expected a non-negative integer, got {}", v.dump()));
  return r.expected(path, "a non-negative integer", v);
}

Status read(const Reader& r, const json& v, const std::string& path, double& out) {
  if (!v.is_number()) return r.expected(path, "a number", v);
  out = v.get<double>();
  return {};
}

Status read(const Reader& r, const json& v, const std::string& path, bool& out) {
  if (!v.is_boolean()) return r.expected(path, "true or false", v);
  out = v.get<bool>();
  return {};
}

Status read(const Reader& r, const json& v, const std::string& path, std::string& out) {
  if (!v.is_string()) return r.expected(path, "a string", v);
  out = v.get<std::string>();
  return {};
}

Status read(const Reader& r, const json& v, const std::string& path, ScheduleStep& out) {
  if (!v.is_string()) return r.expected(path, "a step string like \"F3@c1\"", v);
  auto s = detail::parse_step(v.get_ref<const std::string&>());
  if (!s) return r.fail(path, s.error().message);
  out = *s;
  return {};
}

template <typename T>
Status read(const Reader& r, const json& v, const std::string& path, std::vector<T>& out);
template <typename T>
Status read(const Reader& r, const json& v, const std::string& path, std::map<std::string, T>& out);

// --- objects: every struct with a field list (fields.hpp) ----------------------

template <detail::HasFields T>
Status read(const Reader& r, const json& v, const std::string& path, T& out);

/// One JSON object being read: unknown keys are checked up front, then
/// fields are read required or optional.
class Obj {
 public:
  Obj(const Reader& r, const json& j, std::string path) : r_(r), j_(j), path_(std::move(path)) {}

  /// The value is an object whose keys are all in `allowed`.
  Status check(const std::vector<std::string_view>& allowed) const {
    if (!j_.is_object()) return r_.expected(path_, "an object", j_);
    for (const auto& [key, value] : j_.items()) {
      bool ok = false;
      for (auto a : allowed) ok = ok || key == a;
      if (!ok) {
        std::string list;
        for (auto a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
        return r_.fail(path_, fmt::format("unknown key '{}' (expected one of: {})", key, list));
      }
    }
    return {};
  }

  template <typename T>
  Status req(std::string_view key, T& out) const {
    auto it = j_.find(std::string(key));
    if (it == j_.end()) return r_.fail(core::json_path(path_, key), "missing required field");
    return read(r_, *it, core::json_path(path_, key), out);
  }

  /// Absent: `out` keeps its default.
  template <typename T>
  Status opt(std::string_view key, T& out) const {
    auto it = j_.find(std::string(key));
    if (it == j_.end()) return {};
    return read(r_, *it, core::json_path(path_, key), out);
  }

  template <typename T>
  Status opt(std::string_view key, std::optional<T>& out) const {
    auto it = j_.find(std::string(key));
    if (it == j_.end()) return {};
    T v{};
    PLANNER_TRY_STATUS(read(r_, *it, core::json_path(path_, key), v));
    out = v;
    return {};
  }

 private:
  const Reader& r_;
  const json& j_;
  std::string path_;
};

/// Reads a field list (fields.hpp) from one object, up to the first error.
class FieldReader {
 public:
  FieldReader(const Reader& r, const Obj& o, const std::string& path) : r_(r), o_(o), path_(path) {}

  template <typename T>
  void req(std::string_view key, T& out) {
    if (st_) st_ = o_.req(key, out);
  }
  template <typename T>
  void opt(std::string_view key, T& out, bool /*written*/ = true) {
    if (st_) st_ = o_.opt(key, out);
  }
  void devices(std::string_view key, Chunk& c) {
    if (!st_) return;
    std::optional<std::vector<int>> devices;  // optional: plans before it (filled from the mesh)
    st_ = o_.opt(key, devices);
    if (!st_) return;
    if (devices && devices->empty())
      st_ = r_.fail(core::json_path(path_, key), "is empty (list the stage's ranks, or leave the field out)");
    else if (devices)
      c.devices = std::move(*devices);
  }
  const Status& status() const { return st_; }

 private:
  const Reader& r_;
  const Obj& o_;
  const std::string& path_;
  Status st_;
};

template <detail::HasFields T>
Status read(const Reader& r, const json& v, const std::string& path, T& out) {
  detail::KeyList keys;
  detail::fields(keys, std::as_const(out));
  Obj o(r, v, path);
  PLANNER_TRY_STATUS(o.check(keys.keys));
  FieldReader fields(r, o, path);
  detail::fields(fields, out);
  return fields.status();
}

template <typename T>
Status read(const Reader& r, const json& v, const std::string& path, std::vector<T>& out) {
  if (!v.is_array()) return r.expected(path, "an array", v);
  out.clear();
  out.reserve(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    T x{};
    PLANNER_TRY_STATUS(read(r, v[i], fmt::format("{}[{}]", path, i), x));
    out.push_back(std::move(x));
  }
  return {};
}

template <typename T>
Status read(const Reader& r, const json& v, const std::string& path, std::map<std::string, T>& out) {
  if (!v.is_object()) return r.expected(path, "an object", v);
  out.clear();
  for (const auto& [key, value] : v.items()) {
    T x{};
    PLANNER_TRY_STATUS(read(r, value, core::json_path(path, key), x));
    out.emplace(key, std::move(x));
  }
  return {};
}

// --- parsing ------------------------------------------------------------------

/// Finds the first duplicate key while nlohmann parses (it would silently
/// keep the last one, hiding a typo in a hand-edited plan).
class DuplicateKeys {
 public:
  bool operator()(int /*depth*/, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start: frames_.push_back({false, {}, {}, 0}); break;
      case json::parse_event_t::array_start: frames_.push_back({true, {}, {}, 0}); break;
      case json::parse_event_t::key: {
        auto& f = frames_.back();
        const auto& k = parsed.get_ref<const std::string&>();
        if (!f.seen.insert(k).second && !found_) found_ = fmt::format("{}: duplicate key '{}'", parent_path(), k);
        f.key = k;
        break;
      }
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        frames_.pop_back();
        if (!frames_.empty() && frames_.back().array) ++frames_.back().index;
        break;
      case json::parse_event_t::value:
        if (!frames_.empty() && frames_.back().array) ++frames_.back().index;
        break;
    }
    return true;
  }
  const std::optional<std::string>& found() const { return found_; }

  /// The path of the value being read now (for errors the lexer raises
  /// before a value exists, such as a number overflowing a double).
  std::string current_path() const {
    std::string p;
    for (const auto& f : frames_) p = f.array ? p + fmt::format("[{}]", f.index) : core::json_path(p, f.key);
    return std::string(core::describe_json_path(p));
  }

 private:
  struct Frame {
    bool array;
    std::string key;
    std::set<std::string> seen;
    std::size_t index;
  };
  /// The path of the innermost (current) object.
  std::string parent_path() const {
    std::string p;
    for (std::size_t i = 0; i + 1 < frames_.size(); ++i) {
      const auto& f = frames_[i];
      p = f.array ? p + fmt::format("[{}]", f.index) : core::json_path(p, f.key);
    }
    return std::string(core::describe_json_path(p));
  }
  std::vector<Frame> frames_;
  std::optional<std::string> found_;
};

/// nlohmann's "[json.exception.parse_error.101] parse error at line 3,
/// column 5: syntax error ..." -> "line 3, column 5: syntax error ...".
std::string parse_message(const json::parse_error& e) {
  std::string what = e.what();
  const std::string marker = "parse error at ";
  if (auto at = what.find(marker); at != std::string::npos) return what.substr(at + marker.size());
  if (auto close = what.find("] "); close != std::string::npos) what = what.substr(close + 2);
  return "invalid JSON: " + what;
}

}  // namespace

Result<Plan> from_json(std::string_view text, std::string_view source) {
  const Reader r(source);
  json j;
  DuplicateKeys dup;
  try {
    j = json::parse(text.begin(), text.end(), std::ref(dup));
  } catch (const json::parse_error& e) {
    return Error{one_line(fmt::format("{}: {}", source, parse_message(e)))};
  } catch (const json::out_of_range& e) {
    // 406: a literal like 1e999 overflows to infinity.
    return Error{one_line(fmt::format("{}: {}: number is not finite (a literal like 1e999 overflows a double)",
                                      source, dup.current_path()))};
  } catch (const json::exception& e) {
    std::string what = e.what();
    if (auto close = what.find("] "); close != std::string::npos) what = what.substr(close + 2);
    return Error{one_line(fmt::format("{}: invalid JSON: {}", source, what))};
  }
  if (dup.found()) return Error{one_line(fmt::format("{}: {}", source, *dup.found()))};
  if (!j.is_object()) return r.expected("", "a JSON object (a planner plan)", j);

  // The version first: another version may have other keys.
  Plan p;
  auto fmt_it = j.find("format");
  if (fmt_it == j.end()) return r.fail("format", fmt::format("missing required field (expected \"{}\")", kFormat));
  PLANNER_TRY_STATUS(read(r, *fmt_it, "format", p.format));
  if (p.format != kFormat)
    return Error{one_line(fmt::format("{}: format '{}' is not supported (this planner reads {})", source, p.format,
                                      kFormat))};

  PLANNER_TRY_STATUS(read(r, j, "", p));

  if (auto s = validate(p); !s) return Error{one_line(fmt::format("{}: {}", source, s.error().message))};
  // Plans written before chunks listed their devices: from the mesh.
  for (auto& c : p.layout.chunks)
    if (c.devices.empty()) c.devices = stage_devices(p.layout, c.pipeline_rank);
  return p;
}

}  // namespace planner::plan
