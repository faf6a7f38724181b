#pragma once
// One rank of the real mode (real.cpp; docs/executor.md "Real mode and
// --check"). Private to the executor module.
//
// The Runner's work is split by parallelism kind, one file each:
//   real.cpp           the entry point (run_real), the step loop and --check
//   real_compute.cpp   the graph's bookkeeping, one chunk's forward and
//                      backward (tp through TpRank), recomputation
//   real_pipeline.cpp  the schedule of one step, the boundary tensors and the
//                      sends and receives between pipeline ranks
//   real_dp.cpp        this rank's parameters as one flat buffer, the
//                      data-parallel and tp groups, gradient sync and ZeRO

#include <array>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "planner/core/result.hpp"
#include "planner/executor/program.hpp"
#include "planner/graph/graph.hpp"
#include "planner/plan/plan.hpp"
#include "planner/runtime/communicator.hpp"
#include "planner/runtime_cpu/interpreter.hpp"
#include "planner/runtime_cpu/op_kernels.hpp"
#include "real_recompute.hpp"
#include "real_tp.hpp"

namespace planner::executor::real_detail {

/// Where a rank's step time goes (RealResult::components_s; docs/executor.md
/// "Real mode: where the time goes"): the ops' kernels (forward, backward,
/// recompute), tp's collectives between ops, pipeline receives and send
/// waits, data-parallel collectives (ZeRO-3 gathers included), the optimizer
/// step (gradient scaling included), and the gradient accumulation passes
/// (each micro-batch's parameter gradients added into the step's buffer).
/// The rest of the step is the executor's own work (RealPhase-less: "other").
enum class RealPhase : std::uint8_t { compute, tp_comm, pp_comm, dp_comm, optimizer, grad_accumulation };
inline constexpr std::size_t kRealPhases = 6;
/// RealResult::components_s's keys: the phases in order, then "other".
inline constexpr std::array<std::string_view, kRealPhases + 1> kRealComponentNames{
    "compute", "tp_comm", "pp_comm", "dp_comm", "optimizer", "grad_accumulation", "other"};

class Runner {
 public:
  Runner(const plan::Plan& p, const RankProgram& prog, const graph::OpGraph& g, runtime::Communicator& world)
      : p_(p), prog_(prog), g_(g), world_(world) {}

  Status init();

  /// One training step; returns the loss summed over this rank's micro-batches
  /// (0 on ranks without the loss).
  Status step(double& loss_sum);

  /// The gradients (scaled) and weights of this rank's parameters, whole:
  /// gathered over dp when sharded. Every member of the dp group calls it.
  Status full_state(std::vector<float>& grad, std::vector<float>& w);

  bool holds_loss() const {
    return chunk_of_[g_.tensor(*loss_).producer->value] % l().pp == pp_rank_ && tp_rank_ == 0;
  }
  int dp_rank() const { return dp_rank_; }
  /// Recompute: ops run again in the last step and their unsharded forward
  /// FLOPs (0 on tp ranks other than 0); the activation bytes held at peak.
  double recomputed_ops() const { return recomputed_ops_; }
  double recomputed_flops() const { return recomputed_flops_; }
  double peak_held_bytes() const { return peak_held_; }
  int pp_rank() const { return pp_rank_; }
  const std::vector<int>& chunk_of() const { return chunk_of_; }
  const runtime_cpu::OptimizerConfig& optimizer() const { return opt_; }
  /// Seconds of the last step in each phase (index = RealPhase).
  const std::array<double, kRealPhases>& phase_s() const { return phase_s_; }

 private:
  /// Adds the time from its construction to its destruction to one phase.
  class Timed {
   public:
    Timed(Runner& r, RealPhase p) : slot_(r.phase_s_[static_cast<std::size_t>(p)]), t0_(Clock::now()) {}
    ~Timed() { slot_ += std::chrono::duration<double>(Clock::now() - t0_).count(); }
    Timed(const Timed&) = delete;
    Timed& operator=(const Timed&) = delete;

   private:
    using Clock = std::chrono::steady_clock;
    double& slot_;
    Clock::time_point t0_;
  };
  /// f(), its time booked to phase p.
  template <typename F>
  auto timed(RealPhase p, F&& f) {
    Timed t(*this, p);
    return f();
  }

  using Values = std::vector<std::optional<runtime_cpu::Value>>;
  using Grads = std::vector<std::optional<runtime_cpu::Tensor>>;

  const plan::Layout& l() const { return p_.layout; }
  int peer_rank(int peer_pp) const;

