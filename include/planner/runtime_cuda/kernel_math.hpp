#pragma once
/// The per-element and per-row math of the GPU op kernels, header-only, in
/// one place that both g++ (the CPU tests, tests/runtime_cuda/
/// kernel_math_test.cpp) and nvcc (src/runtime_cuda/op_kernels.cu) compile.
///
/// Design note. A CUDA kernel of runtime_cuda is index arithmetic around one
/// call into this header: one thread per element (elementwise ops, index
/// maps), per row (norms, softmax, cross-entropy rows, attention query rows)
/// or per column (norm weight gradients, attention key rows). Each function
/// repeats the arithmetic of the matching runtime_cpu kernel operation for
/// operation (the same double statistics, the same summation order where a
/// sum runs over one row or one column), so the CPU tests can compare a plain
/// CPU loop over these functions with runtime_cpu, and the GPU then runs the
/// very same code. Storage is fp32 or bf16 (Bf16 below); every load widens to
/// fp32 and every sum accumulates in fp32 or double, as on the CPU.
///
/// This header includes no CUDA header and nothing newer than C++17 (nvcc
/// compiles the kernels as CUDA 17). PLANNER_HD marks a function callable
/// from host and device.

#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define PLANNER_HD __host__ __device__
#else
#define PLANNER_HD
#endif

