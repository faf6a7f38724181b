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

/// The calls a field list makes (fields.hpp: req, opt, devices), each turned
/// into one `member(key, value)` of Self; `devices` lists a chunk's devices
/// from Self's `layout()` when the chunk gives none.
template <typename Self>
struct MemberCalls {
  template <typename T>
  void req(std::string_view key, const T& x) {
    self().member(key, x);
  }
  template <typename T>
  void opt(std::string_view key, const T& x, bool written = true) {
    if (written) self().member(key, x);
  }
  template <typename T>
  void opt(std::string_view key, const std::optional<T>& x) {
    if (x) self().member(key, *x);
  }
  void devices(std::string_view key, const Chunk& c) {
    self().member(key, c.devices.empty() ? stage_devices(self().layout(), c.pipeline_rank) : c.devices);
  }

 private:
  Self& self() { return static_cast<Self&>(*this); }
};

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
    Fields f(*this);
    detail::fields(f, s);
    return std::move(f.o);
  }

 private:
  // Writes a field list into one object.
  struct Fields : MemberCalls<Fields> {
    explicit Fields(Writer& writer) : w(writer) {}
    Writer& w;
    ojson o;
    template <typename T>
    void member(std::string_view key, const T& x) {
      o[std::string(key)] = w.value(x);
    }
    const Layout& layout() const { return *w.layout_; }
  };

  const Layout* layout_ = nullptr;
};

/// Writes a plan straight into one string, in nlohmann's dump(2) layout
/// except that the arrays inside "schedule_steps" and the span objects
/// inside "spans" (the timeline) are written on one line. Scalars go
/// through one nlohmann serializer, exactly as dump(-1) writes them (invalid
/// UTF-8 in strings becomes U+FFFD instead of throwing); no JSON tree is
/// built but for a non-scalar value inside a one-line element (then Writer's
/// tree, dumped compactly, as before).
class Stream {
 public:
  explicit Stream(std::string& out)
      : out_(out),
        serializer_(nlohmann::detail::output_adapter<char, std::string>(out), ' ', ojson::error_handler_t::replace) {}

  template <typename T>
    requires std::is_arithmetic_v<T>
  void put(T x, int, bool) {
    if constexpr (std::is_floating_point_v<T>) scalar(ojson(canonical(x)));
    else scalar(ojson(x));
  }
  void put(const std::string& s, int, bool) { scalar(ojson(s)); }
  void put(const ScheduleStep& s, int, bool) { scalar(ojson(detail::step_text(s))); }
  template <typename T>
  void put(const std::vector<T>& v, int indent, bool compact_children) {
    if (v.empty()) {
      out_ += "[]";
      return;
    }
    const std::string pad(static_cast<std::size_t>(indent) + 2, ' ');
    out_ += "[\n";
    bool first = true;
    for (const auto& e : v) {
      if (!first) out_ += ",\n";
      first = false;
      out_ += pad;
      if (compact_children) one_line(e, indent + 2);
      else put(e, indent + 2, false);
    }
    out_ += '\n';
    out_.append(static_cast<std::size_t>(indent), ' ');
    out_ += ']';
  }
  template <typename T>
  void put(const std::map<std::string, T>& m, int indent, bool) {
    Object o(*this, indent);
    for (const auto& [k, x] : m) o.member(k, x);
    o.close();
  }
  template <detail::HasFields T>
  void put(const T& s, int indent, bool) {
    if constexpr (std::is_same_v<T, Layout>) layout_ = &s;
    Object o(*this, indent);
    detail::fields(o, s);
    o.close();
  }

 private:
  // An object's members, written as they come (the struct field order).
  struct Object : MemberCalls<Object> {
    Object(Stream& stream, int at) : w(stream), indent(at) {}
    Stream& w;
    int indent;
    bool first = true;
    template <typename T>
    void member(std::string_view key, const T& x) {
      w.out_ += first ? "{\n" : ",\n";
      first = false;
      w.out_.append(static_cast<std::size_t>(indent) + 2, ' ');
      w.emit_key(key);
      w.out_ += ": ";
      w.put(x, indent + 2, key == "schedule_steps" || key == "spans");
    }
    const Layout& layout() const { return *w.layout_; }
    void close() {
      if (first) {
        w.out_ += "{}";
        return;
      }
      w.out_ += '\n';
      w.out_.append(static_cast<std::size_t>(indent), ' ');
      w.out_ += '}';
    }
  };
  // A struct's members on one line, each value dumped compactly.
  struct Inline : MemberCalls<Inline> {
    explicit Inline(Stream& stream) : w(stream) {}
    Stream& w;
    bool first = true;
    template <typename T>
    void member(std::string_view key, const T& x) {
      if (!first) w.out_ += ", ";
      first = false;
      w.emit_key(key);
      w.out_ += ": ";
      w.compact(x);
    }
    const Layout& layout() const { return *w.layout_; }
  };

  // An element of a "schedule_steps" or "spans" array: an array or object on
  // one line ("[a, b]", "{\"k\": v, ...}"), anything else as usual.
  template <typename T>
  void one_line(const std::vector<T>& v, int) {
    out_ += '[';
    bool first = true;
    for (const auto& x : v) {
      if (!first) out_ += ", ";
      first = false;
      compact(x);
    }
    out_ += ']';
  }
  template <typename T>
  void one_line(const std::map<std::string, T>& m, int) {
    out_ += '{';
    bool first = true;
    for (const auto& [k, x] : m) {
      if (!first) out_ += ", ";
      first = false;
      emit_key(k);
      out_ += ": ";
      compact(x);
    }
    out_ += '}';
  }
  template <detail::HasFields T>
  void one_line(const T& s, int) {
    out_ += '{';
    Inline f(*this);
    detail::fields(f, s);
    out_ += '}';
  }
  template <typename T>
  void one_line(const T& x, int indent) {
    put(x, indent, false);
  }
  // A value dumped without whitespace (nlohmann's dump(-1)).
  template <typename T>
  void compact(const T& x) {
    Writer w;
    scalar(w.value(x));
  }

  void scalar(const ojson& v) { serializer_.dump(v, false, false, 0); }
  /// A key: printable ASCII other than '"' and '\\' needs no escape (the
  /// struct field names, op and profile names); anything else as a string.
  void emit_key(std::string_view key) {
    const bool plain = std::all_of(key.begin(), key.end(), [](char ch) {
      return ch >= 0x20 && ch < 0x7f && ch != '"' && ch != '\\';
    });
    if (!plain) return scalar(ojson(std::string(key)));
    out_ += '"';
    out_ += key;
    out_ += '"';
  }

  std::string& out_;
  nlohmann::detail::serializer<ojson> serializer_;
  const Layout* layout_ = nullptr;
};

}  // namespace

std::string to_json(const Plan& p) {
  std::string out;
  Stream(out).put(p, 0, false);
  out += '\n';
  return out;
}

}  // namespace planner::plan
