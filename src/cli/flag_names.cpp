// Config fields in library messages written as the CLI's flags (flag_names.hpp).

#include "planner/cli/flag_names.hpp"

#include <array>
#include <utility>

namespace planner::cli {
namespace {

// Config field (estimate::ParallelConfig, search::Space, onnx::ImportOptions,
// cost settings) -> the flag that sets it.
constexpr std::array<std::pair<std::string_view, std::string_view>, 21> kFlags{{
    {"dp", "--dp"},
    {"tp", "--tp"},
    {"pp", "--pp"},
    {"cp", "--cp"},
    {"ep", "--ep"},
    {"vp", "--vp"},
    {"sequence_parallel", "--sp"},
    {"micro_batch", "--micro-batch"},
    {"global_batch", "--global-batch"},
    {"devices", "--devices"},
    {"devices_per_node", "--gpus-per-node"},
    {"zero", "--zero"},
    {"distributed_optimizer", "--distributed-optimizer"},
    {"schedule", "--schedule"},
    {"grad_reduce_bytes", "--grad-reduce-bytes"},
    {"recompute", "--recompute"},
    {"recompute_modules", "--recompute-modules"},
    {"fix", "--fix"},
    {"batch", "--batch"},
    {"precision", "--precision"},
    {"attention", "--attention"},
}};

}  // namespace

std::string with_flags(std::string_view message) {
  std::string out;
  out.reserve(message.size());
  std::size_t i = 0;
  while (i < message.size()) {
    const auto open = message.find('`', i);
    if (open == std::string_view::npos) break;
    const auto close = message.find('`', open + 1);
    if (close == std::string_view::npos) break;
    const std::string_view field = message.substr(open + 1, close - open - 1);
    std::string_view flag;
    for (const auto& [f, fl] : kFlags)
      if (f == field) flag = fl;
    out.append(message.substr(i, open - i));
    if (flag.empty()) {
      out.append(message.substr(open, close - open + 1));
    } else {
      out.append(flag);
    }
    i = close + 1;
  }
  out.append(message.substr(i));
  return out;
}

}  // namespace planner::cli
