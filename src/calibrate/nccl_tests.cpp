// nccl-tests output reader (nccl_tests.hpp).

#include "planner/calibrate/nccl_tests.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <cctype>

#include <fmt/format.h>

namespace planner::calibrate {
namespace {

using core::Collective;

std::vector<std::string> tokens(std::string_view line) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
    std::size_t j = i;
    while (j < line.size() && line[j] != ' ' && line[j] != '\t' && line[j] != '\r') ++j;
    if (j > i) out.emplace_back(line.substr(i, j - i));
    i = j;
  }
  return out;
}

std::optional<double> to_double(const std::string& s) {
  if (s.empty()) return std::nullopt;
  double v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::optional<std::int64_t> to_int(const std::string& s) {
  std::int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

/// Bytes per element of an nccl-tests type name; 0 when unknown.
int type_bytes(std::string_view t) {
  if (t == "float" || t == "int32" || t == "uint32") return 4;
  if (t == "double" || t == "int64" || t == "uint64") return 8;
  if (t == "half" || t == "bfloat16") return 2;
  if (t == "int8" || t == "uint8" || t == "f8e4m3" || t == "f8e5m2" || t == "fp8_e4m3" || t == "fp8_e5m2") return 1;
  return 0;
}

struct TestName {
  std::string_view test;
  std::optional<Collective> kind;  ///< nullopt: a test the cost model does not price
};

constexpr TestName kTests[] = {
    {"all_reduce_perf", Collective::all_reduce},   {"all_gather_perf", Collective::all_gather},
    {"reduce_scatter_perf", Collective::reduce_scatter}, {"alltoall_perf", Collective::all_to_all},
    {"broadcast_perf", Collective::broadcast},     {"sendrecv_perf", Collective::send_recv},
    {"reduce_perf", std::nullopt},                 {"gather_perf", std::nullopt},
    {"scatter_perf", std::nullopt},                {"hypercube_perf", std::nullopt},
};

/// The test named on the line: the longest name that appears as a word
/// ending ("./build/all_gather_perf", "all_gather_perf:").
const TestName* find_test(std::string_view line) {
  const TestName* best = nullptr;
  for (const TestName& t : kTests) {
    for (std::size_t at = line.find(t.test); at != std::string_view::npos; at = line.find(t.test, at + 1)) {
      const bool word_start = at == 0 || !(std::isalnum(static_cast<unsigned char>(line[at - 1])) || line[at - 1] == '_');
      const std::size_t end = at + t.test.size();
      const bool word_end = end == line.size() || !(std::isalnum(static_cast<unsigned char>(line[end])) || line[end] == '_');
      if (word_start && word_end && (!best || t.test.size() > best->test.size())) best = &t;
    }
  }
  return best;
}

struct Columns {
  int size = -1, count = -1, type = -1, redop = -1, root = -1;
  int time = -1, algbw = -1, busbw = -1, wrong = -1, time_ip = -1;
  std::size_t n = 0;
};

std::optional<Columns> header(const std::vector<std::string>& tok) {
  // tok[0] is "#"; names follow.
  Columns c;
  c.n = tok.size() - 1;
  int times = 0;
  for (std::size_t i = 1; i < tok.size(); ++i) {
    const int at = static_cast<int>(i - 1);
    const std::string& k = tok[i];
    if (k == "size") c.size = at;
    else if (k == "count") c.count = at;
    else if (k == "type") c.type = at;
    else if (k == "redop") c.redop = at;
    else if (k == "root") c.root = at;
    else if (k == "time") (times++ == 0 ? c.time : c.time_ip) = at;
    else if (k == "algbw" && c.algbw < 0) c.algbw = at;
    else if (k == "busbw" && c.busbw < 0) c.busbw = at;
    else if ((k == "#wrong" || k == "error") && c.wrong < 0) c.wrong = at;
  }
  if (c.size != 0 || c.count < 0 || c.type < 0 || c.time < 0 || c.algbw < 0 || c.busbw < 0) return std::nullopt;
  return c;
}

struct Building {
  NcclSection s;
  std::optional<Columns> cols;
  std::map<int, std::string> rank_host;
  std::string pending_test;
  bool named = false;
  int header_line = 0;
};

/// From the row shape, where it is unambiguous.
Result<Collective> infer_kind(const NcclSection& s, std::string_view origin) {
  const NcclRow& r = s.rows.front();
  const int w = type_bytes(r.type);
  if (w == 0) return make_error("{}:{}: unknown data type '{}'", origin, r.line, r.type);
  const double ratio = r.size.value / (static_cast<double>(r.count) * w);
  const bool reduces = r.redop != "none";
  if (std::abs(ratio - 1) < 1e-9) {
    if (reduces && r.root < 0) return Collective::all_reduce;
    if (!reduces && r.root >= 0) return Collective::broadcast;
  } else if (std::abs(ratio - s.ranks) < 1e-9 && reduces) {
    return Collective::reduce_scatter;
  }
  return make_error("{}:{}: cannot tell which collective this table measures (no test name such as "
                    "'all_gather_perf' before it, and the rows fit several); add the nccl-tests command line",
                    origin, s.line);
}

Status finish(Building& b, std::string_view origin, std::vector<NcclSection>& out) {
  NcclSection& s = b.s;
  if (!b.cols) return Status::success();  // a section without a table: nothing measured
  if (s.rows.empty()) return make_error("{}:{}: the table has no rows with a size above 0", origin, b.header_line);
  if (b.rank_host.empty())
    return make_error("{}:{}: no device lines ('#  Rank  0 Group  0 Pid ... on HOST device ...'): cannot tell the rank "
                      "count",
                      origin, s.line);
  s.ranks = static_cast<int>(b.rank_host.size());
  std::map<std::string, int> per_host;
  for (const auto& [rank, host] : b.rank_host) {
    if (per_host[host]++ == 0) s.hosts.push_back(host);
  }
  s.ranks_per_node = per_host.begin()->second;
  for (const auto& [host, n] : per_host)
    if (n != s.ranks_per_node)
      return make_error("{}:{}: hosts run different rank counts ({} on {}, {} on {}); the cost model places ranks evenly",
                        origin, s.line, s.ranks_per_node, per_host.begin()->first, n, host);
  if (!b.named) {
    PLANNER_TRY(s.kind, infer_kind(s, origin));
  }
  if (s.kind == Collective::send_recv && s.ranks != 2)
    return make_error("{}:{}: sendrecv_perf with {} ranks: the cost model prices send/recv between 2 ranks", origin,
                      s.line, s.ranks);
  if (s.ranks < 2) return make_error("{}:{}: one rank: nothing crosses a link", origin, s.line);
  out.push_back(std::move(s));
  return Status::success();
}

}  // namespace

Result<std::vector<NcclSection>> parse_nccl_tests(std::string_view text, std::string_view origin) {
  std::vector<NcclSection> out;
  Building b;
  std::string pending;  // a test name seen before the section that uses it
  bool started = false;
  int line_no = 0;
  // Opens the current section at `at` (once), taking a pending test name.
  auto open = [&](int at) {
    if (started) return;
    started = true;
    b.s.line = at;
    if (pending.empty()) return;
    for (const TestName& t : kTests)
      if (t.test == pending) b.s.kind = *t.kind;
    b.s.test = pending;
    b.named = true;
    pending.clear();
  };
  std::size_t pos = 0;
  while (pos <= text.size()) {
    std::size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view line = text.substr(pos, nl - pos);
    pos = nl + 1;
    ++line_no;
    if (line.find('\0') != std::string_view::npos)
      return make_error("{}:{}: binary data (a NUL byte): not nccl-tests output", origin, line_no);
    auto tok = tokens(line);
    if (tok.empty()) continue;
    if (const TestName* t = find_test(line)) {
      if (!t->kind)
        return make_error("{}:{}: {} is not a collective the cost model prices (all_reduce, all_gather, "
                          "reduce_scatter, alltoall, broadcast, sendrecv)",
                          origin, line_no, t->test);
      if (started && b.s.rows.empty() && !b.named) {
        b.s.kind = *t->kind;
        b.s.test = std::string(t->test);
        b.named = true;
      } else {
        pending = std::string(t->test);
      }
    }
    const bool comment = tok[0][0] == '#';
    if (comment) {
      // "# nThread 1 nGpus 1 ..." opens a run.
      if (tok.size() >= 2 && (tok[1] == "nThread" || tok[0] == "#nThread")) {
        PLANNER_TRY_STATUS(finish(b, origin, out));
        b = Building{};
        started = false;
        open(line_no);
        continue;
      }
      // "#  Rank  3 Group  0 Pid 123 on node01 device 3 [0x4a] NVIDIA A100"
      if (tok.size() >= 5 && tok[1] == "Rank") {
        auto on = std::find(tok.begin(), tok.end(), "on");
        auto rank = to_int(tok[2]);
        if (!rank || on == tok.end() || on + 1 == tok.end())
          return make_error("{}:{}: device line without 'Rank N ... on HOST'", origin, line_no);
        open(line_no);
        b.rank_host[static_cast<int>(*rank)] = *(on + 1);
        if (*rank == 0) {
          auto bracket = std::find_if(on, tok.end(), [](const std::string& s) { return s.front() == '['; });
          std::string name;
          if (bracket != tok.end())
            for (auto it = bracket + 1; it != tok.end(); ++it) name += (name.empty() ? "" : " ") + *it;
          b.s.device = name;
        }
        continue;
      }
      if (auto c = header(tok); c && tok.size() >= 2 && tok[1] == "size") {
        open(line_no);
        if (!b.s.rows.empty()) return make_error("{}:{}: a second table header inside one run", origin, line_no);
        b.cols = c;
        b.header_line = line_no;
      }
      continue;
    }
    // Data rows start with a number; anything else (NCCL INFO logs) is skipped.
    if (!to_double(tok[0])) continue;
    if (!b.cols)
      return make_error("{}:{}: a result row before any table header ('#  size  count  type ...')", origin, line_no);
    const Columns& c = *b.cols;
    if (tok.size() != c.n)
      return make_error("{}:{}: {} columns, the header at line {} has {}", origin, line_no, tok.size(),
                        b.header_line, c.n);
    NcclRow r;
    r.line = line_no;
    auto size = to_double(tok[c.size]);
    auto count = to_int(tok[c.count]);
    auto time = to_double(tok[c.time]);
    auto algbw = to_double(tok[c.algbw]);
    auto busbw = to_double(tok[c.busbw]);
    if (!size || *size < 0 || *size != std::floor(*size))
      return make_error("{}:{}: size '{}' is not a whole number of bytes", origin, line_no, tok[c.size]);
    if (!count || *count < 0) return make_error("{}:{}: count '{}' is not a whole number", origin, line_no, tok[c.count]);
    if (!time || *time < 0) return make_error("{}:{}: time '{}' is not a number of microseconds", origin, line_no, tok[c.time]);
    if (!algbw || !busbw) return make_error("{}:{}: algbw/busbw is not a number", origin, line_no);
    if (c.wrong >= 0) {
      auto wrong = to_double(tok[c.wrong]);
      const bool counts = tok[c.wrong].find_first_not_of("0123456789") == std::string::npos;
      if (counts && wrong && *wrong > 0)
        return make_error("{}:{}: #wrong = {}: the run produced wrong results; not fitted", origin, line_no,
                          tok[c.wrong]);
    }
    if (*size == 0) continue;
    if (!(*time > 0)) return make_error("{}:{}: time 0 for {} bytes", origin, line_no, tok[c.size]);
    r.size = Bytes(*size);
    r.count = *count;
    r.type = tok[c.type];
    r.redop = c.redop >= 0 ? tok[c.redop] : "none";
    if (c.root >= 0) {
      auto root = to_int(tok[c.root]);
      if (!root) return make_error("{}:{}: root '{}' is not a whole number", origin, line_no, tok[c.root]);
      r.root = static_cast<int>(*root);
    }
    r.time = Seconds(*time * 1e-6);
    r.algbw_GBps = *algbw;
    r.busbw_GBps = *busbw;
    if (c.time_ip >= 0)
      if (auto ip = to_double(tok[c.time_ip]); ip && *ip > 0) r.time_in_place = Seconds(*ip * 1e-6);
    b.s.rows.push_back(std::move(r));
  }
  PLANNER_TRY_STATUS(finish(b, origin, out));
  if (out.empty())
    return make_error("{}: no nccl-tests table found (expected a header '#  size  count  type  redop  root  time  algbw  "
                      "busbw ...' followed by rows)",
                      origin);
  return out;
}

}  // namespace planner::calibrate
