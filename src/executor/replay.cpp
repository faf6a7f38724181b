// Replays a rank's program over a communicator and times it
// (include/planner/executor/replay.hpp).

#include "planner/executor/replay.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstring>
#include <deque>
#include <map>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "replay_kernels.hpp"

namespace planner::executor {

using runtime::Communicator;
using Clock = std::chrono::steady_clock;

Result<StallSpec> parse_stall_spec(std::string_view text) {
  const auto bad = [&](std::string_view what) {
    return make_error("--fault '{}': {} (expected stall:RANK:STEP, crash:RANK:STEP or drop:RANK:N)", text, what);
  };
  StallSpec s;
  std::string_view rest;
  if (text.substr(0, 6) == "stall:") {
    rest = text.substr(6);
  } else if (text.substr(0, 6) == "crash:") {
    rest = text.substr(6);
    s.crash = true;
  } else {
    return bad("not a stall or crash");
  }
  const auto colon = rest.find(':');
  if (colon == std::string_view::npos) return bad("missing STEP");
  auto num = [](std::string_view s, int& out) {
    if (s.empty() || s.size() > 9) return false;
    out = 0;
    for (char c : s) {
      if (c < '0' || c > '9') return false;
      out = out * 10 + (c - '0');
    }
    return true;
  };
  if (!num(rest.substr(0, colon), s.rank)) return bad("RANK is not an integer >= 0");
  if (!num(rest.substr(colon + 1), s.step) || s.step < 1) return bad("STEP is not an integer >= 1");
  return s;
}

std::string blas_config() { return detail::blas_config(); }

double peak_rss_bytes() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) * 1024.0;  // Linux: kilobytes
}

namespace {

std::size_t words(std::int64_t bytes) { return static_cast<std::size_t>((bytes + 3) / 4); }

class Replayer {
 public:
  // `data` carries the plan's collectives and transfers (world, or the
  // device communicator); world agrees on step starts.
  Replayer(const RankProgram& prog, const plan::Plan& p, Communicator& world, Communicator& data,
           std::unique_ptr<detail::Backend> backend)
      : prog_(prog), p_(p), world_(world), data_(data), k_(std::move(backend)) {}

  detail::Backend& backend() { return *k_; }

  Status setup() {
    const int g_max = std::max(1, p_.cluster.devices);
    // g * ceil(n / g) <= n + g words
    PLANNER_TRY_STATUS(k_->allocate(prog_, words(prog_.max_comm_bytes) + static_cast<std::size_t>(g_max),
                                    std::max<std::size_t>(words(prog_.max_transfer_bytes), 1)));
    // Sub-communicators: every rank splits world the same way, in the same order.
    for (const auto& axes : prog_.groups) {
      int color = 0;
      for (const auto& a : p_.layout.mesh) {
        if (a.size <= 1 || axes.find(a.name) != std::string::npos) continue;
        color = color * a.size + coordinate(p_, world_.rank(), a.name);
      }
      auto c = data_.split(color, data_.rank());
      if (!c) return c.error();
      groups_[axes] = std::move(*c);
    }
    return {};
  }

  Result<std::array<double, kComponents + 1>> step(std::vector<MeasuredSpan>* record = nullptr) {
    std::array<double, kComponents + 1> t{};
    PLANNER_TRY_STATUS(world_.barrier());
    const auto t0 = Clock::now();
    step_start_ = t0;
    record_ = record;
    for (const auto& sp : prog_.steps) {
      label_ = fmt::format("{}{} c{}", sp.step.kind, sp.step.micro_batch, sp.step.chunk);
      for (const auto& task : sp.tasks) PLANNER_TRY_STATUS(run(task, t));
    }
    label_ = "flush";
    PLANNER_TRY_STATUS(flush_sends(-1, t));
    label_ = "finish";
    for (const auto& task : prog_.finish) PLANNER_TRY_STATUS(run(task, t));
    t[kComponents] = seconds(t0);
    record_ = nullptr;
    return t;
  }

 private:
  static double seconds(Clock::time_point since) {
    return std::chrono::duration<double>(Clock::now() - since).count();
  }

  Status run(const Task& task, std::array<double, kComponents + 1>& t) {
    const auto t0 = Clock::now();
    Status st;
    switch (task.kind) {
      case TaskKind::gemm: st = k_->gemm(task); break;
      case TaskKind::memory: st = k_->memory(task); break;
      case TaskKind::optimizer: st = k_->optimizer(task, prog_.optimizer_states, p_.training.optimizer); break;
      case TaskKind::collective: st = collective(task); break;
      case TaskKind::send:
        // Posted at once where the communicator allows it (the simulator's
        // model: a send does not hold up its sender), else deferred in the
        // rendezvous-safe order (program.hpp).
        if (data_.async_sends()) {
          st = data_.send_async(k_->send_buf(), words(task.bytes), core::DType::f32, peer(task), task.tag);
          ++posted_;
        } else {
          sends_.push_back(&task);
        }
        break;
      case TaskKind::recv: {
        st = flush_sends(task.order, t);
        if (st.ok())
          st = data_.recv(k_->recv_buf(), words(task.bytes), core::DType::f32, peer(task), task.tag);
        break;
      }
    }
    // Device work is enqueued: its time is taken once it is done.
    if (st.ok() && (task.kind == TaskKind::gemm || task.kind == TaskKind::memory || task.kind == TaskKind::optimizer))
      st = k_->finish();
    t[static_cast<std::size_t>(task.component)] += seconds(t0);
    note(t0, task.component);
    return st;
  }

