#pragma once
/// Exporters: a plan file (`planner.plan/v1`) translated into the launch
/// configuration of a training framework (docs/export.md):
///
///   Megatron-LM  command-line arguments (a shell snippet)
///   DeepSpeed    a config JSON, strict (no comments: Hugging Face Trainer and
///                Accelerate load it with Python's json.load)
///   torchtitan   a job-config TOML
///   MindSpore    a Python snippet: set_auto_parallel_context(...) and every
///                op's shard() strategy; optionally a JSON strategy file
///
/// Design note. Each exporter is a pure function of the plan: the same plan
/// gives the same bytes. Whatever the plan uses that the target cannot
/// express (op-level sharding beyond Megatron's column/row patterns, uneven
/// stages on a version without them, ZeRO-3 with a DeepSpeed pipeline, ...)
/// is never dropped silently: it is returned as a warning and written as a
/// comment in the output naming what is lost (where the format has
/// comments; DeepSpeed's strict JSON has none, and notes_text carries them).
/// `notes` are things the output cannot carry but the user can set by hand
/// (model shape, data paths); they are comments too, never warnings.
///
/// Architecture invariant: exporters depend on plan and core only; they know
/// nothing about graphs, costs or ONNX.

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "planner/core/result.hpp"
#include "planner/plan/plan.hpp"

namespace planner::exporters {

enum class Framework { megatron, deepspeed, torchtitan, mindspore };

/// "megatron" | "deepspeed" | "torchtitan" | "mindspore".
Result<Framework> parse_framework(std::string_view name);
std::string_view framework_name(Framework f);

/// The framework versions an exporter can target, the default first. Every
/// option name it emits for a version is listed with its documentation
/// address in tests/exporters/names/<framework>.tsv.
std::span<const std::string_view> versions(Framework f);

struct Options {
  std::string version;  ///< "" = the framework's default (versions(f)[0])
  std::string source;   ///< the plan file's name, for the header comment
};

struct Export {
  std::string text;                   ///< the exported file
  std::vector<std::string> warnings;  ///< one line each: what the target cannot express (also comments in `text`)
  std::vector<std::string> notes;     ///< one line each: what to set by hand (also comments in `text`)
  /// The header (planner version, source plan, model, layout, prediction),
  /// every warning as "LOST: ..." and every note as "note: ...", one per
  /// line, without comment markers (`planner export --notes FILE`).
  std::string notes_text;
  /// Whether `text` carries notes_text as comments (false for DeepSpeed).
  bool comments_in_text = true;
  /// MindSpore only: the op strategies as JSON (planner.mindspore-strategy/v1); "" otherwise.
  std::string strategy_file;
};

/// Translates `plan` for `f`. Errors: an unknown version (the message lists
/// the known ones).
Result<Export> export_plan(const plan::Plan& plan, Framework f, const Options& options = {});

Result<Export> to_megatron(const plan::Plan& plan, const Options& options = {});
Result<Export> to_deepspeed(const plan::Plan& plan, const Options& options = {});
Result<Export> to_torchtitan(const plan::Plan& plan, const Options& options = {});
Result<Export> to_mindspore(const plan::Plan& plan, const Options& options = {});

/// Why an op strategy falls outside Megatron-LM's tensor-parallel patterns
/// (column-parallel `tp:n` and row-parallel `tp:k` GEMMs, attention split by
/// heads, vocabulary-parallel embedding and cross-entropy, elementwise and
/// norm ops following them, norms and elementwise ops split along the
/// sequence under sequence parallelism); "" when it is inside them.
std::string beyond_megatron(const plan::OpStrategy& s, bool sequence_parallel);

}  // namespace planner::exporters
