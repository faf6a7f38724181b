#include "planner/runtime_mpi/mpi_session.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <string>
#include <thread>

#include "heartbeat.hpp"

namespace planner::runtime {

struct MpiSession::Impl {
  int rank = 0;
  int size = 1;
  std::unique_ptr<mpi_detail::Heartbeat> heartbeat;
};

namespace {

// The crash reporter's lines, formatted before any crash: a signal handler
// may only call async-signal-safe functions (write, signal, raise).
constexpr int kCrashSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
std::string g_crash_lines[5];  // process-wide by nature: signal dispositions are

extern "C" void report_crash(int sig) {
  for (std::size_t i = 0; i < 5; ++i)
    if (kCrashSignals[i] == sig) {
      const std::string& line = g_crash_lines[i];
      ssize_t ignored = ::write(STDERR_FILENO, line.data(), line.size());
      (void)ignored;
    }
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

const char* signal_name(int sig) {
  switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGABRT: return "SIGABRT";
  }
  return "?";
}

}  // namespace

MpiSession::MpiSession(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Result<std::unique_ptr<MpiSession>> MpiSession::init(int* argc, char*** argv) {
  int already = 0;
  MPI_Initialized(&already);
  if (already) return make_error("MPI is already initialised (one MpiSession per process)");
  int provided = 0;
  const int rc = MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
  if (rc != MPI_SUCCESS) return make_error("MPI_Init_thread failed (error {})", rc);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  auto impl = std::make_unique<Impl>();
  MPI_Comm_rank(MPI_COMM_WORLD, &impl->rank);
  MPI_Comm_size(MPI_COMM_WORLD, &impl->size);
  MPI_Comm hb;
  const int dup = MPI_Comm_dup(MPI_COMM_WORLD, &hb);
  if (dup != MPI_SUCCESS)
    return make_error("MPI_Comm_dup of the heartbeat channel failed: {}",
                      mpi_detail::mpi_error_text(dup));
  MPI_Comm_set_errhandler(hb, MPI_ERRORS_RETURN);
  impl->heartbeat = std::make_unique<mpi_detail::Heartbeat>(hb);
  return std::unique_ptr<MpiSession>(new MpiSession(std::move(impl)));
}

MpiSession::~MpiSession() {
  impl_->heartbeat.reset();
  MPI_Finalize();
}

std::string MpiSession::library_version() {
  char buf[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int len = 0;
  if (MPI_Get_library_version(buf, &len) != MPI_SUCCESS) return "unknown MPI library";
  std::string v(buf, static_cast<std::size_t>(std::max(0, len)));
  v = v.substr(0, v.find('\n'));
  while (!v.empty() && (v.back() == ' ' || v.back() == '\0' || v.back() == '\r')) v.pop_back();
  return v;
}

int MpiSession::world_rank() const { return impl_->rank; }
int MpiSession::world_size() const { return impl_->size; }

Result<std::unique_ptr<Communicator>> MpiSession::world(Seconds timeout) {
  if (!(timeout.value > 0)) return make_error("communicator timeout {} s is not positive", timeout.value);
  MPI_Comm comm;
  const int rc = MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  if (rc != MPI_SUCCESS)
    return make_error("MPI_Comm_dup of the world failed: {}", mpi_detail::mpi_error_text(rc));
  std::vector<int> world(static_cast<std::size_t>(impl_->size));
  for (int r = 0; r < impl_->size; ++r) world[r] = r;
  return mpi_detail::make_mpi_communicator(comm, *impl_->heartbeat, "", std::move(world),
                                           timeout);
}

void MpiSession::install_crash_reporter(std::string_view prefix) {
  for (std::size_t i = 0; i < 5; ++i) {
    const int sig = kCrashSignals[i];
    g_crash_lines[i] = fmt::format("{}rank {} crashed (signal {}: {})\n", prefix, impl_->rank,
                                   sig, signal_name(sig));
    struct sigaction sa = {};
    sa.sa_handler = report_crash;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND;
    sigaction(sig, &sa, nullptr);
  }
}

void MpiSession::abort_job(int code) {
  std::fflush(nullptr);
  std::this_thread::sleep_for(std::chrono::duration<double>(kAbortGrace.value));
  MPI_Abort(MPI_COMM_WORLD, code);
  // The one exit outside main (ARCHITECTURE.md, "Only main exits"): the job
  // must end here, not through an error value. MPI_Abort ends every rank
  // and does not return; if an MPI library's abort ever did, returning to
  // main would run ~MpiSession's MPI_Finalize, which waits for the peers
  // that failed or stalled, forever. tests/architecture/invariants.sh allows
  // this line and src/cli/main.cpp only.
  _exit(code);
}

}  // namespace planner::runtime
