// Plan -> canonical JSON text.
//
// Canonical means: keys in the order the structs declare their fields, maps
// sorted by key, two-space indent, one trailing newline, integers as
// integers, doubles in nlohmann's shortest round-trip form with -0.0 written
// as 0.0. The layout is nlohmann's dump(2) except that each pipeline rank's
// program (an array of "F3@c1" steps) is written on one line, so a
// 1024-device plan stays small. Same plan, same bytes.

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include "fields.hpp"
#include "internal.hpp"

namespace planner::plan {
namespace {

using ojson = nlohmann::ordered_json;

/// -0.0 -> 0.0 (NaN and infinities are rejected by validate(); nlohmann
/// would write them as null, which from_json rejects).
double canonical(double x) { return x == 0 ? 0.0 : x; }

/// The JSON of a plan value: structs through their field lists
/// (fields.hpp), doubles canonical, maps sorted by key, steps as "F3@c1".
class Writer {
 public:
  template <typename T>
    requires std::is_arithmetic_v<T>
  ojson value(T x) {
    if constexpr (std::is_floating_point_v<T>) return canonical(x);
    else return x;
  }
  ojson value(const std::string& s) { return s; }
  ojson value(const ScheduleStep& s) { return detail::step_text(s); }
  template <typename T>
  ojson value(const std::vector<T>& v) {
    ojson a = ojson::array();
    for (const auto& x : v) a.push_back(value(x));
    return a;
  }
  template <typename T>
  ojson value(const std::map<std::string, T>& m) {
    ojson o = ojson::object();
    for (const auto& [k, x] : m) o[k] = value(x);
    return o;
  }
  template <detail::HasFields T>
  ojson value(const T& s) {
    if constexpr (std::is_same_v<T, Layout>) layout_ = &s;  // chunks list the ranks of its mesh
    Fields f{*this, ojson()};
    detail::fields(f, s);
    return std::move(f.o);
  }

 private:
  // Writes a field list into one object.
  struct Fields {
    Writer& w;
    ojson o;
    template <typename T>
    void req(std::string_view key, const T& x) {
      o[std::string(key)] = w.value(x);
    }
    template <typename T>
    void opt(std::string_view key, const T& x, bool written = true) {
      if (written) o[std::string(key)] = w.value(x);
    }
    template <typename T>
    void opt(std::string_view key, const std::optional<T>& x) {
      if (x) o[std::string(key)] = w.value(*x);
    }
    void devices(std::string_view key, const Chunk& c) {
      o[std::string(key)] = w.value(c.devices.empty() ? stage_devices(*w.layout_, c.pipeline_rank) : c.devices);
    }
  };

  const Layout* layout_ = nullptr;
};

/// Writes the layout below into one string. Scalars go through one
/// nlohmann serializer, exactly as dump(-1) writes them (invalid UTF-8 in
/// strings becomes U+FFFD instead of throwing), without a string per value.
class Emitter {
 public:
  explicit Emitter(std::string& out)
      : out_(out),
        serializer_(nlohmann::detail::output_adapter<char, std::string>(out), ' ', ojson::error_handler_t::replace) {}

  /// nlohmann's dump(2) layout, except that the arrays inside
  /// "schedule_steps" and the span objects inside "spans" (the timeline)
  /// are written on one line.
  void emit(const ojson& v, int indent, bool compact_children) {
    const std::string pad(static_cast<std::size_t>(indent) + 2, ' ');
    if (v.is_object()) {
      if (v.empty()) {
        out_ += "{}";
        return;
      }
      out_ += "{\n";
      bool first = true;
      for (const auto& [key, value] : v.items()) {
        if (!first) out_ += ",\n";
        first = false;
        out_ += pad;
        emit_key(key);
        out_ += ": ";
        emit(value, indent + 2, key == "schedule_steps" || key == "spans");
      }
      out_ += '\n';
      out_.append(static_cast<std::size_t>(indent), ' ');
      out_ += '}';
    } else if (v.is_array()) {
      if (v.empty()) {
        out_ += "[]";
        return;
      }
      out_ += "[\n";
      bool first = true;
      for (const auto& e : v) {
        if (!first) out_ += ",\n";
        first = false;
        out_ += pad;
        if (compact_children && e.is_array()) {
          out_ += '[';
          bool first_step = true;
          for (const auto& s : e) {
            if (!first_step) out_ += ", ";
            first_step = false;
            scalar(s);
          }
          out_ += ']';
        } else if (compact_children && e.is_object()) {
          out_ += '{';
          bool first_key = true;
          for (const auto& [k, x] : e.items()) {
            if (!first_key) out_ += ", ";
            first_key = false;
            emit_key(k);
            out_ += ": ";
            scalar(x);
          }
          out_ += '}';
        } else {
          emit(e, indent + 2, false);
        }
      }
      out_ += '\n';
      out_.append(static_cast<std::size_t>(indent), ' ');
      out_ += ']';
    } else {
      scalar(v);
    }
  }

 private:
  void scalar(const ojson& v) { serializer_.dump(v, false, false, 0); }
  /// A key: printable ASCII other than '"' and '\\' needs no escape (the
  /// struct field names, op and profile names); anything else as a string.
  void emit_key(const std::string& key) {
    const bool plain = std::all_of(key.begin(), key.end(), [](char ch) {
      return ch >= 0x20 && ch < 0x7f && ch != '"' && ch != '\\';
    });
    if (!plain) return scalar(ojson(key));
    out_ += '"';
    out_ += key;
    out_ += '"';
  }

  std::string& out_;
  nlohmann::detail::serializer<ojson> serializer_;
};

}  // namespace

std::string to_json(const Plan& p) {
  const ojson o = Writer().value(p);
  std::string out;
  Emitter(out).emit(o, 0, false);
  out += '\n';
  return out;
}

}  // namespace planner::plan
