// The replay's device backend (replay_kernels.hpp): device buffers from a
// runtime::Device, GEMMs in the plan's precision, the traffic and
// optimizer kernels. No CUDA header: the device is injected.

#include <algorithm>
#include <vector>

#include "replay_kernels.hpp"

namespace planner::executor::detail {
namespace {

class DeviceBackend final : public Backend {
 public:
  DeviceBackend(runtime::Device& dev, core::Precision p) : dev_(dev), p_(p) {}
  ~DeviceBackend() override {
    for (void* b : owned_) dev_.release(b);
  }

  Status allocate(const RankProgram& prog, std::size_t comm_words, std::size_t transfer_words) override {
    const auto e = static_cast<std::size_t>(core::precision_bytes(p_));
    const auto gemm_elems = static_cast<std::size_t>(std::max<std::int64_t>(prog.max_gemm_floats, 1));
    PLANNER_TRY(gemm_, take(gemm_elems * e));
    PLANNER_TRY_STATUS(dev_.fill(gemm_, gemm_elems, p_, 1e-3f));  // small: no overflow in fp16
    mem_capacity_ = static_cast<std::size_t>(std::max(prog.max_memory_bytes, 16.0));
    PLANNER_TRY(mem_src_, take(mem_capacity_));
    PLANNER_TRY(mem_dst_, take(mem_capacity_));
    PLANNER_TRY_STATUS(dev_.fill(mem_src_, mem_capacity_ / 4, core::Precision::fp32, 1e-3f));
    params_n_ = static_cast<std::size_t>(std::max<std::int64_t>(prog.parameters, 1));
    PLANNER_TRY(void* params, take(params_n_ * 4));
    PLANNER_TRY(void* grads, take(params_n_ * 4));
    params_ = static_cast<float*>(params);
    grads_ = static_cast<float*>(grads);
    PLANNER_TRY_STATUS(dev_.fill(params_, params_n_, core::Precision::fp32, 1e-2f));
    PLANNER_TRY_STATUS(dev_.fill(grads_, params_n_, core::Precision::fp32, 1e-4f));
    const auto states = static_cast<std::size_t>(std::max<std::int64_t>(prog.optimizer_elements, 1)) *
                        static_cast<std::size_t>(std::max(prog.optimizer_states, 1));
    PLANNER_TRY(void* state, take(states * 4));
    state_ = static_cast<float*>(state);
    PLANNER_TRY(comm_a_, take(comm_words * 4));
    PLANNER_TRY(comm_b_, take(comm_words * 4));
    PLANNER_TRY_STATUS(dev_.fill(comm_a_, comm_words, core::Precision::fp32, 1e-3f));
    PLANNER_TRY(send_, take(transfer_words * 4));
    PLANNER_TRY(recv_, take(transfer_words * 4));
    PLANNER_TRY_STATUS(dev_.fill(send_, transfer_words, core::Precision::fp32, 1e-3f));
    return dev_.synchronize();
  }

  Status gemm(const Task& t) override {
    const auto e = static_cast<std::int64_t>(core::precision_bytes(p_));
    auto* a = static_cast<std::byte*>(gemm_);
    std::byte* b = a + t.batch * t.m * t.k * e;
    std::byte* c = b + t.batch * t.k * t.n * e;
    return dev_.gemm(p_, t.batch, t.m, t.n, t.k, a, b, c);
  }
  Status memory(const Task& t) override {
    return dev_.traffic(mem_src_, mem_dst_, mem_capacity_, t.read_bytes, t.write_bytes);
  }
  Status optimizer(const Task& t, int states, const plan::OptimizerSettings& o) override {
    runtime::OptimizerUpdate u;
    u.states = states;
    u.lr = static_cast<float>(o.learning_rate);
    u.beta1 = static_cast<float>(o.beta1);
    u.beta2 = static_cast<float>(o.beta2);
    u.eps = static_cast<float>(o.epsilon);
    u.momentum = static_cast<float>(o.momentum);
    const auto n = std::min<std::size_t>(static_cast<std::size_t>(std::max<std::int64_t>(t.elements, 0)), params_n_);
    return dev_.optimizer(params_, grads_, state_, n, u);
  }
  Status finish() override { return dev_.synchronize(); }
  void* comm_a() override { return comm_a_; }
  void* comm_b() override { return comm_b_; }
  void* send_buf() override { return send_; }
  void* recv_buf() override { return recv_; }
  double peak_memory_bytes() override {
    // Every buffer lives until the end, so the memory in use now is the peak.
    auto m = dev_.memory();
    return m ? m->total.value - m->free.value : 0.0;
  }

 private:
  Result<void*> take(std::size_t bytes) {
    PLANNER_TRY(void* p, dev_.allocate(bytes));
    owned_.push_back(p);
    return p;
  }

  runtime::Device& dev_;
  core::Precision p_;
  std::vector<void*> owned_;
  void* gemm_ = nullptr;
  void *mem_src_ = nullptr, *mem_dst_ = nullptr;
  std::size_t mem_capacity_ = 16;
  float *params_ = nullptr, *grads_ = nullptr, *state_ = nullptr;
  std::size_t params_n_ = 1;
  void *comm_a_ = nullptr, *comm_b_ = nullptr, *send_ = nullptr, *recv_ = nullptr;
};

}  // namespace

std::unique_ptr<Backend> device_backend(runtime::Device& dev, core::Precision precision) {
  return std::make_unique<DeviceBackend>(dev, precision);
}

}  // namespace planner::executor::detail
