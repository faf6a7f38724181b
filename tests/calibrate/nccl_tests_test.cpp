// The nccl-tests reader on the hand-made sample (data/nccl_tests_dgx_a100.txt,
// written by data/make_nccl_sample.py in the format of nccl-tests 2.x) and on
// small texts, good and bad.

#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>
#include <string>

#include "planner/calibrate/nccl_tests.hpp"

using namespace planner;
using namespace planner::calibrate;
using core::Collective;

namespace {

std::string sample() {
  std::ifstream in(std::string(PLANNER_SOURCE_DIR) + "/tests/calibrate/data/nccl_tests_dgx_a100.txt");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

const char* kHeader =
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw "
    "#wrong\n"
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n";

std::string devices(int n, int per_host) {
  std::string out = "# nThread 1 nGpus 1 minBytes 8 maxBytes 1024 step: 2(factor) warmup iters: 5 iters: 20\n";
  for (int r = 0; r < n; ++r)
    out += "#  Rank  " + std::to_string(r) + " Group  0 Pid  100 on node" + std::to_string(r / per_host) +
           " device  0 [0x07] NVIDIA H100\n";
  return out;
}

}  // namespace

TEST_CASE("nccl-tests sample: six runs with their collectives, ranks and rows", "[calibrate][nccl]") {
  auto runs = parse_nccl_tests(sample(), "sample.txt");
  REQUIRE(runs);
  REQUIRE(runs->size() == 6);
  const auto& ar = (*runs)[0];
  CHECK(ar.kind == Collective::all_reduce);
  CHECK(ar.test == "all_reduce_perf");
  CHECK(ar.ranks == 8);
  CHECK(ar.ranks_per_node == 8);
  CHECK(ar.hosts == std::vector<std::string>{"dgx-a100-01"});
  CHECK(ar.device == "NVIDIA A100-SXM4-80GB");
  REQUIRE(ar.rows.size() == 11);
  // First row: "1024  256  float  sum  -1  49.96  0.02  0.04  0  50.81 ..."
  CHECK(ar.rows[0].size.value == 1024);
  CHECK(ar.rows[0].count == 256);
  CHECK(ar.rows[0].type == "float");
  CHECK(ar.rows[0].redop == "sum");
  CHECK(ar.rows[0].root == -1);
  CHECK(ar.rows[0].time.value == Approx(49.96e-6));
  REQUIRE(ar.rows[0].time_in_place);
  CHECK(ar.rows[0].time_in_place->value == Approx(50.81e-6));
  CHECK(ar.rows.back().size.value == 1073741824);
  CHECK((*runs)[1].kind == Collective::all_gather);
  CHECK((*runs)[2].kind == Collective::reduce_scatter);
  CHECK((*runs)[3].kind == Collective::all_to_all);
  CHECK((*runs)[4].kind == Collective::broadcast);
  CHECK((*runs)[4].rows[0].root == 0);
  const auto& two = (*runs)[5];
  CHECK(two.ranks == 16);
  CHECK(two.ranks_per_node == 8);
  CHECK(two.hosts.size() == 2);
}

TEST_CASE("nccl-tests: pre-2.10 format (no root column, 'error' column) and logs between lines", "[calibrate][nccl]") {
  std::string text = devices(2, 1) +
                     "node0:123:456 [0] NCCL INFO comm 0x55 rank 0 nranks 2 - Init COMPLETE\n"
                     "#       size         count      type   redop     time   algbw   busbw  error     time   algbw   "
                     "busbw  error\n"
                     "     1048576        262144     float     sum    120.1    8.73    8.73  0e+00    115.5    9.08    "
                     "9.08  0e+00\n"
                     "     4194304       1048576     float     sum    212.5   19.74   19.74  0e+00    210.2   19.95   "
                     "19.95  0e+00\n";
  auto runs = parse_nccl_tests(text, "old.txt");
  REQUIRE(runs);
  REQUIRE(runs->size() == 1);
  // No test name: count x 4 B = size and redop sum, no root -> all_reduce.
  CHECK((*runs)[0].kind == Collective::all_reduce);
  CHECK((*runs)[0].test.empty());
  CHECK((*runs)[0].ranks == 2);
  CHECK((*runs)[0].ranks_per_node == 1);
  CHECK((*runs)[0].rows[1].time.value == Approx(212.5e-6));
}

TEST_CASE("nccl-tests: the command line names the test, size-0 rows are skipped", "[calibrate][nccl]") {
  std::string text = "$ mpirun -np 4 ./build/alltoall_perf -b 0 -e 1M\n" + devices(4, 4) + kHeader +
                     "           0             0     float    none      -1     5.70    0.00    0.00      0     5.54    "
                     "0.00    0.00    N/A\n"
                     "     1048576         65536     float    none      -1    40.00   26.21   19.66      0    41.00   "
                     "25.58   19.18    N/A\n";
  auto runs = parse_nccl_tests(text, "a2a.txt");
  REQUIRE(runs);
  CHECK((*runs)[0].kind == Collective::all_to_all);
  REQUIRE((*runs)[0].rows.size() == 1);
  CHECK((*runs)[0].rows[0].count == 65536);
}

TEST_CASE("nccl-tests: bad inputs are one-line errors naming the line", "[calibrate][nccl]") {
  auto message = [](const std::string& text) {
    auto r = parse_nccl_tests(text, "f.txt");
    REQUIRE_FALSE(r);
    CHECK(r.error().message.find('\n') == std::string::npos);
    return r.error().message;
  };
  CHECK(message("hello world\nthis is not nccl-tests output\n") ==
        "f.txt: no nccl-tests table found (expected a header '#  size  count  type  redop  root  time  algbw  busbw "
        "...' followed by rows)");
  CHECK(message("").find("no nccl-tests table found") != std::string::npos);
  // A row with a missing column (line 4: 2 device lines + nThread + header = lines 1..5).
  std::string cut = devices(2, 2) + kHeader + "     1048576        262144     float     sum      -1    120.1\n";
  CHECK(message(cut) == "f.txt:6: 6 columns, the header at line 4 has 13");
  std::string wrong = devices(2, 2) + kHeader +
                      "     1048576        262144     float     sum      -1    120.1    8.73    8.73      3    115.5    "
                      "9.08    9.08      0\n";
  CHECK(message(wrong) == "f.txt:6: #wrong = 3: the run produced wrong results; not fitted");
  std::string nodev = std::string(kHeader) +
                      "     1048576        262144     float     sum      -1    120.1    8.73    8.73      0    115.5    "
                      "9.08    9.08      0\n";
  CHECK(message(nodev).find("no device lines") != std::string::npos);
  // all_gather and alltoall rows look alike: without a name it is an error.
  std::string ambiguous = devices(4, 4) + kHeader +
                          "     1048576         65536     float    none      -1    40.00   26.21   19.66      0    41.00 "
                          "  25.58   19.18      0\n";
  CHECK(message(ambiguous).find("cannot tell which collective") != std::string::npos);
  std::string reduce = "# Collective test starting: reduce_perf\n" + devices(2, 2);
  CHECK(message(reduce).find("reduce_perf is not a collective the cost model prices") != std::string::npos);
  std::string uneven = "# Collective test starting: all_reduce_perf\n" + devices(3, 2) + kHeader +
                       "     1048576        262144     float     sum      -1    120.1    8.73    8.73      0    115.5    "
                       "9.08    9.08      0\n";
  CHECK(message(uneven).find("hosts run different rank counts") != std::string::npos);
  std::string nan = devices(2, 2) + kHeader +
                    "     1048576        262144     float     sum      -1    abc    8.73    8.73      0    115.5    "
                    "9.08    9.08      0\n";
  CHECK(message(nan) == "f.txt:6: time 'abc' is not a number of microseconds");
  CHECK(message(std::string("a\0b", 3)).find("NUL") != std::string::npos);
}
