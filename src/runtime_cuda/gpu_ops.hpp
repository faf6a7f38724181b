#pragma once
// The GPU op layer: one graph op forward or backward on device tensors, the
// counterpart of runtime_cpu's forward_op / backward_op (op_kernels.hpp),
// reading every attribute through the same helpers (runtime_cpu/op_attrs.hpp).
// Float tensors live on the device in fp32 or bf16 storage (DTensor); integer
// tensors (ids, labels, shape tables) stay on the host and are copied to the
// device when a kernel reads them. Ops whose inputs are all integers or
// constants (shape arithmetic, ConstantOfShape, the rope positions' Cast)
// run through runtime_cpu's op layer on the host and upload their result.
// Private to runtime_cuda: includes the CUDA and cuBLAS headers.

#include <memory>
#include <optional>
#include <variant>
#include <vector>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "op_kernels.hpp"
#include "planner/core/result.hpp"
#include "planner/graph/graph.hpp"
#include "planner/runtime_cpu/op_kernels.hpp"
#include "planner/runtime_cuda/views.hpp"

namespace planner::runtime::gpu_ops {

using runtime_cpu::Shape;

Status cuda_status(cudaError_t e, std::string_view what);
Status cublas_status(cublasStatus_t s, std::string_view what);

struct CudaFree {
  void operator()(void* p) const noexcept;
};
using DeviceBuffer = std::unique_ptr<void, CudaFree>;
/// `bytes` of device memory (cudaMalloc); an empty buffer for 0 bytes.
Result<DeviceBuffer> device_alloc(std::size_t bytes);

/// A float tensor on the device, row-major, in `store` storage.
struct DTensor {
  Shape shape;
  Store store = Store::f32;
  DeviceBuffer buf;

  i64 size() const { return runtime_cpu::numel(shape); }
  void* data() const { return buf.get(); }
};
/// A run-time value of the GPU interpreter.
using GValue = std::variant<DTensor, runtime_cpu::IndexTensor>;

const DTensor* as_device(const GValue* v);
const runtime_cpu::IndexTensor* as_host_index(const GValue* v);
const Shape& gvalue_shape(const GValue& v);

Result<DTensor> empty_tensor(Shape shape, Store store);
Result<DTensor> zero_tensor(Shape shape, Store store);
/// fp32 host values to the device (bf16: rounded with kernel_math::bf16_bits).
Result<DTensor> upload(const runtime_cpu::Tensor& t, Store store);
/// Device values to fp32 host values (bf16 widened exactly).
Result<runtime_cpu::Tensor> download(const DTensor& t);
/// A copy with another shape of the same element count.
Result<DTensor> clone(const DTensor& t, Shape shape);
Result<GValue> clone_value(const GValue& v);
/// int64 host values on the device.
Result<DeviceBuffer> upload_indices(const std::vector<std::int64_t>& v);

/// The cuBLAS handle and storage type of one interpreter.
struct Context {
  cublasHandle_t blas = nullptr;
  Store store = Store::f32;
};

/// Row-major C[M,N] = alpha op(A) op(B) + beta C in the context's storage
/// (fp32: CUBLAS_COMPUTE_32F_PEDANTIC, no TF32; bf16: fp32 accumulation).
Status gemm(const Context& c, bool ta, bool tb, i64 M, i64 N, i64 K, float alpha, const void* A, const void* B,
            float beta, void* C);
/// gemm() of one planned call (views.hpp), its offsets applied to A, B, C.
Status gemm(const Context& c, const kernel_math::GemmCall& g, const void* A, const void* B, void* C);

using GInputs = std::vector<const GValue*>;

/// `shape` split at `axis` into outer (product before), n and inner (after).
struct AxisSplit {
  i64 outer = 1, n = 1, inner = 1;
};
inline AxisSplit split_axis(const Shape& shape, std::size_t axis) {
  AxisSplit s;
  for (std::size_t d = 0; d < shape.size(); ++d) (d < axis ? s.outer : d == axis ? s.n : s.inner) *= shape[d];
  return s;
}


/// As runtime_cpu::forward_op, on the device.
Result<std::vector<GValue>> forward_op(const Context& c, const graph::Op& op, const GInputs& in,
                                       const std::vector<runtime_cpu::OutputSpec>& out);
/// As runtime_cpu::backward_op, on the device.
Result<std::vector<std::optional<DTensor>>> backward_op(const Context& c, const graph::Op& op, const GInputs& in,
                                                        const GInputs& outs, const std::vector<const DTensor*>& dout,
                                                        const std::vector<bool>& needs);

/// Input i as a device tensor, or an error naming the op (missing, or an
/// integer tensor where the kernel takes floats).
Result<const DTensor*> dev_in(const graph::Op& op, const GInputs& in, std::size_t i);
/// A kernel launch's status as an error naming the op.
Status launched(const graph::Op& op, cudaError_t e);
/// A view, or an error naming the op when the rank exceeds kMaxRank.
Result<View> view_or_error(const graph::Op& op, std::optional<View> v);

/// The host-side stand-ins of `in` for runtime_cpu's attribute helpers:
/// integer values copied, float values as shape-only tensors (no data).
struct Shadow {
  std::vector<runtime_cpu::Value> values;
  std::vector<const runtime_cpu::Value*> ptrs;
};
Shadow shadow_of(const GInputs& in);

}  // namespace planner::runtime::gpu_ops
