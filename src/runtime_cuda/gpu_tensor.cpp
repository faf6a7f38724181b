// Device tensors of the GPU op layer (gpu_ops.hpp): buffers, copies between
// host and device, and the cuBLAS GEMM in row-major terms.

#include <fmt/format.h>

#include "gpu_ops.hpp"
#include "planner/runtime_cpu/op_attrs.hpp"
#include "planner/runtime_cuda/views.hpp"

namespace planner::runtime::gpu_ops {

Status cuda_status(cudaError_t e, std::string_view what) {
  if (e == cudaSuccess) return Status::success();
  return make_error("{}: CUDA error {} ({})", what, cudaGetErrorName(e), cudaGetErrorString(e));
}

Status cublas_status(cublasStatus_t s, std::string_view what) {
  if (s == CUBLAS_STATUS_SUCCESS) return Status::success();
  return make_error("{}: cuBLAS error {} ({})", what, cublasGetStatusName(s), cublasGetStatusString(s));
}

void CudaFree::operator()(void* p) const noexcept {
  if (p) cudaFree(p);
}

Result<DeviceBuffer> device_alloc(std::size_t bytes) {
  if (bytes == 0) return DeviceBuffer();
  void* p = nullptr;
  PLANNER_TRY_STATUS(cuda_status(cudaMalloc(&p, bytes), fmt::format("cudaMalloc of {} bytes", bytes)));
  return DeviceBuffer(p);
}

const DTensor* as_device(const GValue* v) { return v ? std::get_if<DTensor>(v) : nullptr; }
const runtime_cpu::IndexTensor* as_host_index(const GValue* v) {
  return v ? std::get_if<runtime_cpu::IndexTensor>(v) : nullptr;
}
const Shape& gvalue_shape(const GValue& v) {
  return std::holds_alternative<DTensor>(v) ? std::get<DTensor>(v).shape : std::get<runtime_cpu::IndexTensor>(v).shape;
}

Result<DTensor> empty_tensor(Shape shape, Store store) {
  DTensor t;
  t.shape = std::move(shape);
  t.store = store;
  PLANNER_TRY(t.buf, device_alloc(static_cast<std::size_t>(t.size()) * store_bytes(store)));
  return t;
}

Result<DTensor> zero_tensor(Shape shape, Store store) {
  PLANNER_TRY(DTensor t, empty_tensor(std::move(shape), store));
  PLANNER_TRY_STATUS(cuda_status(cudaMemset(t.data(), 0, static_cast<std::size_t>(t.size()) * store_bytes(store)),
                                 "cudaMemset"));
  return t;
}

Result<DTensor> upload(const runtime_cpu::Tensor& h, Store store) {
  PLANNER_TRY(DTensor t, empty_tensor(h.shape, store));
  const std::size_t n = h.data.size();
  if (store == Store::f32) {
    PLANNER_TRY_STATUS(cuda_status(cudaMemcpy(t.data(), h.data.data(), n * 4, cudaMemcpyHostToDevice), "upload"));
  } else {
    std::vector<std::uint16_t> bits(n);
    for (std::size_t k = 0; k < n; ++k) bits[k] = kernel_math::bf16_bits(h.data[k]);
    PLANNER_TRY_STATUS(cuda_status(cudaMemcpy(t.data(), bits.data(), n * 2, cudaMemcpyHostToDevice), "upload"));
  }
  return t;
}

Result<runtime_cpu::Tensor> download(const DTensor& t) {
  runtime_cpu::Tensor h(t.shape);
  const std::size_t n = h.data.size();
  if (t.store == Store::f32) {
    PLANNER_TRY_STATUS(cuda_status(cudaMemcpy(h.data.data(), t.data(), n * 4, cudaMemcpyDeviceToHost), "download"));
  } else {
    std::vector<std::uint16_t> bits(n);
    PLANNER_TRY_STATUS(cuda_status(cudaMemcpy(bits.data(), t.data(), n * 2, cudaMemcpyDeviceToHost), "download"));
    for (std::size_t k = 0; k < n; ++k) h.data[k] = kernel_math::bf16_float(bits[k]);
  }
  return h;
}

Result<DTensor> clone(const DTensor& t, Shape shape) {
  PLANNER_TRY(DTensor c, empty_tensor(std::move(shape), t.store));
  PLANNER_TRY_STATUS(cuda_status(
      cudaMemcpy(c.data(), t.data(), static_cast<std::size_t>(t.size()) * store_bytes(t.store), cudaMemcpyDeviceToDevice),
      "device copy"));
  return c;
}

Result<GValue> clone_value(const GValue& v) {
  if (const auto* t = std::get_if<DTensor>(&v)) {
    PLANNER_TRY(DTensor c, clone(*t, t->shape));
    return GValue(std::move(c));
  }
  return GValue(std::get<runtime_cpu::IndexTensor>(v));
}

Result<DeviceBuffer> upload_indices(const std::vector<std::int64_t>& v) {
  PLANNER_TRY(DeviceBuffer b, device_alloc(v.size() * sizeof(std::int64_t)));
  if (!v.empty())
    PLANNER_TRY_STATUS(cuda_status(
        cudaMemcpy(b.get(), v.data(), v.size() * sizeof(std::int64_t), cudaMemcpyHostToDevice), "upload indices"));
  return b;
}

Status gemm(const Context& c, bool ta, bool tb, i64 M, i64 N, i64 K, float alpha, const void* A, const void* B,
            float beta, void* C) {
  if (M == 0 || N == 0) return Status::success();
  const auto type = c.store == Store::f32 ? CUDA_R_32F : CUDA_R_16BF;
  const auto compute = c.store == Store::f32 ? CUBLAS_COMPUTE_32F_PEDANTIC : CUBLAS_COMPUTE_32F;
  const kernel_math::ColMajorCall k = kernel_math::col_major_call(ta, tb, M, N, K);
  return cublas_status(cublasGemmEx(c.blas, k.first_t ? CUBLAS_OP_T : CUBLAS_OP_N, k.second_t ? CUBLAS_OP_T : CUBLAS_OP_N,
                                    static_cast<int>(k.m), static_cast<int>(k.n), static_cast<int>(k.k), &alpha, B, type,
                                    static_cast<int>(k.ld_first), A, type, static_cast<int>(k.ld_second), &beta, C, type,
                                    static_cast<int>(k.ldc), compute, CUBLAS_GEMM_DEFAULT),
                       fmt::format("cublasGemmEx {}x{}x{}", M, N, K));
}

Status gemm(const Context& c, const kernel_math::GemmCall& g, const void* A, const void* B, void* C) {
  const std::size_t w = store_bytes(c.store);
  return gemm(c, g.ta, g.tb, g.M, g.N, g.K, g.alpha, static_cast<const char*>(A) + g.a_off * w,
              static_cast<const char*>(B) + g.b_off * w, g.beta, static_cast<char*>(C) + g.c_off * w);
}

Result<const DTensor*> dev_in(const graph::Op& op, const GInputs& in, std::size_t i) {
  if (i >= in.size() || !in[i]) return runtime_cpu::detail::op_error(op, fmt::format("input {} is missing", i));
  if (const DTensor* t = as_device(in[i])) return t;
  return runtime_cpu::detail::op_error(op, fmt::format("input {} is an integer tensor; the kernels take floats here", i));
}

Status launched(const graph::Op& op, cudaError_t e) {
  if (e == cudaSuccess) return Status::success();
  return runtime_cpu::detail::op_error(op, fmt::format("kernel launch: CUDA error {} ({})", cudaGetErrorName(e), cudaGetErrorString(e)));
}

Result<View> view_or_error(const graph::Op& op, std::optional<View> v) {
  if (!v) return runtime_cpu::detail::op_error(op, fmt::format("rank above {} is not supported on the GPU", kernel_math::kMaxRank));
  return *v;
}

Shadow shadow_of(const GInputs& in) {
  Shadow s;
  s.values.reserve(in.size());
  for (const GValue* v : in) {
    if (!v) {
      s.ptrs.push_back(nullptr);
      continue;
    }
    if (const auto* t = as_device(v)) {
      runtime_cpu::Tensor shape_only;
      shape_only.shape = t->shape;
      s.values.emplace_back(std::move(shape_only));
    } else {
      s.values.emplace_back(std::get<runtime_cpu::IndexTensor>(*v));
    }
    s.ptrs.push_back(&s.values.back());
  }
  return s;
}

}  // namespace planner::runtime::gpu_ops
