#pragma once
// Private to runtime_mpi: the heartbeat channel that names stalled ranks,
// and the factory of MPI communicators.
//
// Protocol (on a duplicate of MPI_COMM_WORLD; ranks are world ranks):
//   query   (tag 1)  "round|label"           where are you? what is the last
//                                            call you entered on `label`?
//   answer  (tag 2)  "round|reached|in_call|kind|k|label"
//   verdict (tag 3)  "label|k|message"       call k on label failed: message
// A rank answers only while it polls (inside a communicator call), so a rank
// that is stopped, dead or busy outside MPI does not answer: it is named.

#include <list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <mpi.h>

#include "planner/runtime/communicator.hpp"

namespace planner::runtime::mpi_detail {

/// What a peer said about itself.
struct Answer {
  std::uint64_t reached = 0;  // last call number it entered on the queried communicator
  bool in_call = false;       // polling inside a call now
  CallKind kind = CallKind::barrier;
  std::uint64_t k = 0;
  std::string label;          // communicator of that call ("" = world)
};

class Heartbeat {
 public:
  /// Takes ownership of `comm` (a duplicate of MPI_COMM_WORLD).
  explicit Heartbeat(MPI_Comm comm);
  ~Heartbeat();

  /// This rank entered call k of `kind` on communicator `label` (k counts
  /// collectives, or send/recv calls for those).
  void enter(const std::string& label, CallKind kind, std::uint64_t k);
  void leave();
  /// Answers queries, stores answers and verdicts; never blocks.
  void service();
  /// Asks `ranks` where they are; returns the answers that came within `grace`.
  std::map<int, Answer> probe(const std::string& label, const std::vector<int>& ranks,
                              Seconds grace);
  /// Tells `ranks` that call k on `label` failed with `message`.
  void tell(const std::vector<int>& ranks, const std::string& label, std::uint64_t k,
            const std::string& message);
  /// The verdict another rank sent about call k on `label`, if any.
  std::optional<std::string> verdict(const std::string& label, std::uint64_t k) const;

 private:
  void post(int dest, int tag, std::string payload);

  MPI_Comm comm_;
  bool in_call_ = false;
  CallKind kind_ = CallKind::barrier;
  std::uint64_t k_ = 0;
  std::string label_;
  std::map<std::string, std::uint64_t> reached_;
  std::map<std::pair<std::string, std::uint64_t>, std::string> verdicts_;
  std::uint64_t round_ = 0;
  std::map<int, Answer> answers_;  // answers to round_
  // Sends in flight; the payload must live until MPI is done with it.
  std::list<std::pair<std::string, MPI_Request>> pending_;
};


/// An MPI_Comm error code as "MPI_ERR_...: text".
std::string mpi_error_text(int rc);

/// A communicator over `comm` (owned; errors set to MPI_ERRORS_RETURN).
/// `world_ranks` maps its ranks to world ranks; `label` names it in errors.
std::unique_ptr<Communicator> make_mpi_communicator(MPI_Comm comm, Heartbeat& hb,
                                                    std::string label,
                                                    std::vector<int> world_ranks,
                                                    Seconds timeout);

}  // namespace planner::runtime::mpi_detail