namespace planner::kernel_math {

using i64 = std::int64_t;

// ---------------------------------------------------------------- bf16 ----

/// bfloat16 storage: the high 16 bits of an IEEE fp32 (1 sign, 8 exponent,
/// 7 mantissa bits). Layout-compatible with CUDA's __nv_bfloat16, so cuBLAS
/// reads these buffers as CUDA_R_16BF.
struct Bf16 {
  std::uint16_t bits;
};

PLANNER_HD inline std::uint32_t float_bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
PLANNER_HD inline float bits_float(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

/// fp32 -> bf16, round to nearest, ties to even; NaN stays a (quiet) NaN,
/// overflow rounds to infinity as IEEE rounding does.
///   u + 0x7fff + lsb: adds just under half an ulp of the result (0x8000),
///   plus one when the kept lsb is odd, so an exact tie carries only into an
///   odd result (making it even) and anything above a tie always carries.
PLANNER_HD inline std::uint16_t bf16_bits(float f) {
  const std::uint32_t u = float_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((u >> 16) | 0x0040u);
  const std::uint32_t lsb = (u >> 16) & 1u;
  return static_cast<std::uint16_t>((u + 0x7fffu + lsb) >> 16);
}
/// bf16 -> fp32: exact.
PLANNER_HD inline float bf16_float(std::uint16_t b) { return bits_float(static_cast<std::uint32_t>(b) << 16); }

/// Widen a stored element to fp32; narrow an fp32 result into storage.
PLANNER_HD inline float ld(float v) { return v; }
PLANNER_HD inline float ld(Bf16 v) { return bf16_float(v.bits); }
PLANNER_HD inline void st(float& d, float v) { d = v; }
PLANNER_HD inline void st(Bf16& d, float v) { d.bits = bf16_bits(v); }

// --------------------------------------------------------- elementwise ----

/// The same order as runtime_cpu::BinaryOp and runtime_cpu::UnaryOp.
enum class Binary { add, sub, mul, div };
enum class Unary { relu, gelu, erf, sigmoid, silu, tanh, sqrt, exp, log, neg, cos, sin };

inline constexpr double kInvSqrt2 = 0.70710678118654752440;
inline constexpr double kInvSqrt2Pi = 0.39894228040143267794;
inline constexpr double kPi = 3.14159265358979323846;

PLANNER_HD inline float binary_value(Binary op, float a, float b) {
  switch (op) {
    case Binary::add: return a + b;
    case Binary::sub: return a - b;
    case Binary::mul: return a * b;
    case Binary::div: return a / b;
  }
  return 0.0f;
}

/// Local gradients at one output element (g = dy there); the caller sums
/// them over the axes an operand was broadcast along.
PLANNER_HD inline void binary_grads(Binary op, float a, float b, float g, float& ga, float& gb) {
  switch (op) {
    case Binary::add: ga = g; gb = g; return;
    case Binary::sub: ga = g; gb = -g; return;
    case Binary::mul: ga = g * b; gb = g * a; return;
    case Binary::div: ga = g / b; gb = -g * a / (b * b); return;
  }
}

/// In double, rounded once to fp32 (as runtime_cpu's unary kernels).
PLANNER_HD inline float unary_value(Unary op, float xf) {
  const double x = xf;
  switch (op) {
    case Unary::relu: return xf > 0.0f ? xf : 0.0f;
    case Unary::gelu: return static_cast<float>(0.5 * x * (1.0 + ::erf(x * kInvSqrt2)));
    case Unary::erf: return static_cast<float>(::erf(x));
    case Unary::sigmoid: return static_cast<float>(1.0 / (1.0 + ::exp(-x)));
    case Unary::silu: return static_cast<float>(x / (1.0 + ::exp(-x)));
    case Unary::tanh: return static_cast<float>(::tanh(x));
    case Unary::sqrt: return static_cast<float>(::sqrt(x));
    case Unary::exp: return static_cast<float>(::exp(x));
    case Unary::log: return static_cast<float>(::log(x));
    case Unary::neg: return -xf;
    case Unary::cos: return static_cast<float>(::cos(x));
    case Unary::sin: return static_cast<float>(::sin(x));
  }
  return 0.0f;
}

/// d unary / dx at x, y = unary(x).
PLANNER_HD inline double unary_derivative(Unary op, double x, double y) {
  switch (op) {
    case Unary::relu: return x > 0.0 ? 1.0 : 0.0;
    case Unary::gelu: return 0.5 * (1.0 + ::erf(x * kInvSqrt2)) + x * kInvSqrt2Pi * ::exp(-0.5 * x * x);
    case Unary::erf: return 2.0 / ::sqrt(kPi) * ::exp(-x * x);
    case Unary::sigmoid: return y * (1.0 - y);
    case Unary::silu: {
      const double s = 1.0 / (1.0 + ::exp(-x));
      return s + x * s * (1.0 - s);
    }
    case Unary::tanh: return 1.0 - y * y;
    case Unary::sqrt: return 0.5 / y;
    case Unary::exp: return y;
    case Unary::log: return 1.0 / x;
    case Unary::neg: return -1.0;
    case Unary::cos: return -::sin(x);
    case Unary::sin: return ::cos(x);
  }
  return 0.0;
}

PLANNER_HD inline float unary_grad(Unary op, float x, float y, float dy) {
  return static_cast<float>(dy * unary_derivative(op, x, y));
}

// ----------------------------------------------------------- index maps ----

/// A strided view: element k (row-major over `shape`) of the view reads
/// flat index offset + sum_d idx_d(k) stride[d] of its base. Broadcast
/// (stride 0 along a broadcast axis), transpose (permuted strides), slice
/// (offset = start, stride = base stride x step), split and concat parts
/// (an offset along the axis) are all such views. Rank <= kMaxRank.
inline constexpr int kMaxRank = 8;
struct View {
  int rank = 0;
  i64 offset = 0;
  i64 shape[kMaxRank] = {};
  i64 stride[kMaxRank] = {};
};

PLANNER_HD inline i64 view_index(const View& v, i64 k) {
  i64 at = v.offset;
  for (int d = v.rank - 1; d >= 0; --d) {
    const i64 n = v.shape[d];
    at += (k % n) * v.stride[d];
    k /= n;
  }
  return at;
}

/// A sum over a box: output element k of `out` (row-major over out.shape)
/// adds base[view_index(out, k) + view_index(in, r)] for r over the box
/// `in` (its offset 0), in row-major order of r, i.e. in ascending flat
/// order of the base (the order of runtime_cpu::sum_to_shape), in double.
template <class T>
PLANNER_HD inline double box_sum(const T* base, const View& out, const View& in, i64 k) {
  i64 n = 1;
  for (int d = 0; d < in.rank; ++d) n *= in.shape[d];
  const i64 at = view_index(out, k);
  double acc = 0.0;
  for (i64 r = 0; r < n; ++r) acc += ld(base[at + view_index(in, r)]);
  return acc;
}

// --------------------------------------------------------------- norms ----

struct RowStats {
  double mu = 0.0, r = 0.0;
};

/// LayerNorm statistics of one row of n: mean, 1 / sqrt(var + eps).
template <class T>
PLANNER_HD inline RowStats layer_stats(const T* x, i64 n, float eps) {
  double s = 0.0;
  for (i64 j = 0; j < n; ++j) s += ld(x[j]);
  const double mu = s / static_cast<double>(n);
  double v = 0.0;
  for (i64 j = 0; j < n; ++j) v += (ld(x[j]) - mu) * (ld(x[j]) - mu);
  return {mu, 1.0 / ::sqrt(v / static_cast<double>(n) + eps)};
}

/// y = (x - mu) r w + b over one row; b may be null.
template <class T, class W>
PLANNER_HD inline void layer_norm_row(const T* x, const W* w, const W* b, T* y, i64 n, float eps) {
  const RowStats s = layer_stats(x, n, eps);
  for (i64 j = 0; j < n; ++j)
    st(y[j], static_cast<float>((ld(x[j]) - s.mu) * s.r * ld(w[j]) + (b ? ld(b[j]) : 0.0f)));
}

/// dx of one row: g = dy w, dx = r (g - mean(g) - xh mean(g xh)).
template <class T, class W>
PLANNER_HD inline void layer_norm_dx_row(const T* x, const W* w, const T* dy, T* dx, i64 n, float eps) {
  const RowStats s = layer_stats(x, n, eps);
  double mg = 0.0, mgx = 0.0;
  for (i64 j = 0; j < n; ++j) {
    const double xh = (ld(x[j]) - s.mu) * s.r, gw = static_cast<double>(ld(dy[j])) * ld(w[j]);
    mg += gw;
    mgx += gw * xh;
  }
  mg /= static_cast<double>(n);
  mgx /= static_cast<double>(n);
  for (i64 j = 0; j < n; ++j) {
    const double xh = (ld(x[j]) - s.mu) * s.r, gw = static_cast<double>(ld(dy[j])) * ld(w[j]);
    st(dx[j], static_cast<float>(s.r * (gw - mg - xh * mgx)));
  }
}

/// Column j of dw = sum_rows dy xh and db = sum_rows dy (rows in order),
/// from the rows' statistics.
template <class T>
PLANNER_HD inline void layer_norm_dw_col(const T* x, const T* dy, const RowStats* stats, i64 rows, i64 n, i64 j,
                                         double& dw, double& db) {
  dw = 0.0, db = 0.0;
  for (i64 i = 0; i < rows; ++i) {
    const float dyv = ld(dy[i * n + j]);
    dw += dyv * ((ld(x[i * n + j]) - stats[i].mu) * stats[i].r);
    db += dyv;
  }
}

/// RMSNorm: r = 1 / sqrt(mean(x^2) + eps) of one row.
template <class T>
PLANNER_HD inline double rms_r(const T* x, i64 n, float eps) {
  double ss = 0.0;
  for (i64 j = 0; j < n; ++j) ss += static_cast<double>(ld(x[j])) * ld(x[j]);
  return 1.0 / ::sqrt(ss / static_cast<double>(n) + eps);
}

template <class T, class W>
PLANNER_HD inline void rms_norm_row(const T* x, const W* w, T* y, i64 n, float eps) {
  const double r = rms_r(x, n, eps);
  for (i64 j = 0; j < n; ++j) st(y[j], static_cast<float>(ld(x[j]) * r * ld(w[j])));
}

/// dx = r (dy w - x r^2 mean(dy w x)) of one row.
template <class T, class W>
PLANNER_HD inline void rms_norm_dx_row(const T* x, const W* w, const T* dy, T* dx, i64 n, float eps) {
  double ss = 0.0, mgx = 0.0;
  for (i64 j = 0; j < n; ++j) {
    ss += static_cast<double>(ld(x[j])) * ld(x[j]);
    mgx += static_cast<double>(ld(dy[j])) * ld(w[j]) * ld(x[j]);
  }
  const double r = 1.0 / ::sqrt(ss / static_cast<double>(n) + eps);
  mgx /= static_cast<double>(n);
  for (i64 j = 0; j < n; ++j)
    st(dx[j], static_cast<float>(r * (static_cast<double>(ld(dy[j])) * ld(w[j]) - ld(x[j]) * r * r * mgx)));
}

/// Column j of dw = sum_rows dy x r, r per row (rms_r).
template <class T>
PLANNER_HD inline double rms_norm_dw_col(const T* x, const T* dy, const double* r, i64 rows, i64 n, i64 j) {
  double dw = 0.0;
  for (i64 i = 0; i < rows; ++i) dw += static_cast<double>(ld(dy[i * n + j])) * ld(x[i * n + j]) * r[i];
  return dw;
}

// ------------------------------------------------------------- softmax ----

/// Softmax of one row of n elements `stride` apart: exp(x - max) / sum.
template <class T>
PLANNER_HD inline void softmax_row(const T* x, T* y, i64 n, i64 stride) {
  float mx = -INFINITY;
  for (i64 j = 0; j < n; ++j) mx = ld(x[j * stride]) > mx ? ld(x[j * stride]) : mx;
  double s = 0.0;
  for (i64 j = 0; j < n; ++j) s += ::exp(static_cast<double>(ld(x[j * stride])) - mx);
  for (i64 j = 0; j < n; ++j) st(y[j * stride], static_cast<float>(::exp(static_cast<double>(ld(x[j * stride])) - mx) / s));
}

/// dx = y (dy - sum(dy y)) of one row.
template <class T>
PLANNER_HD inline void softmax_backward_row(const T* y, const T* dy, T* dx, i64 n, i64 stride) {
  double dot = 0.0;
  for (i64 j = 0; j < n; ++j) dot += static_cast<double>(ld(dy[j * stride])) * ld(y[j * stride]);
  for (i64 j = 0; j < n; ++j) st(dx[j * stride], static_cast<float>(ld(y[j * stride]) * (ld(dy[j * stride]) - dot)));
}

// ---------------------------------------------------- embedding and loss ----

/// Gather along an axis split as [outer, n, inner] of the data and m
/// indices: output element k reads this flat index of the data.
PLANNER_HD inline i64 gather_source(i64 k, const i64* idx, i64 m, i64 n, i64 inner) {
  const i64 j = k % inner, t = (k / inner) % m, o = k / (inner * m);
  i64 r = idx[t];
  if (r < 0) r += n;
  return (o * n + r) * inner + j;
}

/// Gradient of data element (o, r, j): the sum of dy over the indices t that
/// name row r, in ascending t (fp32, the CPU's order). rows_of lists those t
/// row by row: rows_of[offsets[r] .. offsets[r+1]).
template <class T>
PLANNER_HD inline float gather_grad(const T* dy, const i64* offsets, const i64* rows_of, i64 o, i64 r, i64 j, i64 m,
                                    i64 inner) {
  float acc = 0.0f;
  for (i64 p = offsets[r]; p < offsets[r + 1]; ++p) acc += ld(dy[(o * m + rows_of[p]) * inner + j]);
  return acc;
}

/// log sum_j exp(x_j) of one row of c, stable.
template <class T>
PLANNER_HD inline double log_sum_exp(const T* x, i64 c) {
  float mx = ld(x[0]);
  for (i64 j = 1; j < c; ++j) mx = ld(x[j]) > mx ? ld(x[j]) : mx;
  double s = 0.0;
  for (i64 j = 0; j < c; ++j) s += ::exp(static_cast<double>(ld(x[j])) - mx);
  return mx + ::log(s);
}

/// -log softmax(x)[label] of one row (the caller skips ignored rows).
template <class T>
PLANNER_HD inline double cross_entropy_row(const T* x, i64 c, i64 label) {
  return log_sum_exp(x, c) - ld(x[label]);
}

/// dx = k (softmax(x) - onehot(label)) of one row, k = dloss / kept rows.
template <class T>
PLANNER_HD inline void cross_entropy_grad_row(const T* x, i64 c, i64 label, double k, T* dx) {
  const double lse = log_sum_exp(x, c);
  for (i64 j = 0; j < c; ++j)
    st(dx[j], static_cast<float>(k * (::exp(static_cast<double>(ld(x[j])) - lse) - (j == label ? 1.0 : 0.0))));
}

// ----------------------------------------------------------- attention ----

/// Scaled dot-product attention of one batch-head, q [Sq,D], k [Sk,D],
/// v [Sk,Dv], bias [Sq,Sk] or null, as runtime_cpu/attention.hpp: query
/// row i sees keys [0, attn_last(i)) (all when not causal).
struct AttnDims {
  i64 sq = 0, sk = 0, d = 0, dv = 0;
  float scale = 1.0f;
  bool causal = false;
};

PLANNER_HD inline i64 attn_last(const AttnDims& a, i64 i) {
  if (!a.causal) return a.sk;
  const i64 l = i + (a.sk - a.sq) + 1;
  return l < a.sk ? (l > 0 ? l : 0) : a.sk;
}

/// S_ij = scale q_i . k_j (+ bias_ij), the dot product in fp32.
template <class T>
PLANNER_HD inline float attn_score(const T* q, const T* k, const float* bias, const AttnDims& a, i64 i, i64 j) {
  float dot = 0.0f;
  for (i64 c = 0; c < a.d; ++c) dot += ld(q[i * a.d + c]) * ld(k[j * a.d + c]);
  float s = a.scale * dot;
  if (bias) s += bias[i * a.sk + j];
  return s;
}

/// Max and sum of exp(S_ij - max) over the keys row i sees.
struct AttnRow {
  float mx = -INFINITY;
  double sum = 0.0;
};
template <class T>
PLANNER_HD inline AttnRow attn_row(const T* q, const T* k, const float* bias, const AttnDims& a, i64 i) {
  AttnRow r;
  const i64 last = attn_last(a, i);
  for (i64 j = 0; j < last; ++j) {
    const float s = attn_score(q, k, bias, a, i, j);
    r.mx = s > r.mx ? s : r.mx;
  }
  for (i64 j = 0; j < last; ++j) r.sum += ::exp(static_cast<double>(attn_score(q, k, bias, a, i, j)) - r.mx);
  return r;
}

/// P_ij from the row's statistics (0 for a masked key).
template <class T>
PLANNER_HD inline float attn_prob(const T* q, const T* k, const float* bias, const AttnDims& a, const AttnRow& r, i64 i,
                                  i64 j) {
  if (j >= attn_last(a, i)) return 0.0f;
  return static_cast<float>(::exp(static_cast<double>(attn_score(q, k, bias, a, i, j)) - r.mx) / r.sum);
}

/// Output row i: O_i = sum_j P_ij v_j, accumulated in fp32 in `acc` (Dv).
template <class T>
PLANNER_HD inline void attn_out_row(const T* q, const T* k, const T* v, const float* bias, const AttnDims& a, i64 i,
                                    float* acc, T* o) {
  const AttnRow r = attn_row(q, k, bias, a, i);
  for (i64 c = 0; c < a.dv; ++c) acc[c] = 0.0f;
  const i64 last = attn_last(a, i);
  for (i64 j = 0; j < last; ++j) {
    const float p = attn_prob(q, k, bias, a, r, i, j);
    for (i64 c = 0; c < a.dv; ++c) acc[c] += p * ld(v[j * a.dv + c]);
  }
  for (i64 c = 0; c < a.dv; ++c) st(o[i * a.dv + c], acc[c]);
}

/// dP_ij = dO_i . v_j (fp32).
template <class T>
PLANNER_HD inline float attn_dp(const T* dy, const T* v, const AttnDims& a, i64 i, i64 j) {
  float s = 0.0f;
  for (i64 c = 0; c < a.dv; ++c) s += ld(dy[i * a.dv + c]) * ld(v[j * a.dv + c]);
  return s;
}

/// D_i = sum_j dP_ij P_ij of row i, in double.
template <class T>
PLANNER_HD inline double attn_delta(const T* q, const T* k, const T* v, const float* bias, const T* dy,
                                    const AttnDims& a, const AttnRow& r, i64 i) {
  double dot = 0.0;
  for (i64 j = 0; j < attn_last(a, i); ++j)
    dot += static_cast<double>(attn_dp(dy, v, a, i, j)) * attn_prob(q, k, bias, a, r, i, j);
  return dot;
}

/// dS_ij = P_ij (dP_ij - D_i).
template <class T>
PLANNER_HD inline float attn_ds(const T* q, const T* k, const T* v, const float* bias, const T* dy, const AttnDims& a,
                                const AttnRow& r, double delta, i64 i, i64 j) {
  const float p = attn_prob(q, k, bias, a, r, i, j);
  return static_cast<float>(p * (attn_dp(dy, v, a, i, j) - delta));
}

/// dq_i = scale sum_j dS_ij k_j into `acc` (D) and dq row i.
template <class T>
PLANNER_HD inline void attn_dq_row(const T* q, const T* k, const T* v, const float* bias, const T* dy,
                                   const AttnDims& a, const AttnRow& r, double delta, i64 i, float* acc, T* dq) {
  for (i64 c = 0; c < a.d; ++c) acc[c] = 0.0f;
  for (i64 j = 0; j < attn_last(a, i); ++j) {
    const float ds = attn_ds(q, k, v, bias, dy, a, r, delta, i, j);
    for (i64 c = 0; c < a.d; ++c) acc[c] += ds * ld(k[j * a.d + c]);
  }
  for (i64 c = 0; c < a.d; ++c) st(dq[i * a.d + c], a.scale * acc[c]);
}

/// Key row j: dv_j = sum_i P_ij dO_i and dk_j = scale sum_i dS_ij q_i, from
/// every query row's statistics and delta; acc holds Dv + D floats.
template <class T>
PLANNER_HD inline void attn_dkv_row(const T* q, const T* k, const T* v, const float* bias, const T* dy,
                                    const AttnDims& a, const AttnRow* rows, const double* delta, i64 j, float* acc,
                                    T* dk, T* dv) {
  float* av = acc;
  float* ak = acc + a.dv;
  for (i64 c = 0; c < a.dv; ++c) av[c] = 0.0f;
  for (i64 c = 0; c < a.d; ++c) ak[c] = 0.0f;
  for (i64 i = 0; i < a.sq; ++i) {
    if (j >= attn_last(a, i)) continue;
    const float p = attn_prob(q, k, bias, a, rows[i], i, j);
    const float ds = attn_ds(q, k, v, bias, dy, a, rows[i], delta[i], i, j);
    for (i64 c = 0; c < a.dv; ++c) av[c] += p * ld(dy[i * a.dv + c]);
    for (i64 c = 0; c < a.d; ++c) ak[c] += ds * ld(q[i * a.d + c]);
  }
  for (i64 c = 0; c < a.dv; ++c) st(dv[j * a.dv + c], av[c]);
  for (i64 c = 0; c < a.d; ++c) st(dk[j * a.d + c], a.scale * ak[c]);
}

// ----------------------------------------------------------- optimizers ----

/// One element of runtime_cpu::sgd_step: momentum buffer m (unused when
/// momentum is 0), `first` at the tensor's first step.
PLANNER_HD inline void sgd_element(float& w, float g, float& m, bool first, float lr, float momentum, float wd) {
  float d = g + wd * w;
  if (momentum != 0.0f) {
    m = first ? d : momentum * m + d;
    d = m;
  }
  w -= lr * d;
}

/// One element of runtime_cpu::adamw_step; bc1 = 1 - b1^t, bc2 = 1 - b2^t.
PLANNER_HD inline void adamw_element(float& w, float g, float& m, float& v, float lr, float b1, float b2, float eps,
                                     float wd, double bc1, double bc2) {
  m = b1 * m + (1.0f - b1) * g;
  v = b2 * v + (1.0f - b2) * g * g;
  const double mh = m / bc1, vh = v / bc2;
  w = static_cast<float>(w - lr * (mh / (::sqrt(vh) + eps) + wd * w));
}

}  // namespace planner::kernel_math
