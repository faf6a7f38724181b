#pragma once
/// `planner model`: standard architectures written as shape-only ONNX models
/// (opset 17, standard ops only, weights declared as external data that is
/// not written), each ending in its training loss.
///
/// Design note: a model is built op by op into an ONNX GraphProto by a small
/// private builder (src/modelgen/builder.hpp); every tensor is static (batch,
/// sequence and sizes come from the spec). Names are layer-numbered so later
/// tools can match patterns: weights `layers.3.attn.qkv.weight`, nodes
/// `layers.3/attn/qkv/MatMul`, node outputs `layers.3/attn/qkv/MatMul_output_0`.
///
/// What becomes what:
///   - trainable weights  -> FLOAT initializers (external data, or inline
///                           random values with with_weights);
///   - integer tables     -> INT64 initializers with inline data (shapes,
///                           position ids, TopK sizes);
///   - float constants    -> `Constant` nodes (scales, epsilons, rotary
///                           frequencies, BatchNorm running statistics), so
///                           that every FLOAT initializer is a parameter.
/// Layers of one stack are structurally identical: what they share (causal
/// mask, rotary tables, position-bias tables) is computed once before them.
///
/// Architectures (graph inputs; simplifications). No dropout anywhere; all
/// tensors FLOAT; attention unfused (MatMul, scale, mask/bias Add, Softmax,
/// MatMul); GeLU in erf form from Div/Erf/Add/Mul/Mul.
///   gpt      input_ids, labels [B,S]. Megatron GPT: learned positions,
///            pre-LN, fused QKV [h,3h] + Split, causal mask, GeLU MLP, final
///            LN, untied LM head [h,V], SoftmaxCrossEntropyLoss.
///   llama    input_ids, labels. RMSNorm from Mul/ReduceMean/Add/Sqrt/Div/Mul,
///            rotary (rotate-half via Slice/Neg/Concat, cos/sin tables from
///            Cast/Mul/Concat/Cos/Sin once), GQA k/v repeated by
///            Reshape/Expand/Reshape, SwiGLU MLP, no biases, untied head.
///   bert     input_ids, token_type_ids, labels. Token + position + segment
///            embeddings, post-LN, GeLU, MLM head (dense, GeLU, LN, untied
///            decoder with bias), loss over all positions (ignore_index -100);
///            no pooler/NSP head, no padding mask.
///   t5       input_ids, decoder_input_ids (length --seq), labels. Shared
///            embedding, RMSNorm, no biases, ReLU MLP, unscaled scores, untied
///            head. Relative position bias simplified: T5's [32, heads] table
///            per stack, but buckets clip(j-i,-16,15)+16 (encoder) and
///            clip(i-j,0,31) (decoder) instead of log-spaced ones.
///   moe      as gpt, every layer's MLP replaced by --experts GeLU experts
///            (one weight set each) behind a router (MatMul, Softmax, TopK
///            --top-k). Static dispatch: each expert runs on exactly
///            capacity = ceil(B*S*top_k/experts) tokens, its highest-gate ones
///            (TopK over tokens of the ScatterElements'd gate matrix), Gather,
///            MLP, scale by gate; one ScatterND(add) of all experts' rows
///            back (concatenated); overflow tokens dropped.
///   llama-moe  as llama, every layer's MLP replaced by --experts SwiGLU
///            experts of width --ffn behind the router and static dispatch
///            of moe (Mixtral, Qwen3-MoE, GPT-OSS shapes; no shared expert).
///            llama and llama-moe take --head-dim (query/key/value size per
///            head; 0 = hidden/heads, e.g. Qwen3's 128 at hidden 2048, 32 heads).
///   mlp      inputs, targets [B,width]. --layers Gemm width->width, Relu
///            between, MSE loss (Sub, Mul, ReduceMean).
///   resnet   images [B,3,image,image], labels [B]. torchvision ResNet v1.5 names;
///            BatchNormalization in inference form (running statistics are
///            shared Constant nodes, not parameters).
///   widedeep sparse_ids [B,fields], dense_features [B,n], labels [B] (0/1).
///            Wide: a [rows,1] table gathered by the ids, ReduceSum over the
///            fields. Deep: a [rows,dim] table gathered by the same ids,
///            concatenated with the dense features, MLP 1024-512-256 -> 1.
///            Logit z = wide + deep; sigmoid binary cross-entropy written as
///            SoftmaxCrossEntropyLoss of [-z/2, z/2] (exactly the binary loss).
///
/// Architecture invariant: the public API has no ONNX or protobuf type; the
/// result is serialized bytes. Same spec, same bytes.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "planner/core/result.hpp"