  // Books [t0, now) to `c` in the recorded spans, extending the last span
  // when it is of the same component and schedule step.
  void note(Clock::time_point t0, Component c) {
    if (!record_) return;
    const double a = std::chrono::duration<double>(t0 - step_start_).count();
    const double b = std::chrono::duration<double>(Clock::now() - step_start_).count();
    if (!record_->empty() && record_->back().component == c && record_->back().label == label_) {
      record_->back().end_s = b;
      return;
    }
    record_->push_back(MeasuredSpan{a, b, c, label_});
  }

  int peer(const Task& task) const { return with_coordinate(p_, data_.rank(), "pp", task.peer_pp); }

  // Performs the deferred sends ordered before `before` (all when -1).
  Status flush_sends(std::int64_t before, std::array<double, kComponents + 1>& t) {
    const auto t0 = Clock::now();
    bool sent = false;
    while (!sends_.empty() && (before < 0 || sends_.front()->order < before)) {
      const Task& s = *sends_.front();
      sends_.pop_front();
      PLANNER_TRY_STATUS(data_.send(k_->send_buf(), words(s.bytes), core::DType::f32, peer(s), s.tag));
      sent = true;
    }
    if (before < 0 && posted_ > 0) {  // the step's posted sends complete
      PLANNER_TRY_STATUS(data_.wait_sends());
      posted_ = 0;
      sent = true;
    }
    // From a receive, the time is the receive's; at the end of the step, its own.
    if (before < 0 && sent) {
      t[static_cast<std::size_t>(Component::pp_comm)] += seconds(t0);
      note(t0, Component::pp_comm);
    }
    return {};
  }

  Status collective(const Task& task) {
    const auto it = groups_.find(task.axes);
    if (it == groups_.end()) return make_error("{}: no communicator for axes '{}'", task.op, task.axes);
    Communicator& c = *it->second;
    const auto g = static_cast<std::size_t>(c.size());
    const std::size_t n = words(task.bytes);
    if (n == 0) return {};
    const std::size_t per = (n + g - 1) / g;
    void* a = k_->comm_a();
    void* b = k_->comm_b();
    switch (task.coll) {
      case core::Collective::all_reduce: return c.all_reduce(a, n, core::DType::f32);
      case core::Collective::all_gather: return c.all_gather(a, b, per, core::DType::f32);
      case core::Collective::reduce_scatter: return c.reduce_scatter(b, a, per, core::DType::f32);
      case core::Collective::all_to_all: return c.all_to_all(a, b, per, core::DType::f32);
      case core::Collective::broadcast: return c.broadcast(a, n, core::DType::f32, 0);
      case core::Collective::send_recv: {
        // A ring shift: rank 0 receives first, the others send first, so the
        // blocking calls cannot wait on each other in a circle.
        const int r = c.rank(), size = c.size();
        const int next = (r + 1) % size, prev = (r + size - 1) % size;
        if (r == 0) {
          PLANNER_TRY_STATUS(c.recv(b, n, core::DType::f32, prev, 7));
          return c.send(a, n, core::DType::f32, next, 7);
        }
        PLANNER_TRY_STATUS(c.send(a, n, core::DType::f32, next, 7));
        return c.recv(b, n, core::DType::f32, prev, 7);
      }
    }
    return {};
  }

  const RankProgram& prog_;
  const plan::Plan& p_;
  Communicator& world_;
  Communicator& data_;
  std::unique_ptr<detail::Backend> k_;
  std::map<std::string, std::unique_ptr<Communicator>> groups_;
  std::deque<const Task*> sends_;
  int posted_ = 0;  // send_async calls not yet waited for
  std::vector<MeasuredSpan>* record_ = nullptr;
  Clock::time_point step_start_;
  std::string label_;
};

// Every rank's text gathered: lengths first, then the texts padded to the
// longest, both as opaque f32 words.
Result<std::vector<std::string>> gather_text(Communicator& world, const std::string& mine) {
  const auto n = static_cast<std::size_t>(world.size());
  const std::uint32_t len = static_cast<std::uint32_t>(mine.size());
  std::vector<std::uint32_t> lens(n);
  PLANNER_TRY_STATUS(world.all_gather(&len, lens.data(), 1, core::DType::f32));
  std::size_t longest = 0;
  for (auto l : lens) longest = std::max<std::size_t>(longest, l);
  const std::size_t w = (longest + 3) / 4 + 1;
  std::vector<char> padded(w * 4, '\0');
  std::copy(mine.begin(), mine.end(), padded.begin());
  std::vector<char> all(n * w * 4);
  PLANNER_TRY_STATUS(world.all_gather(padded.data(), all.data(), w, core::DType::f32));
  std::vector<std::string> out;
  for (std::size_t r = 0; r < n; ++r) out.emplace_back(all.data() + r * w * 4, lens[r]);
  return out;
}

}  // namespace