  // real_compute.cpp: the graph's bookkeeping and one chunk's compute.
  Status init_graph();
  Values& vals(int mb);
  Grads& grs(int mb);
  Grads& gps(int mb);  // partial-sum gradients (tp) not yet all-reduced
  TpRank& tp() { return *tp_; }
  const TpRank& tp() const { return *tp_; }
  const runtime_cpu::Value* port(Values& v, graph::OpId o, std::size_t i, std::vector<runtime_cpu::Value>& keep);
  bool is_weight(graph::TensorId id) const;
  Status provide(Values& v, graph::TensorId id, int mb);
  Status provide_weight(graph::TensorId id);
  void drop_weights();
  Status forward(const plan::ScheduleStep& st, double& loss_sum);
  Status run_op(graph::OpId oid, int mb);
  void drop_group(int gi, int mb);
  Status recompute_group(int gi, int mb);
  void note_held();
  Status backward(const plan::ScheduleStep& st);
  Status backward_op(graph::OpId oid, int mb);
  Status accumulate_parameter_grads(int mb);
  Status reduce_partial_grads();
  void free_micro_batch(int mb);

  // real_pipeline.cpp: boundaries, sends and receives.
  void init_boundaries();
  std::int64_t words(graph::TensorId id) const;
  struct PendingSend {
    std::int64_t order;
    int peer, tag;
    std::vector<float> buf;
  };

  Status queue_activations(const plan::ScheduleStep& st, const Task& send);
  Status receive_activations(const plan::ScheduleStep& st, const Task& recv);
  Status queue_gradients(const plan::ScheduleStep& st, const Task& send);
  Status receive_gradients(const plan::ScheduleStep& st, const Task& recv);
  Status post_send(PendingSend s);
  Status flush_sends(std::int64_t before);

  // real_dp.cpp: parameters, groups, gradient sync and ZeRO.
  void init_parameters();
  Status init_groups();
  Status gather_weights();
  void release_weights();
  Status sync_and_update();
  Status sync_tied_gradients();

  const plan::Plan& p_;
  const RankProgram& prog_;
  const graph::OpGraph& g_;
  runtime::Communicator& world_;
  int rank_ = 0, dp_ = 1, M_ = 1, C_ = 1, pp_rank_ = 0, dp_rank_ = 0, tp_rank_ = 0;  // tp_rank_: in the tp or cp group
  const char* shard_axis_ = "tp";
  std::uint64_t seed_ = 0;
  runtime_cpu::OptimizerConfig opt_;
  std::vector<int> chunk_of_;
  std::vector<std::vector<graph::OpId>> chunk_ops_;
  std::vector<bool> needs_grad_;
  std::optional<graph::TensorId> loss_;
  std::vector<std::vector<graph::TensorId>> boundary_, grad_boundary_;
  std::vector<graph::TensorId> params_;
  std::map<std::uint32_t, std::int64_t> offset_;
  std::int64_t flat_size_ = 0, padded_ = 0, shard_ = 0;
  std::vector<float> flat_w_, shard_w_, grad_acc_, grad_full_, grad_shard_;
  std::vector<float> grad_part_;                  // tp partial parameter gradients of this step
  std::map<std::uint32_t, std::pair<std::int64_t, std::int64_t>> partial_at_;  // offset and size in grad_part_, by tensor id
  bool zero3_ = false, gathered_ = true;
  runtime_cpu::OptimState state_;
  runtime::Communicator* dp_comm_ = nullptr;
  std::unique_ptr<runtime::Communicator> owned_dp_, owned_tp_;
  /// Weights read on several pipeline ranks (a tied LM head): each such rank
  /// keeps a copy, and per set of sharing ranks this rank belongs to, the
  /// group of the ranks that differ from it only in pp and the local copies'
  /// tensors, whose gradients it sums over that group before the data-parallel
  /// sync (Megatron's embedding group).
  struct TiedGroup {
    std::unique_ptr<runtime::Communicator> comm;
    std::vector<graph::TensorId> params;
  };
  std::vector<TiedGroup> tied_;
  TpLayout tpl_;
  std::optional<TpRank> tp_;
  std::map<std::uint32_t, runtime_cpu::Value> inputs_;
  Values weights_;  // by tensor id: this step's parameters as the ops read them (provide_weight)
  std::map<int, Values> values_;
  std::map<int, Grads> grads_, partials_;
  std::map<int, Values> made_;  // tp: outputs as made, when stored converted
  std::deque<PendingSend> sends_;      // deferred: the communicator's sends wait for the receiver
  std::deque<PendingSend> in_flight_;  // posted with send_async, buffers kept until wait_sends
  RecomputePlan rc_;
  double recomputed_ops_ = 0, recomputed_flops_ = 0, peak_held_ = 0;
  std::array<double, kRealPhases> phase_s_{};
};

}  // namespace planner::executor::real_detail
