// Shape rules: convolutions, pooling, normalisation, resizing, recurrent ops.
#include <algorithm>
#include <cmath>

#include "infer.hpp"

namespace planner::onnx::detail {

namespace {

using I64 = std::int64_t;

I64 ceil_div(I64 a, I64 b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }
I64 floor_div(I64 a, I64 b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

/// Output spatial dims of a sliding window (Conv and pools).
RuleStatus window_dims(RuleCtx& c, const Shape& x, const std::vector<I64>& kernel, bool ceil_mode, Shape& out) {
  const std::size_t n = kernel.size();
  if (x.size() != n + 2) return c.fail("input {} does not match a {}-D kernel", shape_str(x), n);
  auto strides = c.attr_ints("strides").value_or(std::vector<I64>(n, 1));
  auto dil = c.attr_ints("dilations").value_or(std::vector<I64>(n, 1));
  auto pads = c.attr_ints("pads").value_or(std::vector<I64>(2 * n, 0));
  const std::string auto_pad = c.attr_s("auto_pad").value_or("NOTSET");
  if (strides.size() != n || dil.size() != n || pads.size() != 2 * n)
    return c.fail("strides/dilations/pads do not match the kernel rank {}", n);
  for (std::size_t k = 0; k < n; ++k) {
    if (strides[k] <= 0 || dil[k] <= 0) return c.fail("non-positive stride or dilation");
    const I64 in = x[k + 2];
    const I64 ek = (kernel[k] - 1) * dil[k] + 1;
    I64 o;
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") o = ceil_div(in, strides[k]);
    else if (auto_pad == "VALID") o = floor_div(in - ek, strides[k]) + 1;
    else {
      const I64 span = in + pads[k] + pads[k + n] - ek;
      o = (ceil_mode ? ceil_div(span, strides[k]) : floor_div(span, strides[k])) + 1;
      // The last window must start inside the input or its leading padding.
      if (ceil_mode && o > 1 && (o - 1) * strides[k] >= in + pads[k]) --o;
    }
    if (o < 0) return c.fail("window larger than its padded input {} (kernel {})", shape_str(x), ek);
    out.push_back(o);
  }
  return RuleStatus::ok;
}

}  // namespace

RuleStatus rule_conv(RuleCtx& c) {
  if (!c.has(0) || !c.has(1)) return RuleStatus::unknown;
  const bool qlinear = c.node.op_type() == "QLinearConv";
  const Shape& x = c.shape(0);
  const Shape& w = qlinear ? c.shape(3) : c.shape(1);
  if (w.size() < 3 || x.size() != w.size()) return c.fail("input {} and weight {} ranks differ", shape_str(x), shape_str(w));
  auto kernel = c.attr_ints("kernel_shape").value_or(std::vector<I64>(w.begin() + 2, w.end()));
  const I64 group = c.attr_i("group", 1);
  if (group <= 0 || x[1] != w[1] * group)
    return c.fail("input channels {} != weight channels {} x group {}", x[1], w[1], group);
  Shape out{x[0], w[0]};
  if (auto st = window_dims(c, x, kernel, false, out); st != RuleStatus::ok) return st;
  int elem = c.elem(0);
  if (c.node.op_type() == "ConvInteger") elem = kInt32;
  if (qlinear && c.has(7)) elem = c.elem(7);
  c.set(0, std::move(out), elem);
  return RuleStatus::ok;
}

namespace {

RuleStatus rule_qlinear_conv(RuleCtx& c) {
  if (!c.has(3)) return RuleStatus::unknown;
  return rule_conv(c);
}

RuleStatus rule_conv_transpose(RuleCtx& c) {
  if (!c.has(0) || !c.has(1)) return RuleStatus::unknown;
  const Shape& x = c.shape(0);
  const Shape& w = c.shape(1);
  if (w.size() < 3 || x.size() != w.size()) return c.fail("input {} and weight {} ranks differ", shape_str(x), shape_str(w));
  const std::size_t n = w.size() - 2;
  const I64 group = c.attr_i("group", 1);
  if (group <= 0 || x[1] != w[0]) return c.fail("input channels {} != weight dim 0 {}", x[1], w[0]);
  auto kernel = c.attr_ints("kernel_shape").value_or(std::vector<I64>(w.begin() + 2, w.end()));
  auto strides = c.attr_ints("strides").value_or(std::vector<I64>(n, 1));
  auto dil = c.attr_ints("dilations").value_or(std::vector<I64>(n, 1));
  auto pads = c.attr_ints("pads").value_or(std::vector<I64>(2 * n, 0));
  auto opad = c.attr_ints("output_padding").value_or(std::vector<I64>(n, 0));
  const std::string auto_pad = c.attr_s("auto_pad").value_or("NOTSET");
  if (kernel.size() != n || strides.size() != n || dil.size() != n || pads.size() != 2 * n || opad.size() != n)
    return c.fail("attribute ranks do not match the {}-D kernel", n);
  Shape out{x[0], w[1] * group};
  if (auto os = c.attr_ints("output_shape")) {
    if (os->size() < n) return c.fail("output_shape has {} dims, need {}", os->size(), n);
    out.insert(out.end(), os->end() - static_cast<std::ptrdiff_t>(n), os->end());
  } else {
    for (std::size_t k = 0; k < n; ++k) {
      const I64 in = x[k + 2];
      I64 o;
      if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") o = in * strides[k];
      else o = strides[k] * (in - 1) + opad[k] + (kernel[k] - 1) * dil[k] + 1 - pads[k] - pads[k + n];
      if (o < 0) return c.fail("negative output size");
      out.push_back(o);
    }
  }
  c.set(0, std::move(out), c.elem(0));
  return RuleStatus::ok;
}

RuleStatus rule_pool(RuleCtx& c) {
  if (!c.has(0)) return RuleStatus::unknown;
  const Shape& x = c.shape(0);
  auto kernel = c.attr_ints("kernel_shape");
  if (!kernel) return c.fail("pool without kernel_shape");
  Shape out{x.at(0), x.size() > 1 ? x[1] : 1};
  if (x.size() < 2) return c.fail("pool input {} has rank < 2", shape_str(x));
  if (auto st = window_dims(c, x, *kernel, c.attr_i("ceil_mode", 0) != 0, out); st != RuleStatus::ok) return st;
  c.set(0, out, c.elem(0));
  c.set(1, out, kInt64);  // MaxPool indices
  return RuleStatus::ok;
}

RuleStatus rule_global_pool(RuleCtx& c) {
  if (!c.has(0)) return RuleStatus::unknown;
  Shape s = c.shape(0);
  if (s.size() < 2) return c.fail("input {} has rank < 2", shape_str(s));
  for (std::size_t k = 2; k < s.size(); ++k) s[k] = 1;
  c.set(0, std::move(s), c.elem(0));
  return RuleStatus::ok;
}

RuleStatus rule_max_unpool(RuleCtx& c) {
  if (!c.has(0)) return RuleStatus::unknown;
  if (c.has(2)) {
    auto v = c.ints(2);
    if (!v) return RuleStatus::unknown;
    c.set(0, *v, c.elem(0));
    return RuleStatus::ok;
  }
  const Shape& x = c.shape(0);
  auto kernel = c.attr_ints("kernel_shape");
  if (!kernel || x.size() != kernel->size() + 2) return c.fail("MaxUnpool kernel_shape does not match input");
  const std::size_t n = kernel->size();
  auto strides = c.attr_ints("strides").value_or(std::vector<I64>(n, 1));
  auto pads = c.attr_ints("pads").value_or(std::vector<I64>(2 * n, 0));
  if (strides.size() != n || pads.size() != 2 * n) return c.fail("attribute ranks do not match");
  Shape out{x[0], x[1]};
  for (std::size_t k = 0; k < n; ++k) out.push_back((x[k + 2] - 1) * strides[k] + (*kernel)[k] - pads[k] - pads[k + n]);
  c.set(0, std::move(out), c.elem(0));
  return RuleStatus::ok;
}

RuleStatus rule_roi(RuleCtx& c) {
  if (!c.has(0) || !c.has(1)) return RuleStatus::unknown;
  const Shape& x = c.shape(0);
  const I64 rois = c.shape(1).at(0);
  if (c.node.op_type() == "RoiAlign") {
    c.set(0, {rois, x.at(1), c.attr_i("output_height", 1), c.attr_i("output_width", 1)}, c.elem(0));
  } else {
    auto p = c.attr_ints("pooled_shape");
    if (!p || p->size() != 2) return c.fail("MaxRoiPool without pooled_shape");
    c.set(0, {rois, x.at(1), (*p)[0], (*p)[1]}, c.elem(0));
  }
  return RuleStatus::ok;
}

RuleStatus rule_batch_norm(RuleCtx& c) {
  if (!c.has(0)) return RuleStatus::unknown;
  c.same_as(0, 0);
  const Shape& x = c.shape(0);
  if (x.size() >= 2)
    for (std::size_t k = 1; k < c.out.size(); ++k) c.set(k, {x[1]}, c.elem(0));
  return RuleStatus::ok;
}

}  // namespace

/// LayerNormalization (ONNX 17, and the contrib op exporters declare at opsets
/// 1-16 and under com.microsoft): Y like X; Mean and InvStdDev keep the dims
/// before `axis` and have 1 after it.
RuleStatus rule_layer_norm(RuleCtx& c) {
  if (!c.has(0)) return RuleStatus::unknown;
  const Shape& x = c.shape(0);
  c.same_as(0, 0);
  auto axis = norm_axis(c.attr_i("axis", -1), x.size());
  if (!axis) return c.fail("axis out of range for {}", shape_str(x));
  Shape stat = x;
  for (std::size_t k = *axis; k < stat.size(); ++k) stat[k] = 1;
  const int stat_elem = c.elem(0) == kDouble ? kDouble : kFloat;
  for (std::size_t k = 1; k < c.out.size(); ++k) c.set(k, stat, stat_elem);
  return RuleStatus::ok;
}

RuleStatus rule_upsample_scales(RuleCtx& c, const std::vector<double>& scales) {
  const Shape& x = c.shape(0);
  if (scales.size() != x.size()) return c.fail("{} scales for input {}", scales.size(), shape_str(x));
  Shape out(x.size());
  for (std::size_t k = 0; k < x.size(); ++k) {
    if (!(scales[k] > 0) || scales[k] > 1e9) return c.fail("scale {} out of range", scales[k]);
    out[k] = static_cast<I64>(std::floor(static_cast<double>(x[k]) * scales[k] + 1e-9));
  }
  c.set(0, std::move(out), c.elem(0));
  return RuleStatus::ok;
}

namespace {

std::optional<std::vector<double>> float_values(const Values* v) {
  if (!v) return std::nullopt;
  std::vector<double> r(v->size());
  for (std::size_t k = 0; k < r.size(); ++k) r[k] = v->d(k);
  return r;
}

RuleStatus rule_resize(RuleCtx& c) {
  if (!c.has(0)) return RuleStatus::unknown;
  const Shape& x = c.shape(0);
  const std::size_t scales_idx = c.opset > 0 && c.opset <= 10 ? 1 : 2;
  const std::size_t sizes_idx = 3;
  auto axes_attr = c.attr_ints("axes");
  std::vector<std::size_t> axes;
  if (axes_attr) {
    for (auto a : *axes_attr) {
      auto ax = norm_axis(a, x.size());
      if (!ax) return c.fail("axis {} out of range", a);
      axes.push_back(*ax);
    }
  } else {
    for (std::size_t k = 0; k < x.size(); ++k) axes.push_back(k);
  }
  if (c.has(sizes_idx) && c.vals(sizes_idx) && c.vals(sizes_idx)->size() > 0) {
    auto sizes = c.vals(sizes_idx)->as_ints();
    if (sizes.size() != axes.size()) return c.fail("{} sizes for {} axes", sizes.size(), axes.size());
    Shape out = x;
    const std::string policy = c.attr_s("keep_aspect_ratio_policy").value_or("stretch");
    if (policy == "stretch") {
      for (std::size_t k = 0; k < axes.size(); ++k) out[axes[k]] = sizes[k];
    } else {
      double scale = policy == "not_larger" ? 1e300 : 0.0;
      for (std::size_t k = 0; k < axes.size(); ++k) {
        double s = static_cast<double>(sizes[k]) / static_cast<double>(std::max<I64>(x[axes[k]], 1));
        scale = policy == "not_larger" ? std::min(scale, s) : std::max(scale, s);
      }
      for (auto a : axes) out[a] = static_cast<I64>(std::llround(static_cast<double>(x[a]) * scale));
    }
    c.set(0, std::move(out), c.elem(0));
    return RuleStatus::ok;
  }
  if (c.has(scales_idx)) {
    auto sc = float_values(c.vals(scales_idx));
    if (!sc) return RuleStatus::unknown;
    if (sc->empty()) return RuleStatus::unknown;
    std::vector<double> full(x.size(), 1.0);
    if (sc->size() != axes.size()) return c.fail("{} scales for {} axes", sc->size(), axes.size());
    for (std::size_t k = 0; k < axes.size(); ++k) full[axes[k]] = (*sc)[k];
    return rule_upsample_scales(c, full);
  }
  if (auto sc = c.attr_floats("scales")) return rule_upsample_scales(c, *sc);
  return RuleStatus::unknown;
}

RuleStatus rule_upsample(RuleCtx& c) {
  if (!c.has(0)) return RuleStatus::unknown;
  if (auto sc = c.attr_floats("scales")) return rule_upsample_scales(c, *sc);
  if (c.has(1)) {
    auto sc = float_values(c.vals(1));
    if (!sc) return RuleStatus::unknown;
    return rule_upsample_scales(c, *sc);
  }
  // Opset 1 Upsample: height_scale / width_scale on NCHW.
  if (auto h = c.attr_f("height_scale"))
    return rule_upsample_scales(c, {1.0, 1.0, *h, c.attr_f("width_scale").value_or(1.0)});
  return RuleStatus::unknown;
}

RuleStatus rule_depth_space(RuleCtx& c) {
  if (!c.has(0)) return RuleStatus::unknown;
  const Shape& x = c.shape(0);
  const I64 b = c.attr_i("blocksize", 0);
  if (x.size() != 4 || b <= 0) return c.fail("needs a 4-D input and a positive blocksize");
  if (c.node.op_type() == "DepthToSpace") {
    if (x[1] % (b * b) != 0) return c.fail("channels {} not divisible by blocksize^2", x[1]);
    c.set(0, {x[0], x[1] / (b * b), x[2] * b, x[3] * b}, c.elem(0));
  } else {
    if (x[2] % b != 0 || x[3] % b != 0) return c.fail("spatial dims not divisible by blocksize {}", b);
    c.set(0, {x[0], x[1] * b * b, x[2] / b, x[3] / b}, c.elem(0));
  }
  return RuleStatus::ok;
}

/// RNN, GRU, LSTM: Y [seq, dirs, batch, hidden] (layout 0) or [batch, seq, dirs, hidden].
RuleStatus rule_rnn(RuleCtx& c) {
  if (!c.has(0)) return RuleStatus::unknown;
  const Shape& x = c.shape(0);
  if (x.size() != 3) return c.fail("input {} is not 3-D", shape_str(x));
  auto hidden = c.attr_i("hidden_size");
  if (!hidden) {
    if (!c.has(2)) return RuleStatus::unknown;
    hidden = c.shape(2).at(2);
  }
  const std::string dir = c.attr_s("direction").value_or("forward");
  const I64 dirs = dir == "bidirectional" ? 2 : 1;
  const bool batch_first = c.attr_i("layout", 0) == 1;
  const I64 seq = batch_first ? x[1] : x[0], batch = batch_first ? x[0] : x[1];
  if (batch_first) {
    c.set(0, {batch, seq, dirs, *hidden}, c.elem(0));
    c.set(1, {batch, dirs, *hidden}, c.elem(0));
    c.set(2, {batch, dirs, *hidden}, c.elem(0));
  } else {
    c.set(0, {seq, dirs, batch, *hidden}, c.elem(0));
    c.set(1, {dirs, batch, *hidden}, c.elem(0));
    c.set(2, {dirs, batch, *hidden}, c.elem(0));
  }
  return RuleStatus::ok;
}

constexpr ShapeRule kRules[] = {
    {"", "Conv", rule_conv},
    {"", "ConvInteger", rule_conv},
    {"", "QLinearConv", rule_qlinear_conv},
    {"", "ConvTranspose", rule_conv_transpose},
    {"", "MaxPool", rule_pool},
    {"", "AveragePool", rule_pool},
    {"", "LpPool", rule_pool},
    {"", "GlobalAveragePool", rule_global_pool},
    {"", "GlobalMaxPool", rule_global_pool},
    {"", "GlobalLpPool", rule_global_pool},
    {"", "MaxUnpool", rule_max_unpool},
    {"", "RoiAlign", rule_roi},
    {"", "MaxRoiPool", rule_roi},
    {"", "BatchNormalization", rule_batch_norm},
    {"", "InstanceNormalization", rule_same_shape},
    {"", "LRN", rule_same_shape},
    {"", "GroupNormalization", rule_same_shape},
    {"", "LayerNormalization", rule_layer_norm},
    {"", "SimplifiedLayerNormalization", rule_layer_norm},
    {"", "Resize", rule_resize},
    {"", "Upsample", rule_upsample},
    {"", "DepthToSpace", rule_depth_space},
    {"", "SpaceToDepth", rule_depth_space},
    {"", "RNN", rule_rnn},
    {"", "GRU", rule_rnn},
    {"", "LSTM", rule_rnn},
    {"com.microsoft", "FusedConv", rule_conv},
};

}  // namespace

std::span<const ShapeRule> conv_rules() { return kRules; }

}  // namespace planner::onnx::detail