std::string encode_spans(const std::vector<MeasuredSpan>& spans) {
  std::string out;
  for (const auto& s : spans)
    out += fmt::format("{:.9f} {:.9f} {} {}\n", s.start_s, s.end_s, component_name(s.component), s.label);
  return out;
}

Result<std::vector<MeasuredSpan>> decode_spans(std::string_view text) {
  std::vector<MeasuredSpan> out;
  std::istringstream in{std::string(text)};
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    MeasuredSpan s;
    std::string comp;
    if (!(ls >> s.start_s >> s.end_s >> comp)) return make_error("measured span: malformed line '{}'", line);
    bool found = false;
    for (int c = 0; c < kComponents; ++c)
      if (component_name(static_cast<Component>(c)) == comp) {
        s.component = static_cast<Component>(c);
        found = true;
      }
    if (!found) return make_error("measured span: unknown component '{}'", comp);
    std::getline(ls >> std::ws, s.label);
    out.push_back(std::move(s));
  }
  return out;
}

Result<ReplayResult> replay(const RankProgram& prog, const plan::Plan& p, Communicator& world,
                            const ReplayOptions& opts) {
  if (opts.steps < 1) return make_error("--steps must be at least 1 (got {})", opts.steps);
  if (opts.warmup < 0) return make_error("--warmup must be at least 0 (got {})", opts.warmup);
  if ((opts.device == nullptr) != (opts.device_world == nullptr))
    return make_error("replay: a device needs its device communicator, and the other way round");
  std::unique_ptr<detail::Backend> backend = detail::host_backend();
  if (opts.device) {
    auto precision = runtime::parse_precision(p.training.precision);
    if (!precision) return make_error("training.precision: {}", precision.error().message);
    backend = detail::device_backend(*opts.device, *precision);
  }
  Replayer r(prog, p, world, opts.device_world ? *opts.device_world : world, std::move(backend));
  PLANNER_TRY_STATUS(r.setup());
  ReplayResult out;
  std::array<double, kComponents> sums{};
  for (int s = 1; s <= opts.warmup + opts.steps; ++s) {
    if (opts.stall && opts.stall->rank == world.rank() && opts.stall->step == s) {
      if (opts.stall->crash) std::raise(SIGSEGV);  // a rank that dies mid-run
      for (;;) std::this_thread::sleep_for(std::chrono::hours(1));  // a stopped rank
    }
    const bool last = s == opts.warmup + opts.steps;
    std::vector<MeasuredSpan> spans;
    auto t = r.step(opts.record && last ? &spans : nullptr);
    if (!t) return t.error();
    if (opts.record && last) {
      PLANNER_TRY(auto texts, gather_text(world, encode_spans(spans)));
      for (const auto& text : texts) {
        PLANNER_TRY(auto sp, decode_spans(text));
        out.spans.push_back(std::move(sp));
      }
    }
    // Max over ranks of the step and of each component: every rank's
    // doubles gathered as opaque pairs of f32 words, then the max taken here.
    std::vector<double> all(static_cast<std::size_t>(world.size()) * t->size());
    PLANNER_TRY_STATUS(world.all_gather(t->data(), all.data(), 2 * t->size(), core::DType::f32));
    std::array<double, kComponents + 1> v{};
    for (std::size_t r = 0; r < static_cast<std::size_t>(world.size()); ++r)
      for (std::size_t i = 0; i < v.size(); ++i) v[i] = std::max(v[i], all[r * v.size() + i]);
    if (s <= opts.warmup) continue;
    out.step_times_s.push_back(v[kComponents]);
    for (std::size_t i = 0; i < sums.size(); ++i) sums[i] += v[i];
  }
  for (std::size_t i = 0; i < sums.size(); ++i) out.components_s[i] = sums[i] / opts.steps;
  // Peak RSS of every rank: a double as two opaque f32 words per rank.
  const double mine = r.backend().peak_memory_bytes();
  std::vector<double> all(static_cast<std::size_t>(world.size()));
  PLANNER_TRY_STATUS(world.all_gather(&mine, all.data(), 2, core::DType::f32));
  out.peak_rss_bytes = std::move(all);
  return out;
}

}  // namespace planner::executor
