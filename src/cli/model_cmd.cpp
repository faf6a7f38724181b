// planner model ARCH [options] -o FILE.onnx: writes a standard architecture
// as a shape-only ONNX training graph (weights declared as external data that
// is not written, or small random weights inline with --with-weights).

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>

#include <fmt/format.h>

#include "planner/cli/command.hpp"
#include "planner/cli/terminal.hpp"
#include "planner/cli/format.hpp"
#include "planner/core/io.hpp"
#include "planner/modelgen/modelgen.hpp"

namespace planner::cli {
namespace {

struct ModelArgs {
  std::string arch;
  std::string output;
  bool force = false;
  bool no_bias = false;
  bool tie_embeddings = false;
  modelgen::ModelSpec spec;
  /// Options that depend on the arch, by name without "--", to reject those
  /// the chosen arch does not read.
  std::map<std::string, CLI::Option*, std::less<>> sized;
  CLI::Option* seed = nullptr;
};

template <typename T>
void add_sized(CLI::App& sub, ModelArgs& a, const char* name, T& field, const std::string& help) {
  auto* o = sub.add_option(fmt::format("--{}", name), field, help)->capture_default_str();
  a.sized.emplace(name, o);
}

int run_model(ModelArgs& a, bool quiet) {
  auto arch = modelgen::parse_arch(a.arch);
  if (!arch) return fail("model", arch.error().message);
  a.spec.arch = *arch;
  const auto reads = modelgen::arch_options(*arch);
  for (const auto& [name, opt] : a.sized) {
    if (opt->count() == 0 || std::find(reads.begin(), reads.end(), name) != reads.end()) continue;
    std::string list;
    for (auto r : reads) list += fmt::format("{}--{}", list.empty() ? "" : " ", r);
    return fail("model", fmt::format("--{} does not apply to {} (it reads {})", name, a.arch, list));
  }
  if (a.no_bias && a.spec.arch != modelgen::Arch::gpt && a.spec.arch != modelgen::Arch::moe)
    return fail("model", fmt::format("--no-bias applies to gpt and moe only (not {})", a.arch));
  a.spec.bias = !a.no_bias;
  if (a.tie_embeddings && a.spec.arch != modelgen::Arch::gpt && a.spec.arch != modelgen::Arch::llama &&
      a.spec.arch != modelgen::Arch::llama_moe)
    return fail("model", fmt::format("--tie-embeddings applies to gpt, llama and llama-moe only (not {})", a.arch));
  a.spec.tie_embeddings = a.tie_embeddings;
  if (a.seed->count() > 0 && !a.spec.with_weights)
    return fail("model", "--seed only applies with --with-weights");

  const auto mode = a.force ? io::Overwrite::replace : io::Overwrite::refuse;
  const std::filesystem::path out(a.output);
  if (auto st = io::check_writable(out, mode); !st) return fail("model", st.error().message);
  const std::string data_location = out.filename().string() + ".data";
  auto built = modelgen::build(a.spec, data_location);
  if (!built) return fail("model", built.error().message);
  if (auto st = io::write_file(out, built->bytes, mode); !st) return fail("model", st.error().message);

  const std::string weights = a.spec.with_weights
                                  ? fmt::format("random weights inline, seed {}", a.spec.seed)
                                  : fmt::format("external data {} declared, not written", data_location);
  if (quiet) return kExitOk;
  fmt::print("wrote {} ({} parameters, {}; {} nodes) to {}\n", a.arch,
             human_count(static_cast<double>(built->parameter_count)), weights, built->node_count,
             out.string());
  return kExitOk;
}

}  // namespace

Runner setup_model(CLI::App& sub) {
  auto a = std::make_shared<ModelArgs>();
  auto& s = a->spec;
  sub.add_option("arch", a->arch, "gpt | llama | bert | t5 | moe | llama-moe | mlp | resnet | widedeep")->required();
  sub.add_option("-o,--output", a->output, "ONNX file to write (refused if it exists, unless --force)")->required();
  sub.add_flag("--force", a->force, "Replace an existing output file");
  sub.add_flag("--no-bias", a->no_bias, "Linear layers without biases (gpt, moe; MPT-style)");
  sub.add_flag("--tie-embeddings", a->tie_embeddings,
               "LM head reads the token embedding, transposed (gpt, llama, llama-moe; GPT-2, Megatron GPT, BLOOM, MPT, Gemma)");
  sub.add_flag("--with-weights", s.with_weights,
               "Write random weights inline (N(0, 0.02^2), fixed seed; models up to 2^28 parameters)");
  a->seed = sub.add_option("--seed", s.seed, "Seed of the random weights (with --with-weights)")->capture_default_str();
  add_sized(sub, *a, "layers", s.layers, "Layers (gpt llama bert t5 moe llama-moe: transformer layers, t5: encoder; mlp: Gemm layers)");
  add_sized(sub, *a, "hidden", s.hidden, "Hidden size (transformers)");
  add_sized(sub, *a, "heads", s.heads, "Attention heads (transformers)");
  add_sized(sub, *a, "kv-heads", s.kv_heads, "Key/value heads for grouped-query attention (llama, llama-moe; 0 = heads)");
  add_sized(sub, *a, "head-dim", s.head_dim, "Size per attention head (llama, llama-moe; 0 = hidden/heads)");
  add_sized(sub, *a, "ffn", s.ffn, "Feed-forward width, per expert in moe and llama-moe (0 = 4*hidden; llama, llama-moe: 8/3*hidden rounded up to 256)");
  add_sized(sub, *a, "seq", s.seq, "Sequence length (transformers)");
  add_sized(sub, *a, "vocab", s.vocab, "Vocabulary size (transformers)");
  add_sized(sub, *a, "batch", s.batch, "Batch size (every arch)");
  add_sized(sub, *a, "experts", s.experts, "Experts per MoE layer (moe, llama-moe)");
  add_sized(sub, *a, "top-k", s.top_k, "Experts per token (moe, llama-moe)");
  add_sized(sub, *a, "decoder-layers", s.decoder_layers, "Decoder layers (t5; 0 = --layers)");
  add_sized(sub, *a, "width", s.width, "Layer width (mlp)");
  add_sized(sub, *a, "depth", s.depth, "ResNet depth: 50, 101 or 152 (resnet)");
  add_sized(sub, *a, "image", s.image, "Image side in pixels (resnet)");
  add_sized(sub, *a, "classes", s.classes, "Classes (resnet)");
  add_sized(sub, *a, "rows", s.rows, "Embedding table rows (widedeep)");
  add_sized(sub, *a, "dim", s.dim, "Embedding dimension (widedeep)");
  add_sized(sub, *a, "fields", s.fields, "Sparse ids per sample (widedeep)");
  add_sized(sub, *a, "dense-features", s.dense_features, "Dense features per sample (widedeep)");
  return [a, &sub]() { return run_model(*a, verbosity_of(sub) == Verbosity::quiet); };
}

}  // namespace planner::cli
