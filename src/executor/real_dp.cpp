// The real mode's data parallelism (real_runner.hpp): this rank's parameters
// as one flat buffer padded to a multiple of dp, the dp and tp (cp) groups,
// the gradient all-reduce, and ZeRO (reduce-scatter, a shard's update,
// all-gather; ZeRO-3 keeps only the shard between uses).

#include <algorithm>
#include <map>
#include <set>
#include <span>

#include "real_data.hpp"
#include "real_runner.hpp"

namespace planner::executor::real_detail {

// Parameters of this rank, flattened by name; the flat buffer is padded to a
// multiple of dp so that reduce-scatter shares it evenly.
void Runner::init_parameters() {
  params_ = stage_parameters(p_, g_, chunk_of_, pp_rank_);
  std::int64_t off = 0;
  for (auto id : params_) {
    offset_[id.value] = off;
    off += tp().numel(id);
  }
  flat_size_ = off;
  padded_ = (off + dp_ - 1) / dp_ * dp_;
  shard_ = padded_ / dp_;
  flat_w_.assign(static_cast<std::size_t>(padded_), 0.0f);
  for (auto id : params_) {
    const runtime_cpu::Tensor w = tp().shard(id, init_parameter(seed_, g_.tensor(id)));
    std::copy(w.data.begin(), w.data.end(), flat_w_.begin() + offset_[id.value]);
  }
}

// The data-parallel group (the world when it is all of it), then the
// tensor-parallel one, split in that order on every rank; ZeRO-3 keeps its shard.
Status Runner::init_groups() {
  if (dp_ > 1) {
    if (dp_ == world_.size()) {
      dp_comm_ = &world_;
    } else {
      PLANNER_TRY(owned_dp_, world_.split(with_coordinate(p_, rank_, "dp", 0), rank_));
      dp_comm_ = owned_dp_.get();
    }
  }
  runtime::Communicator* tp_comm = &world_;
  if (tpl_.tp > 1 && tpl_.tp != world_.size()) {
    PLANNER_TRY(owned_tp_, world_.split(with_coordinate(p_, rank_, shard_axis_, 0), rank_));
    tp_comm = owned_tp_.get();
  }
  tp_.emplace(tpl_, g_, tp_rank_, tp_comm);
  // Tied weights: per set of pipeline ranks sharing some parameter (in a
  // fixed order on every rank), one split of the world: the members of a set
  // that differ only in pp form a group; every other rank gets a color of
  // its own.
  std::map<std::vector<int>, std::vector<graph::TensorId>> sets;
  for (std::uint32_t i = 0; i < g_.num_tensors(); ++i) {
    const auto& t = g_.tensor(graph::TensorId{i});
    if (t.producer || t.role != graph::TensorRole::parameter) continue;
    std::set<int> stages;
    for (auto c : t.consumers)
      if (chunk_of_[c.value] >= 0) stages.insert(chunk_of_[c.value] % l().pp);
    if (stages.size() > 1) sets[std::vector<int>(stages.begin(), stages.end())].push_back(graph::TensorId{i});
  }
  for (const auto& [stages, ids] : sets) {
    const bool member = std::find(stages.begin(), stages.end(), pp_rank_) != stages.end();
    const int color = member ? with_coordinate(p_, rank_, "pp", 0) : world_.size() + rank_;
    PLANNER_TRY(auto comm, world_.split(color, rank_));
    if (member) tied_.push_back(TiedGroup{std::move(comm), ids});
  }
  zero3_ = l().zero == 3 && dp_ > 1;
  if (zero3_) shard_w_.assign(flat_w_.begin() + dp_rank_ * shard_, flat_w_.begin() + (dp_rank_ + 1) * shard_);
  if (zero3_) release_weights();
  return Status::success();
}

Status Runner::full_state(std::vector<float>& grad, std::vector<float>& w) {
  grad = grad_full_;
  if ((l().zero >= 1 || l().distributed_optimizer) && dp_ > 1) {
    grad.assign(static_cast<std::size_t>(padded_), 0.0f);
    PLANNER_TRY_STATUS(dp_comm_->all_gather(grad_shard_.data(), grad.data(), static_cast<std::size_t>(shard_),
                                            core::DType::f32));
  }
  if (zero3_) {
    PLANNER_TRY_STATUS(gather_weights());
    w = flat_w_;
    release_weights();
  } else {
    w = flat_w_;
  }
  if (tpl_.tp > 1) {  // whole tensors from the tp (cp) shares (a tp collective each)
    std::vector<float> local;
    local.swap(grad);
    PLANNER_TRY_STATUS(tp().gather_full(params_, local, grad));
    local.swap(w);
    PLANNER_TRY_STATUS(tp().gather_full(params_, local, w));
  }
  return Status::success();
}

Status Runner::gather_weights() {
  flat_w_.assign(static_cast<std::size_t>(padded_), 0.0f);
  PLANNER_TRY_STATUS(dp_comm_->all_gather(shard_w_.data(), flat_w_.data(), static_cast<std::size_t>(shard_),
                                          core::DType::f32));
  gathered_ = true;
  return Status::success();
}

void Runner::release_weights() {
  std::vector<float>().swap(flat_w_);
  gathered_ = false;
}

// Each tied weight's copies see only their own stage's uses: the sum over
// the sharing ranks is the whole gradient, identical on each, so the copies'
// updates stay equal (one all-reduce per set, the copies packed).
Status Runner::sync_tied_gradients() {
  for (auto& tg : tied_) {
    std::vector<float> buf;
    for (auto id : tg.params) {
      const float* src = grad_acc_.data() + offset_.at(id.value);
      buf.insert(buf.end(), src, src + tp().numel(id));
    }
    {
      Timed t(*this, RealPhase::pp_comm);
      PLANNER_TRY_STATUS(tg.comm->all_reduce(buf.data(), buf.size(), core::DType::f32, runtime::ReduceOp::sum));
    }
    std::size_t at = 0;
    for (auto id : tg.params) {
      const auto n = static_cast<std::size_t>(tp().numel(id));
      std::copy(buf.begin() + static_cast<std::ptrdiff_t>(at), buf.begin() + static_cast<std::ptrdiff_t>(at + n),
                grad_acc_.begin() + offset_.at(id.value));
      at += n;
    }
  }
  return Status::success();
}

Status Runner::sync_and_update() {
  PLANNER_TRY_STATUS(sync_tied_gradients());
  const float scale = 1.0f / static_cast<float>(static_cast<std::int64_t>(dp_) * M_);
  if ((l().zero == 0 && !l().distributed_optimizer) || dp_ == 1) {
    if (dp_ > 1) {
      Timed t(*this, RealPhase::dp_comm);
      PLANNER_TRY_STATUS(dp_comm_->all_reduce(grad_acc_.data(), grad_acc_.size(), core::DType::f32,
                                              runtime::ReduceOp::sum));
    }
    Timed t(*this, RealPhase::optimizer);
    for (auto& x : grad_acc_) x *= scale;
    grad_full_ = grad_acc_;
    optimizer_step(opt_, flat_w_, grad_full_, state_);
    return Status::success();
  }
  // ZeRO: reduce-scatter the gradients, update this rank's shard of the
  // weights and optimizer state, all-gather the weights (ZeRO-3: keep the shard).
  grad_shard_.assign(static_cast<std::size_t>(shard_), 0.0f);
  {
    Timed t(*this, RealPhase::dp_comm);
    PLANNER_TRY_STATUS(dp_comm_->reduce_scatter(grad_acc_.data(), grad_shard_.data(),
                                                static_cast<std::size_t>(shard_), core::DType::f32,
                                                runtime::ReduceOp::sum));
  }
  std::span<float> w = zero3_ ? std::span<float>(shard_w_)
                              : std::span<float>(flat_w_).subspan(static_cast<std::size_t>(dp_rank_ * shard_),
                                                                  static_cast<std::size_t>(shard_));
  {
    Timed t(*this, RealPhase::optimizer);
    for (auto& x : grad_shard_) x *= scale;
    optimizer_step(opt_, w, grad_shard_, state_);
  }
  if (!zero3_) {
    Timed t(*this, RealPhase::dp_comm);
    std::vector<float> mine(w.begin(), w.end());
    PLANNER_TRY_STATUS(dp_comm_->all_gather(mine.data(), flat_w_.data(), static_cast<std::size_t>(shard_),
                                            core::DType::f32));
  }
  return Status::success();
}

}  // namespace planner::executor::real_detail
