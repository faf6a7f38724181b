#pragma once
/// The CUDA `runtime::Device` (built only with PLANNER_ENABLE_CUDA=ON;
/// docs/executor.md, docs/calibrate.md): cuBLAS GEMMs
/// (cublasGemmStridedBatchedEx; fp32 with CUBLAS_COMPUTE_32F, tf32 with
/// CUBLAS_COMPUTE_32F_FAST_TF32, bf16 and fp16 data with fp32 compute),
/// the project's read, write and optimizer kernels, all on one non-blocking
/// stream, and cudaEvent timing.
///
/// This header includes no CUDA header.

#include <memory>

#include "planner/runtime/device.hpp"

namespace planner::runtime {

/// The device of this process among the visible ones: its rank on this
/// host (OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID or SLURM_LOCALID; else
/// `fallback_rank`) modulo the visible devices. Errors when none is visible.
Result<int> local_cuda_device(int fallback_rank);

/// Device `device` (cudaSetDevice), its stream and cuBLAS handle. Errors
/// name the CUDA or cuBLAS call that failed (no driver, no such device).
Result<std::unique_ptr<Device>> make_cuda_device(int device);

}  // namespace planner::runtime
