// A two-step job in which rank 1 misbehaves before collective #2, the way
// `planner run` reports it: survivors print "planner run: error: <message>"
// and abort the job. Driven by stall_test.sh:
//   mpi_fault stall TIMEOUT_S   rank 1 stops itself (SIGSTOP)
//   mpi_fault crash TIMEOUT_S   rank 1 calls abort()
//   mpi_fault segv TIMEOUT_S    rank 1 raises SIGSEGV
//   mpi_fault none TIMEOUT_S    nobody misbehaves (exit 0)
//   mpi_fault p2p TIMEOUT_S     rank 0 waits for a message rank 1 never sends
//                               (rank 1 waits in a barrier meanwhile, entered
//                               half a timeout later so that rank 0's deadline
//                               passes first and rank 1 is still there to answer)
//   mpi_fault stall-dp TIMEOUT_S  (4 ranks) dp groups {0,2},{1,3}: rank 3 stops
//                               before the dp all_reduce; rank 1 waits there, 0 and 2
//                               in the next world all_reduce
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "planner/runtime_mpi/mpi_session.hpp"

using namespace planner;
using namespace planner::runtime;

int main(int argc, char** argv) {
  auto session = MpiSession::init(&argc, &argv);
  if (!session || argc != 3) {
    std::fprintf(stderr, "usage: mpi_fault stall|crash|segv|none TIMEOUT_S\n");
    return 2;
  }
  MpiSession& s = **session;
  s.install_crash_reporter("planner run: error: ");
  const std::string mode = argv[1];
  auto world = s.world(Seconds(std::atof(argv[2])));
  if (!world) {
    std::fprintf(stderr, "planner run: error: %s\n", world.error().message.c_str());
    s.abort_job(1);
  }
  Communicator& c = **world;
  if (mode == "p2p") {
    float x = 0.0f;
    // Entered at the same moment, both deadlines pass together and rank 1
    // may end the job before it answers rank 0's query (seen under ASan).
    if (c.rank() == 1)
      std::this_thread::sleep_for(std::chrono::duration<double>(std::atof(argv[2]) / 2));
    Status st = c.rank() == 0 ? c.recv(&x, 1, core::DType::f32, 1, 99) : c.barrier();
    if (!st.ok()) {
      std::fprintf(stderr, "planner run: error: %s\n", st.error().message.c_str());
      s.abort_job(3);
    }
    return 0;  // not reached
  }
  if (mode == "stall-dp") {
    auto dp = c.split(c.rank() % 2, c.rank());  // world #1
    if (!dp) {
      std::fprintf(stderr, "planner run: error: %s\n", dp.error().message.c_str());
      s.abort_job(1);
    }
    if (c.rank() == 3) std::raise(SIGSTOP);
    float x = 1.0f;
    Status st = (*dp)->all_reduce(&x, 1, core::DType::f32);  // dp #1
    if (st.ok()) st = c.all_reduce(&x, 1, core::DType::f32);  // world #2
    if (!st.ok()) {
      std::fprintf(stderr, "planner run: error: %s\n", st.error().message.c_str());
      s.abort_job(3);
    }
    return 0;  // not reached: rank 3 never arrives
  }
  for (int step = 1; step <= 2; ++step) {
    if (step == 2 && c.rank() == 1) {
      if (mode == "stall") std::raise(SIGSTOP);
      if (mode == "crash") std::abort();
      if (mode == "segv") std::raise(SIGSEGV);
    }
    float x = 1.0f;
    Status st = c.all_reduce(&x, 1, core::DType::f32);  // collective #step
    if (!st.ok()) {
      std::fprintf(stderr, "planner run: error: %s\n", st.error().message.c_str());
      s.abort_job(3);
    }
    if (x != float(c.size())) {
      std::fprintf(stderr, "planner run: error: step %d sum %g != %d\n", step, x, c.size());
      s.abort_job(1);
    }
  }
  std::printf("rank %d: done\n", c.rank());
  return 0;
}