namespace planner::modelgen {

enum class Arch { gpt, llama, bert, t5, moe, llama_moe, mlp, resnet, widedeep };

/// Every option any architecture reads; arch_options() says which one reads which.
struct ModelSpec {
  Arch arch = Arch::gpt;
  int layers = 12;
  std::int64_t hidden = 768;
  int heads = 12;
  int kv_heads = 0;            ///< llama/llama-moe GQA; 0 = heads
  std::int64_t head_dim = 0;   ///< llama/llama-moe size per head; 0 = hidden/heads
  std::int64_t ffn = 0;        ///< 0 = 4*hidden (gpt/bert/t5/moe), llama default 8/3*hidden rounded up to 256
  std::int64_t seq = 1024;
  std::int64_t vocab = 50257;
  std::int64_t batch = 1;
  int experts = 8;             ///< moe, llama-moe
  int top_k = 2;               ///< moe, llama-moe
  int decoder_layers = 0;      ///< t5; 0 = layers
  std::int64_t width = 1024;   ///< mlp
  int depth = 50;              ///< resnet: 50|101|152
  std::int64_t image = 224;    ///< resnet input side
  std::int64_t classes = 1000; ///< resnet classes
  std::int64_t rows = 1000000; ///< widedeep embedding rows
  std::int64_t dim = 64;       ///< widedeep embedding dim
  std::int64_t fields = 26;    ///< widedeep sparse fields per sample
  std::int64_t dense_features = 13; ///< widedeep dense features
  bool bias = true;            ///< gpt/moe linear layers carry biases (false: MPT-style, no biases)
  bool tie_embeddings = false; ///< gpt, llama, llama-moe: the LM head reads the token embedding, transposed
  bool with_weights = false;   ///< write real random weights inline (fixed seed)
  std::uint64_t seed = 1234;
};

/// Largest model `with_weights` writes (2^28 parameters = 1 GiB of float,
/// well under protobuf's 2 GiB single-message limit).
inline constexpr std::int64_t kMaxInlineParameters = std::int64_t{1} << 28;

/// Parses "gpt", "llama", ...; the error lists the known names.
Result<Arch> parse_arch(const std::string& name);
std::string arch_name(Arch a);
/// All architectures, in the order of the enum.
std::vector<Arch> all_archs();

/// The CLI option names (without "--") an architecture reads, e.g. for gpt
/// {"layers", "hidden", "heads", "ffn", "seq", "vocab", "batch"}.
std::vector<std::string_view> arch_options(Arch a);

/// The feed-forward width actually used: spec.ffn, or the arch default when 0.
std::int64_t effective_ffn(const ModelSpec& spec);
/// Size per attention head: spec.head_dim, or hidden/heads when 0.
std::int64_t head_size(const ModelSpec& spec);
/// Tokens per expert in `moe` and `llama-moe`: ceil(batch*seq*top_k / experts).
std::int64_t moe_capacity(const ModelSpec& spec);

/// Checks the options the spec's arch reads. The error is one line naming the
/// option, e.g. "--hidden 100 is not divisible by --heads 12".
Status validate(const ModelSpec& spec);

/// A built model.
struct BuiltModel {
  std::string bytes;                  ///< serialized ModelProto
  std::int64_t parameter_count = 0;   ///< elements of all FLOAT initializers
  std::int64_t parameter_bytes = 0;   ///< as FLOAT (4 B each); = external data length
  std::int64_t node_count = 0;
  std::int64_t initializer_count = 0; ///< FLOAT (weights) + INT64 (tables)
};

/// Builds the model. Initializers (unless spec.with_weights) point at
/// `data_location` (a file name relative to the model, e.g. "gpt.onnx.data")
/// with consecutive offsets as if it were written; it is not. Errors: those
/// of validate(), with_weights above kMaxInlineParameters, a model whose
/// parameter bytes overflow 64 bits.
Result<BuiltModel> build(const ModelSpec& spec, const std::string& data_location);

/// build(spec, data_location).bytes.
Result<std::string> build_model(const ModelSpec& spec, const std::string& data_location);

}  // namespace planner::modelgen
