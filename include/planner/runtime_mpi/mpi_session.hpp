#pragma once
/// MPI for the executor: `MpiSession` wraps MPI_Init/MPI_Finalize and hands
/// out the world `Communicator` (host buffers). MPI's blocking calls cannot
/// time out, so every call is non-blocking (MPI_Iallreduce, ...) and polled
/// against the communicator's deadline. When it passes, the waiting rank asks
/// every peer "where are you?" over a heartbeat channel (a duplicate of
/// MPI_COMM_WORLD that every waiting rank services while it polls) and names
/// the ranks that do not answer within a short grace period:
///   rank 1 did not reach all_reduce #2 within 3 s (stalled or dead)
/// It then tells the peers that did answer, so that every surviving rank
/// fails with the same line. The caller prints it (`planner run: error: ...`)
/// and calls `abort_job()`, which tears the job down, the stalled process
/// included. docs/executor.md has the details and what happens when a rank
/// crashes instead.
///
/// This header includes no MPI header.

#include <memory>
#include <string>
#include <string_view>

#include "planner/core/result.hpp"
#include "planner/runtime/communicator.hpp"

namespace planner::runtime {

/// How long `abort_job` waits before MPI_Abort, so that peers that were told
/// the same verdict can print it before mpirun kills them.
inline constexpr Seconds kAbortGrace{1.0};

/// The MPI library of this process, from init to finalize or abort.
/// Requires: constructed (by init) once per process, on the main thread,
/// and outlives every communicator it made.
class MpiSession {
 public:
  /// MPI_Init_thread (MPI_THREAD_FUNNELED). MPI errors are returned, not fatal.
  static Result<std::unique_ptr<MpiSession>> init(int* argc, char*** argv);
  /// MPI_Finalize. Requires: every communicator from this session is gone
  /// and none failed (after a failure, call abort_job instead).
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  /// The MPI library's own version line (MPI_Get_library_version, first
  /// line), e.g. "Open MPI v4.1.4, package: Debian OpenMPI, ...".
  static std::string library_version();

  int world_rank() const;
  int world_size() const;

  /// A communicator over every process (a duplicate of MPI_COMM_WORLD).
  /// Collective: every rank must call it.
  Result<std::unique_ptr<Communicator>> world(Seconds timeout = kDefaultTimeout);

  /// Installs handlers for SIGSEGV, SIGBUS, SIGFPE, SIGILL and SIGABRT that
  /// write "<prefix>rank R crashed (signal N: NAME)" on stderr, then die of
  /// the same signal (so mpirun still sees the crash). Replaces Open MPI's
  /// backtrace handlers.
  void install_crash_reporter(std::string_view prefix);

  /// Ends the whole job: flushes stdio, waits kAbortGrace, then
  /// MPI_Abort(MPI_COMM_WORLD, code), which makes mpirun kill every rank
  /// (stopped ones included) and exit non-zero. Never returns; never
  /// finalizes MPI (finalize would wait for the stalled rank forever).
  [[noreturn]] void abort_job(int code);


 private:
  struct Impl;
  explicit MpiSession(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace planner::runtime
