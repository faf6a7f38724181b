// planner export PLAN.json --to megatron|deepspeed|torchtitan|mindspore:
// the plan as a framework's launch configuration (docs/export.md). What the
// framework cannot express is a warning on stderr and a comment in the
// output where the format has comments (DeepSpeed's strict JSON has none:
// its notes go to stderr, or to --notes FILE); --strict makes any warning
// exit 1 (nothing is written then).

#include <cstdio>
#include <memory>

#include <fmt/format.h>

#include "planner/cli/command.hpp"
#include "planner/core/io.hpp"
#include "planner/exporters/exporters.hpp"
#include "planner/plan/plan.hpp"

namespace planner::cli {
namespace {

struct ExportArgs {
  std::string plan;
  std::string to;
  std::string output;
  std::string strategy_file;
  std::string notes;  // --notes: the header, losses and notes as plain lines
  std::string version;
  bool force = false;
  bool strict = false;
};

int run_export(const ExportArgs& a) {
  auto fw = exporters::parse_framework(a.to);
  if (!fw) return fail("export", "--to: " + fw.error().message);
  if (!a.strategy_file.empty() && *fw != exporters::Framework::mindspore)
    return fail("export", "--strategy-file is for --to mindspore only");
  const auto mode = a.force ? io::Overwrite::replace : io::Overwrite::refuse;
  if (!a.output.empty())
    if (auto st = io::check_writable(a.output, mode); !st) return fail("export", st.error().message);
  if (!a.strategy_file.empty())
    if (auto st = io::check_writable(a.strategy_file, mode); !st) return fail("export", st.error().message);
  if (!a.notes.empty())
    if (auto st = io::check_writable(a.notes, mode); !st) return fail("export", st.error().message);
  auto text = io::read_file(a.plan);
  if (!text) return fail("export", text.error().message);
  auto plan = plan::from_json(*text, a.plan);
  if (!plan) return fail("export", plan.error().message);
  exporters::Options opts;
  opts.version = a.version;
  opts.source = a.plan;
  auto out = exporters::export_plan(*plan, *fw, opts);
  if (!out) return fail("export", out.error().message);

  for (const auto& w : out->warnings)
    fmt::print(stderr, "planner export: {}: {}\n", a.strict ? "error" : "warning", w);
  if (a.strict && !out->warnings.empty()) {
    fmt::print(stderr, "planner export: --strict: {} setting{} of the plan cannot be expressed in {}; nothing written\n",
               out->warnings.size(), out->warnings.size() == 1 ? "" : "s", exporters::framework_name(*fw));
    return kExitViolation;
  }
  // A format without comments (DeepSpeed's strict JSON) cannot carry the
  // notes: they go to stderr, unless --notes writes them to a file.
  if (!out->comments_in_text && a.notes.empty())
    for (const auto& n : out->notes) fmt::print(stderr, "planner export: note: {}\n", n);
  if (a.output.empty() || a.output == "-") {
    fmt::print("{}", out->text);
  } else if (auto st = io::write_file(a.output, out->text, mode); !st) {
    return fail("export", st.error().message);
  }
  if (!a.strategy_file.empty())
    if (auto st = io::write_file(a.strategy_file, out->strategy_file, mode); !st) return fail("export", st.error().message);
  if (!a.notes.empty())
    if (auto st = io::write_file(a.notes, out->notes_text, mode); !st) return fail("export", st.error().message);
  return kExitOk;
}

}  // namespace

Runner setup_export(CLI::App& sub) {
  auto a = std::make_shared<ExportArgs>();
  sub.add_option("plan", a->plan, "Plan file (planner.plan/v1)")->required();
  sub.add_option("--to", a->to, "megatron | deepspeed | torchtitan | mindspore")->required();
  sub.add_option("-o,--output", a->output, "File to write (default: stdout; replaced only with --force)");
  sub.add_flag("--force", a->force, "Replace existing output files");
  sub.add_flag("--strict", a->strict, "Exit 1 when the framework cannot express part of the plan");
  sub.add_option("--framework-version", a->version,
                 "Target version: megatron core_v0.12.0 (default) or core_v0.8.0; deepspeed v0.16.9; "
                 "torchtitan v0.2.2; mindspore r2.4.0");
  sub.add_option("--strategy-file", a->strategy_file, "MindSpore: also write the shard() strategies as JSON");
  sub.add_option("--notes", a->notes,
                 "Also write the header, what the target loses (LOST) and what to set by hand (note) as plain lines "
                 "(DeepSpeed's strict JSON has no comments: without --notes its notes go to stderr)");
  return [a]() -> int { return run_export(*a); };
}

}  // namespace planner::cli
