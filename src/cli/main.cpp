// planner: parallel-strategy planner and cost model for distributed training.
// The subcommands come from one table (commands()); each lives in its own
// file src/cli/<name>_cmd.cpp. Only this file exits.

#include <cstdio>
#include <iostream>
#include <string>

#include <fmt/core.h>

#include "planner/cli/command.hpp"
#include "planner/cli/flag_names.hpp"
#include "planner/cli/terminal.hpp"

namespace planner::cli {

namespace {
constexpr CommandSpec kCommands[] = {
    {"inspect", "Import an ONNX model and show its parameters, FLOPs, ops and repeated blocks",
     "planner inspect models/gpt2-small.onnx --batch 8", &setup_inspect},
    {"model", "Write a standard architecture (gpt, llama, bert, t5, moe, llama-moe, mlp, resnet, widedeep) as ONNX",
     "planner model gpt --layers 96 --hidden 12288 --heads 96 --seq 2048 --vocab 51200 -o gpt3.onnx",
     &setup_model},
    {"estimate", "Predict step time, MFU and memory per device of one parallel layout",
     "planner estimate gpt3.onnx --profile a100-sxm4-80gb --devices 1024 --tp 8 --pp 16 --micro-batch 1 "
     "--global-batch 1536 --recompute full",
     &setup_estimate},
    {"search", "Find the fastest layout that fits and write it as a plan file",
     "planner search gpt3.onnx --devices 1024 --global-batch 1536 -o plan.json", &setup_search},
    {"export", "Translate a plan into Megatron-LM, DeepSpeed, torchtitan or MindSpore settings",
     "planner export plan.json --to megatron -o megatron_args.sh", &setup_export},
    {"report", "Write a plan as one self-contained HTML page (layout, timeline, memory, alternatives)",
     "planner report plan.json -o report.html", &setup_report},
    {"check", "Gate a model's best plan (or a plan file) on step time, memory and regression (CI)",
     "planner check models/gpt2-small.onnx --devices 8 --global-batch 64 --baseline base.plan.json "
     "--max-regression 2 --junit gate.xml",
     &setup_check},
    {"completion", "Print a shell completion script (bash)",
     "source <(planner completion bash)", &setup_completion},
    {"calibrate", "Measure a cluster profile: CPU kernels and MPI collectives, or fit nccl-tests output",
     "mpirun -n 2 planner calibrate --backend cpu -o my-cpu.json", &setup_calibrate},
    {"run", "Execute a plan on MPI ranks (--replay: real GEMMs and collectives at its sharded shapes) and time it",
     "mpirun -n 8 planner run plan.json --replay --steps 5 -o measured.json", &setup_run},
    {"compare", "Set a plan's prediction against what planner run measured",
     "planner compare plan.json measured.json", &setup_compare},
    {"validate", "Run the search's best layouts and baselines on MPI ranks and check the predicted ranking and speedup",
     "mpirun -n 4 planner validate model.onnx --profile my-cpu.json --candidates 3 -o validation.json",
     &setup_validate},
};
}  // namespace

std::span<const CommandSpec> commands() { return kCommands; }

int fail(std::string_view cmd, std::string_view message) {
  // One line, whatever the message echoes from the input: control
  // characters (newline, escape) are written as \xNN.
  std::string line;
  line.reserve(message.size());
  for (char ch : with_flags(message)) {
    const auto u = static_cast<unsigned char>(ch);
    if (u < 0x20 || u == 0x7f) line += fmt::format("\\x{:02x}", u);
    else line += ch;
  }
  fmt::print(stderr, "planner {}: error: {}\n", cmd, line);
  return kExitBadInput;
}

}  // namespace planner::cli

int main(int argc, char** argv) {
  using namespace planner::cli;
  CLI::App app{"planner: parallel-strategy planner and cost model for distributed deep-learning training"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "planner 0.1.0");
  add_verbosity_flags(app);
  app.fallthrough();  // -q/-v also after the subcommand
  std::vector<std::pair<CLI::App*, Runner>> runners;
  for (const auto& c : commands()) {
    auto* sub = app.add_subcommand(std::string(c.name), std::string(c.summary));
    sub->footer(fmt::format("Example:\n  {}\n", c.example));
    runners.emplace_back(sub, c.setup(*sub));
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string sub;
    for (const auto& [s, r] : runners)
      if (s->parsed()) sub = s->get_name();
    fmt::print(stderr, "planner{}{}: error: {}\n", sub.empty() ? "" : " ", sub, e.what());
    return kExitBadInput;
  }
  for (auto& [sub, run] : runners)
    if (sub->parsed()) {
      try {
        return run();
      } catch (const std::exception& e) {
        // Libraries return errors as values; this is a last line of defence.
        fmt::print(stderr, "planner {}: internal error: {}\n", sub->get_name(), e.what());
        return 3;
      }
    }
  return kExitBadInput;
}
