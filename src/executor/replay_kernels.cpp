// The replay's kernels: OpenBLAS GEMMs, streaming memory traffic, the
// optimizer update (src/executor/replay_kernels.hpp).

#include "replay_kernels.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include <sys/resource.h>

#include <cblas.h>

namespace planner::executor::detail {

namespace {
// Keeps the reads of run_memory from being optimised away.
volatile float g_sink = 0.0f;
}  // namespace

void allocate(Buffers& b, const RankProgram& prog) {
  // Small non-zero values: no denormals, no overflow in repeated GEMMs.
  b.gemm.assign(static_cast<std::size_t>(std::max<std::int64_t>(prog.max_gemm_floats, 1)), 1e-3f);
  const auto mem = static_cast<std::size_t>(std::max(prog.max_memory_bytes / 4.0, 1.0));
  b.mem_src.assign(mem, 1e-3f);
  b.mem_dst.assign(mem, 0.0f);
  const auto n = static_cast<std::size_t>(std::max<std::int64_t>(prog.parameters, 1));
  b.params.assign(n, 1e-2f);
  b.grads.assign(n, 1e-4f);
  b.state.assign(static_cast<std::size_t>(std::max<std::int64_t>(prog.optimizer_elements, 1)) *
                     static_cast<std::size_t>(std::max(prog.optimizer_states, 1)),
                 0.0f);
}

void run_gemm(Buffers& b, const Task& t) {
  const auto m = static_cast<int>(t.m), n = static_cast<int>(t.n), k = static_cast<int>(t.k);
  const std::size_t sa = static_cast<std::size_t>(t.m * t.k), sb = static_cast<std::size_t>(t.k * t.n);
  const std::size_t sc = static_cast<std::size_t>(t.m * t.n);
  float* a = b.gemm.data();
  float* bb = a + static_cast<std::size_t>(t.batch) * sa;
  float* c = bb + static_cast<std::size_t>(t.batch) * sb;
  for (std::int64_t i = 0; i < t.batch; ++i)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a + static_cast<std::size_t>(i) * sa, k,
                bb + static_cast<std::size_t>(i) * sb, n, 0.0f, c + static_cast<std::size_t>(i) * sc, n);
}

void run_memory(Buffers& b, const Task& t) {
  // The bytes both read and written move as a copy source -> destination;
  // the reads beyond that are copies into an L1-sized scratch block (only
  // the source side reaches memory), the writes beyond it are zero fills.
  // glibc's memcpy/memset pick the host's widest vector loads and stores at
  // run time, as the framework kernels a replay stands for are vectorised.
  // (A plain `acc += s[i]` read loop is one dependent scalar add per element,
  // about 3 GB/s; a scalar fill about 15 GB/s: both far below the triad
  // rate the cost model prices memory-bound ops at.)
  const auto chunk_of = [](double left, std::size_t cap) {
    return static_cast<std::size_t>(std::min(left, static_cast<double>(cap)));
  };
  const double both = std::min(t.read_bytes, t.write_bytes);
  const std::size_t cap = b.mem_src.size() * sizeof(float);
  for (double left = both; left >= 1.0;) {
    const std::size_t n = chunk_of(left, cap);
    std::memcpy(b.mem_dst.data(), b.mem_src.data(), n);
    left -= static_cast<double>(n);
  }
  constexpr std::size_t kScratch = 16 * 1024;
  alignas(64) static thread_local unsigned char scratch[kScratch];
  for (double left = t.read_bytes - both; left >= 1.0;) {
    const std::size_t n = chunk_of(left, cap);
    const auto* src = reinterpret_cast<const unsigned char*>(b.mem_src.data());
    for (std::size_t off = 0; off < n; off += kScratch) std::memcpy(scratch, src + off, std::min(kScratch, n - off));
    left -= static_cast<double>(n);
  }
  g_sink = static_cast<float>(scratch[0]);
  for (double left = t.write_bytes - both; left >= 1.0;) {
    const std::size_t n = chunk_of(left, cap);
    std::memset(b.mem_dst.data(), 0, n);
    left -= static_cast<double>(n);
  }
}

void run_optimizer(Buffers& b, const Task& t, int states, double lr, double beta1, double beta2, double eps,
                   double momentum) {
  const auto n = static_cast<std::size_t>(std::min<std::int64_t>(t.elements, static_cast<std::int64_t>(b.params.size())));
  float* p = b.params.data();
  const float* g = b.grads.data();
  const auto flr = static_cast<float>(lr);
  if (states == 2) {  // Adam
    float* m = b.state.data();
    float* v = m + n;
    const auto b1 = static_cast<float>(beta1), b2 = static_cast<float>(beta2), e = static_cast<float>(eps);
    for (std::size_t i = 0; i < n; ++i) {
      m[i] = b1 * m[i] + (1 - b1) * g[i];
      v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];
      p[i] -= flr * m[i] / (std::sqrt(v[i]) + e);
    }
  } else if (states == 1) {  // SGD with momentum
    float* v = b.state.data();
    const auto mu = static_cast<float>(momentum);
    for (std::size_t i = 0; i < n; ++i) {
      v[i] = mu * v[i] + g[i];
      p[i] -= flr * v[i];
    }
  } else {
    for (std::size_t i = 0; i < n; ++i) p[i] -= flr * g[i];
  }
}

std::string blas_config() {
  const char* c = openblas_get_config();
  return c ? std::string(c) : std::string("unknown");
}

namespace {

double host_peak_rss() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) * 1024.0;  // Linux: kilobytes
}

class HostBackend final : public Backend {
 public:
  Status allocate(const RankProgram& prog, std::size_t comm_words, std::size_t transfer_words) override {
    detail::allocate(buf_, prog);
    comm_a_.assign(comm_words, 1e-3f);
    comm_b_.assign(comm_words, 0.0f);
    send_.assign(transfer_words, 1e-3f);
    recv_.assign(transfer_words, 0.0f);
    return {};
  }
  Status gemm(const Task& t) override {
    run_gemm(buf_, t);
    return {};
  }
  Status memory(const Task& t) override {
    run_memory(buf_, t);
    return {};
  }
  Status optimizer(const Task& t, int states, const plan::OptimizerSettings& o) override {
    run_optimizer(buf_, t, states, o.learning_rate, o.beta1, o.beta2, o.epsilon, o.momentum);
    return {};
  }
  Status finish() override { return {}; }
  void* comm_a() override { return comm_a_.data(); }
  void* comm_b() override { return comm_b_.data(); }
  void* send_buf() override { return send_.data(); }
  void* recv_buf() override { return recv_.data(); }
  double peak_memory_bytes() override { return host_peak_rss(); }

 private:
  Buffers buf_;
  std::vector<float> comm_a_, comm_b_, send_, recv_;
};

}  // namespace

std::unique_ptr<Backend> host_backend() { return std::make_unique<HostBackend>(); }

}  // namespace planner::executor::detail
