#include "heartbeat.hpp"

#include <chrono>
#include <string_view>
#include <thread>

namespace planner::runtime::mpi_detail {
namespace {

constexpr int kQuery = 1, kAnswer = 2, kVerdict = 3;

// Splits off the text before the next '|' of `rest`.
std::string_view take(std::string_view& rest) {
  const auto bar = rest.find('|');
  std::string_view head = rest.substr(0, bar);
  rest = bar == std::string_view::npos ? std::string_view() : rest.substr(bar + 1);
  return head;
}

std::uint64_t to_u64(std::string_view s) {
  std::uint64_t v = 0;
  for (char c : s) v = v * 10 + static_cast<std::uint64_t>(c - '0');
  return v;
}

}  // namespace

Heartbeat::Heartbeat(MPI_Comm comm) : comm_(comm) {}

Heartbeat::~Heartbeat() {
  for (auto& p : pending_) MPI_Request_free(&p.second);
  MPI_Comm_free(&comm_);
}

void Heartbeat::enter(const std::string& label, CallKind kind, std::uint64_t k) {
  in_call_ = true;
  kind_ = kind;
  k_ = k;
  label_ = label;
  if (kind == CallKind::send || kind == CallKind::recv) return;  // numbered apart
  auto& r = reached_[label];
  if (k > r) r = k;
}

void Heartbeat::leave() { in_call_ = false; }

void Heartbeat::post(int dest, int tag, std::string payload) {
  pending_.emplace_back(std::move(payload), MPI_REQUEST_NULL);
  auto& p = pending_.back();
  MPI_Isend(p.first.data(), static_cast<int>(p.first.size()), MPI_CHAR, dest, tag, comm_,
            &p.second);
}

void Heartbeat::service() {
  for (auto it = pending_.begin(); it != pending_.end();) {
    int done = 0;
    MPI_Test(&it->second, &done, MPI_STATUS_IGNORE);
    it = done ? pending_.erase(it) : std::next(it);
  }
  for (;;) {
    int flag = 0;
    MPI_Status st;
    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm_, &flag, &st);
    if (!flag) return;
    int n = 0;
    MPI_Get_count(&st, MPI_CHAR, &n);
    std::string text(static_cast<std::size_t>(n), '\0');
    MPI_Recv(text.data(), n, MPI_CHAR, st.MPI_SOURCE, st.MPI_TAG, comm_, MPI_STATUS_IGNORE);
    std::string_view rest = text;
    if (st.MPI_TAG == kQuery) {
      const std::string round(take(rest));
      const std::string label(rest);
      const auto r = reached_.find(label);
      post(st.MPI_SOURCE, kAnswer,
           fmt::format("{}|{}|{}|{}|{}|{}", round, r == reached_.end() ? 0 : r->second,
                       in_call_ ? 1 : 0, static_cast<int>(kind_), k_, label_));
    } else if (st.MPI_TAG == kAnswer) {
      if (to_u64(take(rest)) != round_) continue;  // a late answer to an earlier round
      Answer a;
      a.reached = to_u64(take(rest));
      a.in_call = take(rest) == "1";
      a.kind = static_cast<CallKind>(to_u64(take(rest)));
      a.k = to_u64(take(rest));
      a.label = std::string(rest);
      answers_[st.MPI_SOURCE] = std::move(a);
    } else if (st.MPI_TAG == kVerdict) {
      std::string label(take(rest));
      const std::uint64_t k = to_u64(take(rest));
      verdicts_.emplace(std::pair{std::move(label), k}, std::string(rest));
    }
  }
}

std::map<int, Answer> Heartbeat::probe(const std::string& label, const std::vector<int>& ranks,
                                       Seconds grace) {
  ++round_;
  answers_.clear();
  for (int r : ranks) post(r, kQuery, fmt::format("{}|{}", round_, label));
  const auto until = std::chrono::steady_clock::now() +
                     std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                         std::chrono::duration<double>(grace.value));
  int spins = 0;
  while (answers_.size() < ranks.size() && std::chrono::steady_clock::now() < until) {
    service();
    poll_backoff(spins);
  }
  return answers_;
}

void Heartbeat::tell(const std::vector<int>& ranks, const std::string& label, std::uint64_t k,
                     const std::string& message) {
  for (int r : ranks) post(r, kVerdict, fmt::format("{}|{}|{}", label, k, message));
  service();
}

std::optional<std::string> Heartbeat::verdict(const std::string& label, std::uint64_t k) const {
  const auto it = verdicts_.find({label, k});
  if (it == verdicts_.end()) return std::nullopt;
  return it->second;
}

std::string mpi_error_text(int rc) {
  char text[MPI_MAX_ERROR_STRING];
  int n = 0;
  MPI_Error_string(rc, text, &n);
  return std::string(text, static_cast<std::size_t>(n));
}

}  // namespace planner::runtime::mpi_detail
