#pragma once
/// Reader of nccl-tests output (NVIDIA/nccl-tests 2.x: all_reduce_perf,
/// all_gather_perf, reduce_scatter_perf, alltoall_perf, broadcast_perf).
///
/// A file may hold several runs one after the other. A run (a "section")
/// starts at its "# nThread ..." line; the devices it lists
/// ("#  Rank  3 Group  0 Pid 123 on node01 device  3 [0x4a] NVIDIA ...")
/// give the rank count and ranks per host; its header names the columns
/// (2.x: size count type redop root time algbw busbw #wrong, twice: out of
/// place then in place; before 2.10: no root column and "error" instead of
/// #wrong); its rows follow. The collective comes from the test's name
/// ("# Collective test starting: all_gather_perf" or the command line
/// "./build/all_gather_perf ...") anywhere before the first row, else from
/// the row shape where that is unambiguous. Lines that are not nccl-tests
/// output (NCCL INFO logs, shell prompts) are skipped.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "planner/cluster/collective.hpp"
#include "planner/core/result.hpp"
#include "planner/core/units.hpp"

namespace planner::calibrate {

/// One row of an nccl-tests table.
struct NcclRow {
  int line = 0;                 ///< 1-based line in the file
  Bytes size;                   ///< the "size" column (nccl-tests message size)
  std::int64_t count = 0;       ///< elements
  std::string type;             ///< "float", "half", ...
  std::string redop;            ///< "sum", "none", ...
  int root = -1;                ///< -1 when the test has no root or no root column
  Seconds time;                 ///< out-of-place time
  double algbw_GBps = 0;        ///< out-of-place
  double busbw_GBps = 0;        ///< out-of-place
  std::optional<Seconds> time_in_place;  ///< absent when the column reads N/A
};

/// One run of one test.
struct NcclSection {
  int line = 0;  ///< where it starts
  core::Collective kind = core::Collective::all_reduce;
  std::string test;                ///< "all_reduce_perf" ("" when inferred)
  int ranks = 0;
  int ranks_per_node = 0;          ///< ranks on each host (equal on every host)
  std::vector<std::string> hosts;  ///< distinct, in rank order
  std::string device;              ///< device name of rank 0 ("" if absent)
  std::vector<NcclRow> rows;       ///< rows with size > 0, in file order
};

/// Parses the whole text. Errors are one line "<origin>:<line>: <problem>"
/// (or "<origin>: <problem>" for the file as a whole): no table at all, a
/// row whose column count differs from its header, a number that does not
/// parse or is not positive, a row with #wrong > 0, a run without device
/// lines or with different rank counts per host, an unknown or unsupported
/// test, a collective that cannot be told from the rows.
Result<std::vector<NcclSection>> parse_nccl_tests(std::string_view text, std::string_view origin);

}  // namespace planner::calibrate
