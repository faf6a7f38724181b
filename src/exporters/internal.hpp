#pragma once
// Helpers shared by the four exporters (not a public header).

#include <string>
#include <string_view>
#include <vector>

#include "planner/exporters/exporters.hpp"

namespace planner::exporters::detail {

/// Collects what an export loses (warnings) and what the user sets by hand (notes).
struct Findings {
  std::vector<std::string> warnings;
  std::vector<std::string> notes;
  void lost(std::string what) { warnings.push_back(std::move(what)); }
  void note(std::string what) { notes.push_back(std::move(what)); }
};

/// The version to target: options.version, or the framework's default.
/// Error names the known versions.
Result<std::string> pick_version(Framework f, const Options& options);

/// Repeated layers per chunk (last - first + 1, or 0), in chunk order.
std::vector<int> layers_per_chunk(const plan::Plan& p);

/// Sum of layers_per_chunk.
int total_layers(const plan::Plan& p);

/// Layers per pipeline rank (the sum over its vp chunks).
std::vector<int> layers_per_rank(const plan::Plan& p);

/// True when every chunk holds the same number of layers.
bool even_cut(const plan::Plan& p);

/// "4,4,3,..." (one entry per chunk).
std::string cut_text(const plan::Plan& p);

/// "dp=8 tp=8 pp=16 vp=3 cp=1 ep=1 zero=1 sp recompute=full micro-batch 1 x 192, global 1536".
std::string layout_summary(const plan::Plan& p);

/// Lost when the mesh's non-trivial axes are not ordered pp, dp, cp, tp
/// (outermost first; the order of Megatron, DeepSpeed and torchtitan).
void check_rank_order(const plan::Plan& p, std::string_view framework, Findings& f);

/// One warning per op strategy outside Megatron's tensor-parallel patterns.
void check_megatron_patterns(const plan::Plan& p, std::string_view framework, Findings& f);

/// Warnings for precision_by_class entries other than loss and embedding in
/// fp32 (standard mixed precision) and matmul in fp8 (see fp8_matmuls).
void check_precision_by_class(const plan::Plan& p, std::string_view framework, Findings& f);
/// A LOST line for bf16 optimizer states and a master-weight policy other
/// than fp32 (training.optimizer.state_dtype, master_weights), for targets
/// with no such setting.
void check_optimizer_precision(const plan::Plan& p, std::string_view framework, Findings& f);

/// The plan's GEMMs run in fp8 (precision fp8, or precision_by_class matmul=fp8).
bool fp8_matmuls(const plan::Plan& p);

/// Shortest text that reads back to the same double ("0.0003", "1e-08").
std::string number(double v);

/// The header (title, planner version, source plan, model, layout,
/// prediction) and the findings ("LOST: ...", "note: ..."), one per line,
/// each ending with a newline: Export::notes_text.
std::string header(const plan::Plan& p, std::string_view title, const Options& options, const Findings& f);

/// `lines` with `prefix` ("# ") before each line: header() as comments.
std::string commented(std::string_view lines, std::string_view prefix);

/// The plan's strategy text "((1,1,1),(1,2))" as nested integer lists; an
/// error when it is not of that form.
Result<std::vector<std::vector<long long>>> parse_strategy(std::string_view text);

/// Assembles the result: `header` is header()'s text (Export::notes_text);
/// `comments_in_text`: the text carries it as comments.
Export finish(std::string text, Findings f, std::string header, bool comments_in_text, std::string strategy_file = {});

}  // namespace planner::exporters::detail
