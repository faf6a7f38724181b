#include "planner/runtime_cpu/attention.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "detail.hpp"
#include "planner/runtime_cpu/gemm.hpp"

namespace planner::runtime_cpu {

using detail::uz;

namespace {

struct Dims {
  std::int64_t bh, sq, sk, d, dv;
};

Dims dims_of(const Tensor& q, const Tensor& v) {
  return {q.shape[0] * q.shape[1], q.shape[2], v.shape[2], q.shape[3], v.shape[3]};
}

/// P [Sq,Sk] of one batch-head; `e` is the caller's scratch for one row's exps.
void probabilities(const float* q, const float* k, const Tensor* bias, const AttentionAttrs& at, const Dims& d,
                   std::vector<float>& p, std::vector<double>& e) {
  gemm(false, true, d.sq, d.sk, d.d, at.scale, q, k, 0.0f, p.data());
  for (std::int64_t i = 0; i < d.sq; ++i) {
    float* row = p.data() + i * d.sk;
    const std::int64_t last = at.causal ? std::min(d.sk, i + (d.sk - d.sq) + 1) : d.sk;  // keys [0, last)
    if (bias)
      for (std::int64_t j = 0; j < d.sk; ++j) row[j] += (*bias)[i * d.sk + j];
    float mx = -INFINITY;
    for (std::int64_t j = 0; j < last; ++j) mx = std::max(mx, row[j]);
    double s = 0.0;
    e.resize(static_cast<std::size_t>(last));  // one exp per key, kept for the normalisation
    for (std::int64_t j = 0; j < last; ++j) {
      e[static_cast<std::size_t>(j)] = detail::exp_or_zero(static_cast<double>(row[j]) - mx);
      s += e[static_cast<std::size_t>(j)];
    }
    for (std::int64_t j = 0; j < d.sk; ++j) row[j] = j < last ? static_cast<float>(e[static_cast<std::size_t>(j)] / s) : 0.0f;
  }
}

}  // namespace

Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor* bias, const AttentionAttrs& at) {
  const Dims d = dims_of(q, v);
  Tensor y(Shape{q.shape[0], q.shape[1], d.sq, d.dv});
  std::vector<float> p(uz(d.sq * d.sk));
  std::vector<double> e;
  for (std::int64_t b = 0; b < d.bh; ++b) {
    probabilities(q.data.data() + b * d.sq * d.d, k.data.data() + b * d.sk * d.d, bias, at, d, p, e);
    gemm(false, false, d.sq, d.dv, d.sk, 1.0f, p.data(), v.data.data() + b * d.sk * d.dv, 0.0f,
         y.data.data() + b * d.sq * d.dv);
  }
  return y;
}

AttentionGrads attention_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor* bias,
                                  const AttentionAttrs& at, const Tensor& dy) {
  const Dims d = dims_of(q, v);
  AttentionGrads g{Tensor(q.shape), Tensor(k.shape), Tensor(v.shape)};
  std::vector<float> p(uz(d.sq * d.sk)), dp(uz(d.sq * d.sk));
  std::vector<double> e;
  for (std::int64_t b = 0; b < d.bh; ++b) {
    const float* qb = q.data.data() + b * d.sq * d.d;
    const float* kb = k.data.data() + b * d.sk * d.d;
    const float* vb = v.data.data() + b * d.sk * d.dv;
    const float* dyb = dy.data.data() + b * d.sq * d.dv;
    probabilities(qb, kb, bias, at, d, p, e);
    gemm(true, false, d.sk, d.dv, d.sq, 1.0f, p.data(), dyb, 0.0f, g.dv.data.data() + b * d.sk * d.dv);
    gemm(false, true, d.sq, d.sk, d.dv, 1.0f, dyb, vb, 0.0f, dp.data());
    for (std::int64_t i = 0; i < d.sq; ++i) {  // dS = P (dP - rowsum(dP P)), in place in dp
      double dot = 0.0;
      for (std::int64_t j = 0; j < d.sk; ++j) dot += static_cast<double>(dp[uz(i * d.sk + j)]) * p[uz(i * d.sk + j)];
      for (std::int64_t j = 0; j < d.sk; ++j) {
        const std::size_t x = uz(i * d.sk + j);
        dp[x] = static_cast<float>(p[x] * (dp[x] - dot));
      }
    }
    gemm(false, false, d.sq, d.d, d.sk, at.scale, dp.data(), kb, 0.0f, g.dq.data.data() + b * d.sq * d.d);
    gemm(true, false, d.sk, d.d, d.sq, at.scale, dp.data(), qb, 0.0f, g.dk.data.data() + b * d.sk * d.d);
  }
  return g;
}

}  // namespace planner::runtime_cpu
