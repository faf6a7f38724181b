#pragma once
/// An in-process world of n ranks for unit tests: n std::threads, each
/// driving the `Communicator&` of its rank. Data really moves (every
/// contribution is copied into a shared slot and each rank computes its own
/// result from the copies, reduced in rank order 0..n-1 so every rank gets
/// the same bits), with MPI's semantics, split sub-communicators, fault
/// injection and the deadline: a rank that never arrives makes the others
/// fail within the timeout with an error naming it.
///
/// Ranks in errors are world ranks (the FakeWorld's), as in the MPI
/// communicator. Send is eager (buffered): it never blocks.

#include <memory>
#include <vector>

#include "planner/runtime/communicator.hpp"

namespace planner::runtime {

/// n ranks sharing one in-process world. Outlives every thread using it.
class FakeWorld {
 public:
  /// Requires: n >= 1, timeout > 0.
  explicit FakeWorld(int n, Seconds timeout = kDefaultTimeout);
  ~FakeWorld();
  FakeWorld(const FakeWorld&) = delete;
  FakeWorld& operator=(const FakeWorld&) = delete;

  int size() const { return static_cast<int>(comms_.size()); }
  /// The world communicator of `rank`, to be driven by one thread.
  /// Requires: 0 <= rank < size().
  Communicator& comm(int rank) { return *comms_.at(static_cast<std::size_t>(rank)); }

 private:
  std::vector<std::unique_ptr<Communicator>> comms_;
};

}  // namespace planner::runtime
