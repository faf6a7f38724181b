// Non-transformer models: mlp, resnet, widedeep.
#include "layers.hpp"

namespace planner::modelgen::detail {

using onnx::TensorProto;

// mlp: `layers` Gemm layers width -> width, Relu between them (not after the
// last), mean squared error against `targets`: mean((y - t)^2).
void build_mlp(Builder& b, const ModelSpec& s) {
  const std::int64_t B = s.batch, W = s.width;
  T x = b.input("inputs", TensorProto::FLOAT, {B, W});
  auto target = b.input("targets", TensorProto::FLOAT, {B, W});
  for (int i = 0; i < s.layers; ++i) {
    const std::string L = fmt::format("layers.{}/fc", i);
    x = b.op(L, "Gemm", {x, b.weight_of(L, ".weight", {W, W}), b.weight_of(L, ".bias", {W}, Init::zeros)});
    if (i + 1 < s.layers) x = b.op(fmt::format("layers.{}", i), "Relu", {x});
  }
  auto diff = b.op("loss", "Sub", {x, target});
  auto sq = b.op("loss", "Mul", {diff, diff});
  auto l = b.op("loss", "ReduceMean", {sq}, {attr("keepdims", std::int64_t{0})});
  b.output(b.rename_last_output(l, "loss"), TensorProto::FLOAT, {});
}

std::vector<int> resnet_stages(int depth) {
  switch (depth) {
    case 50: return {3, 4, 6, 3};
    case 101: return {3, 4, 23, 3};
    case 152: return {3, 8, 36, 3};
    default: return {};
  }
}

namespace {

T conv(Builder& b, const std::string& scope, const T& x, std::int64_t cin, std::int64_t cout,
       std::int64_t k, std::int64_t stride) {
  const std::int64_t p = k / 2;
  return b.op(scope, "Conv", {x, b.weight_of(scope, ".weight", {cout, cin, k, k})},
              {attr("kernel_shape", Dims{k, k}), attr("strides", Dims{stride, stride}),
               attr("pads", Dims{p, p, p, p})});
}

/// BatchNormalization with trainable scale and bias; the running mean and
/// variance (not trainable) are shared Constant nodes per channel count.
T batch_norm(Builder& b, const std::string& scope, const T& x, std::int64_t c) {
  auto mean = b.constant(fmt::format("const.bn_mean.{}", c), {c}, std::vector<float>(static_cast<std::size_t>(c), 0.0f));
  auto var = b.constant(fmt::format("const.bn_var.{}", c), {c}, std::vector<float>(static_cast<std::size_t>(c), 1.0f));
  return b.op(scope, "BatchNormalization",
              {x, b.weight_of(scope, ".weight", {c}, Init::ones), b.weight_of(scope, ".bias", {c}, Init::zeros), mean, var},
              {attr("epsilon", 1e-5f), attr("momentum", 0.9f)});
}

}  // namespace

// ResNet v1.5 (torchvision layout and names): 7x7/2 stem, 3x3/2 max pool,
// bottleneck stages (stride on the 3x3 conv, projection shortcut on the
// first block of each stage), global average pool, FC, cross-entropy.
// BatchNormalization is written in inference form (training_mode 0, one
// output): same shapes and work, no running-statistics outputs.
void build_resnet(Builder& b, const ModelSpec& s) {
  const std::int64_t B = s.batch, H = s.image;
  auto images = b.input("images", TensorProto::FLOAT, {B, 3, H, H});
  auto labels = b.input("labels", TensorProto::INT64, {B});
  T x = b.op("relu", "Relu", {batch_norm(b, "bn1", conv(b, "conv1", images, 3, 64, 7, 2), 64)});
  x = b.op("maxpool", "MaxPool", {x},
           {attr("kernel_shape", Dims{3, 3}), attr("strides", Dims{2, 2}), attr("pads", Dims{1, 1, 1, 1})});
  std::int64_t cin = 64;
  const auto stages = resnet_stages(s.depth);
  for (std::size_t st = 0; st < stages.size(); ++st) {
    const std::int64_t w = std::int64_t{64} << st, cout = 4 * w;
    for (int blk = 0; blk < stages[st]; ++blk) {
      const std::string L = fmt::format("layer{}.{}", st + 1, blk);
      const std::int64_t stride = (blk == 0 && st > 0) ? 2 : 1;
      auto y = b.op(L, "Relu", {batch_norm(b, L + "/bn1", conv(b, L + "/conv1", x, cin, w, 1, 1), w)});
      y = b.op(L, "Relu", {batch_norm(b, L + "/bn2", conv(b, L + "/conv2", y, w, w, 3, stride), w)});
      y = batch_norm(b, L + "/bn3", conv(b, L + "/conv3", y, w, cout, 1, 1), cout);
      T shortcut = x;
      if (blk == 0)
        shortcut = batch_norm(b, L + "/downsample.1", conv(b, L + "/downsample.0", x, cin, cout, 1, stride), cout);
      x = b.op(L, "Relu", {b.op(L, "Add", {y, shortcut})});
      cin = cout;
    }
  }
  x = b.op("avgpool", "GlobalAveragePool", {x});
  x = b.op("flatten", "Flatten", {x}, {attr("axis", std::int64_t{1})});
  auto logits = b.op("fc", "Gemm", {x, b.weight("fc.weight", {cin, s.classes}),
                                    b.weight("fc.bias", {s.classes}, Init::zeros)});
  class_loss(b, logits, labels);
}

// Wide & Deep (Cheng et al. 2016; the seed article's recommender, laid out as
// MindSpore's model_zoo wide_and_deep): `fields` sparse ids per sample.
//   wide  a linear model over the ids: a [rows, 1] table (one weight per id)
//         gathered by the ids, summed over the fields -> [B, 1] (the paper's
//         wide and deep biases add up to one: deep/out's bias is it)
//   deep  a [rows, dim] table gathered by the same ids, flattened, concatenated
//         with the dense features, MLP 1024-512-256 (Relu) -> [B, 1]
// The logit z = wide + deep is trained with the sigmoid binary cross-entropy,
// written as a 2-class softmax cross-entropy of [-z/2, z/2] (one Mul): the
// softmax of that pair at class 1 is e^(z/2) / (e^(-z/2) + e^(z/2)) = sigmoid(z),
// so the loss is exactly the binary one. Labels are 0/1 class ids.
// Reshape targets use -1 for the batch, so the graph holds no batch constant.
void build_widedeep(Builder& b, const ModelSpec& s) {
  const std::int64_t F = s.fields, D = s.dim, Dn = s.dense_features;
  const std::int64_t in = F * D + Dn;
  auto ids = b.input("sparse_ids", TensorProto::INT64, {s.batch, F});
  std::optional<T> dense;
  if (Dn > 0) dense = b.input("dense_features", TensorProto::FLOAT, {s.batch, Dn});
  auto labels = b.input("labels", TensorProto::INT64, {s.batch});
  // Wide: sum over the fields of the ids' weights (its bias is the deep output's).
  auto wide_w = b.op("wide/embedding", "Gather", {b.weight("wide.embedding.weight", {s.rows, 1}), ids});  // [B,F,1]
  auto wide = b.op("wide/sum", "ReduceSum", {wide_w, b.vec({1})}, {attr("keepdims", std::int64_t{0})});  // [B,1]
  // Deep: the embedding of the same ids, the dense features, an MLP to one logit.
  auto emb = b.op("deep/embedding", "Gather", {b.weight("deep.embedding.weight", {s.rows, D}), ids});  // [B,F,D]
  T feat = b.op("deep/embedding", "Reshape", {emb, b.vec({-1, F * D})});
  if (dense) feat = b.op("deep/features", "Concat", {feat, *dense}, {attr("axis", std::int64_t{1})});
  auto gemm = [&](const std::string& scope, const T& x, std::int64_t i, std::int64_t o) {
    return b.op(scope, "Gemm", {x, b.weight_of(scope, ".weight", {i, o}), b.weight_of(scope, ".bias", {o}, Init::zeros)});
  };
  T y = feat;
  std::int64_t prev = in;
  const std::int64_t widths[] = {1024, 512, 256};
  for (int i = 0; i < 3; ++i) {
    const std::string L = fmt::format("deep/fc{}", i + 1);
    y = b.op(L, "Relu", {gemm(L, y, prev, widths[i])});
    prev = widths[i];
  }
  auto deep = gemm("deep/out", y, prev, 1);                   // [B,1]
  auto z = b.op("logit", "Add", {wide, deep});                // [B,1]
  auto pair = b.op("logit", "Mul", {z, b.constant("const.widedeep.half_pair", {2}, {-0.5f, 0.5f})});  // [B,2]
  class_loss(b, pair, labels);
}

}  // namespace planner::modelgen::detail
