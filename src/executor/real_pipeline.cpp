// The real mode's pipeline (real_runner.hpp): one step's schedule, the
// tensors crossing chunk boundaries and the sends and receives that carry
// them between pipeline ranks, deferred as the replay defers them.

#include <algorithm>
#include <cstring>
#include <map>

#include "planner/runtime_cpu/elementwise.hpp"
#include "real_runner.hpp"

namespace planner::executor::real_detail {

using graph::TensorId;
using runtime_cpu::IndexTensor;
using runtime_cpu::Tensor;
using runtime_cpu::Value;

namespace {
constexpr int kTagAct = 0, kTagGrad = 1;
}  // namespace

int Runner::peer_rank(int peer_pp) const { return with_coordinate(p_, rank_, "pp", peer_pp); }

Status Runner::step(double& loss_sum) {
  phase_s_.fill(0.0);
  drop_weights();  // the last step's optimizer changed them
  values_.clear();
  grads_.clear();
  {
    Timed t(*this, RealPhase::grad_accumulation);
    grad_acc_.assign(static_cast<std::size_t>(padded_), 0.0f);
  }
  loss_sum = 0;
  recomputed_ops_ = recomputed_flops_ = 0;
  // A micro-batch's activations and gradients are freed after its last B step here.
  std::map<int, std::size_t> last_b;
  for (std::size_t i = 0; i < prog_.steps.size(); ++i)
    if (prog_.steps[i].step.kind == 'B') last_b[prog_.steps[i].step.micro_batch] = i;
  for (std::size_t i = 0; i < prog_.steps.size(); ++i) {
    const auto& sp = prog_.steps[i];
    const auto& st = sp.step;
    const Task* recv = nullptr;
    const Task* send = nullptr;
    for (const auto& t : sp.tasks) {
      if (t.kind == TaskKind::recv) recv = &t;
      if (t.kind == TaskKind::send) send = &t;
    }
    // Pipeline transfers (packing, receives, send waits) are booked to
    // pp_comm, ZeRO-3's gathers to dp_comm (RealPhase).
    if (recv) PLANNER_TRY_STATUS(timed(RealPhase::pp_comm, [&] { return flush_sends(recv->order); }));
    if (st.kind == 'F') {
      if (recv) PLANNER_TRY_STATUS(timed(RealPhase::pp_comm, [&] { return receive_activations(st, *recv); }));
      if (zero3_) PLANNER_TRY_STATUS(timed(RealPhase::dp_comm, [&] { return gather_weights(); }));
      PLANNER_TRY_STATUS(forward(st, loss_sum));
      if (send) PLANNER_TRY_STATUS(timed(RealPhase::pp_comm, [&] { return queue_activations(st, *send); }));
    } else {
      if (recv) PLANNER_TRY_STATUS(timed(RealPhase::pp_comm, [&] { return receive_gradients(st, *recv); }));
      if (zero3_) PLANNER_TRY_STATUS(timed(RealPhase::dp_comm, [&] { return gather_weights(); }));
      PLANNER_TRY_STATUS(backward(st));
      if (send) PLANNER_TRY_STATUS(timed(RealPhase::pp_comm, [&] { return queue_gradients(st, *send); }));
    }
    if (zero3_) {
      // Only the shard stays between uses: drop the gathered weights and
      // the copies the chunk's ops read (backward gathers them again).
      release_weights();
      drop_weights();
    }
    if (st.kind == 'B' && last_b[st.micro_batch] == i) free_micro_batch(st.micro_batch);
  }
  {
    Timed t(*this, RealPhase::pp_comm);
    PLANNER_TRY_STATUS(flush_sends(-1));
  }
  PLANNER_TRY_STATUS(reduce_partial_grads());
  return sync_and_update();
}

// Boundary c: tensors made in chunks <= c and read in chunks > c (and those
// of them whose gradient goes back).
void Runner::init_boundaries() {
  boundary_.assign(static_cast<std::size_t>(std::max(C_ - 1, 0)), {});
  grad_boundary_ = boundary_;
  for (std::uint32_t i = 0; i < g_.num_tensors(); ++i) {
    const auto& t = g_.tensor(TensorId{i});
    if (!t.producer) continue;
    const int pc = chunk_of_[t.producer->value];
    int last = -1;
    for (auto c : t.consumers) last = std::max(last, chunk_of_[c.value]);
    for (int c = pc; c < last; ++c) {
      boundary_[static_cast<std::size_t>(c)].push_back(TensorId{i});
      if (t.dtype == core::DType::f32 && needs_grad_[i]) grad_boundary_[static_cast<std::size_t>(c)].push_back(TensorId{i});
    }
  }
}

// Transfers: float tensors as their words, integer ones as raw 8-byte words
// (two f32 words each; send and recv never look at the bits).
std::int64_t Runner::words(TensorId id) const {
  return g_.tensor(id).dtype == core::DType::f32 ? tp().numel(id) : 2 * tp().numel(id);
}

Status Runner::queue_activations(const plan::ScheduleStep& st, const Task& send) {
  auto& v = vals(st.micro_batch);
  std::vector<float> buf;
  for (TensorId id : boundary_[static_cast<std::size_t>(st.chunk)]) {
    const Value& x = *v[id.value];
    if (const auto* f = std::get_if<Tensor>(&x)) buf.insert(buf.end(), f->data.begin(), f->data.end());
    else {
      const auto& ix = std::get<IndexTensor>(x);
      const std::size_t at = buf.size();
      buf.resize(at + 2 * ix.data.size());
      std::memcpy(buf.data() + at, ix.data.data(), ix.data.size() * sizeof(std::int64_t));
    }
  }
  return post_send({send.order, peer_rank(send.peer_pp), kTagAct, std::move(buf)});
}

Status Runner::receive_activations(const plan::ScheduleStep& st, const Task& recv) {
  const auto& list = boundary_[static_cast<std::size_t>(st.chunk - 1)];
  std::int64_t n = 0;
  for (TensorId id : list) n += words(id);
  std::vector<float> buf(static_cast<std::size_t>(n));
  PLANNER_TRY_STATUS(world_.recv(buf.data(), buf.size(), core::DType::f32, peer_rank(recv.peer_pp), kTagAct));
  auto& v = vals(st.micro_batch);
  std::int64_t at = 0;
  for (TensorId id : list) {
    const auto& t = g_.tensor(id);
    const auto shape = tp().shape(id);
    const auto n = runtime_cpu::numel(shape);
    if (t.dtype == core::DType::f32) {
      v[id.value] = Tensor(shape, std::vector<float>(buf.begin() + at, buf.begin() + at + n));
    } else {
      IndexTensor ix{shape, std::vector<std::int64_t>(static_cast<std::size_t>(n))};
      std::memcpy(ix.data.data(), buf.data() + at, ix.data.size() * sizeof(std::int64_t));
      v[id.value] = std::move(ix);
    }
    at += words(id);
  }
  return Status::success();
}

Status Runner::queue_gradients(const plan::ScheduleStep& st, const Task& send) {
  auto& gr = grs(st.micro_batch);
  auto& gp = gps(st.micro_batch);
  std::vector<float> buf;
  for (TensorId id : grad_boundary_[static_cast<std::size_t>(st.chunk - 1)]) {
    PLANNER_TRY_STATUS(tp().finalize(gr[id.value], gp[id.value]));
    if (gr[id.value]) buf.insert(buf.end(), gr[id.value]->data.begin(), gr[id.value]->data.end());
    else buf.resize(buf.size() + static_cast<std::size_t>(tp().numel(id)), 0.0f);
  }
  return post_send({send.order, peer_rank(send.peer_pp), kTagGrad, std::move(buf)});
}

Status Runner::receive_gradients(const plan::ScheduleStep& st, const Task& recv) {
  const auto& list = grad_boundary_[static_cast<std::size_t>(st.chunk)];
  std::int64_t n = 0;
  for (TensorId id : list) n += tp().numel(id);
  std::vector<float> buf(static_cast<std::size_t>(n));
  PLANNER_TRY_STATUS(world_.recv(buf.data(), buf.size(), core::DType::f32, peer_rank(recv.peer_pp), kTagGrad));
  auto& gr = grs(st.micro_batch);
  std::int64_t at = 0;
  for (TensorId id : list) {
    const auto n_id = tp().numel(id);
    Tensor x(tp().shape(id), std::vector<float>(buf.begin() + at, buf.begin() + at + n_id));
    if (gr[id.value]) runtime_cpu::accumulate(*gr[id.value], x);
    else gr[id.value] = std::move(x);
    at += n_id;
  }
  return Status::success();
}

// A send is posted at once where the communicator allows it, as the replay
// posts its sends and as Megatron's p2p_communication posts isend/irecv:
// the sender goes on with its next micro-batch. Otherwise it is deferred
// in the rendezvous-safe order (program.hpp). With blocking sends both
// ways, 1F1B ran in lock-step: each stage waited for the other's receive
// before its next step, and a 2-stage GPT step took 1.19 s against 0.58 s
// for the same work as dp=2 (docs/executor.md, "Pipeline sends").
Status Runner::post_send(PendingSend s) {
  if (!world_.async_sends()) {
    sends_.push_back(std::move(s));
    return Status::success();
  }
  // The buffer's heap block does not move with the vector: it stays valid
  // in in_flight_ until wait_sends().
  PLANNER_TRY_STATUS(world_.send_async(s.buf.data(), s.buf.size(), core::DType::f32, s.peer, s.tag));
  in_flight_.push_back(std::move(s));
  return Status::success();
}

// Deferred sends ordered before `before`; at the end of the step (-1) all
// of them, and the posted ones complete.
Status Runner::flush_sends(std::int64_t before) {
  while (!sends_.empty() && (before < 0 || sends_.front().order < before)) {
    auto& s = sends_.front();
    PLANNER_TRY_STATUS(world_.send(s.buf.data(), s.buf.size(), core::DType::f32, s.peer, s.tag));
    sends_.pop_front();
  }
  if (before < 0 && !in_flight_.empty()) {
    PLANNER_TRY_STATUS(world_.wait_sends());
    in_flight_.clear();
  }
  return Status::success();
}

}  // namespace planner::executor::real_detail
