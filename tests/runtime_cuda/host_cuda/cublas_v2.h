#pragma once
// Test-only stand-in for cuBLAS (gpu_emulated_test): cublasGemmEx as a
// column-major GEMM on the host, fp32 or bf16 data, accumulated in double.
#include "cuda_runtime.h"

struct cublasContext;
using cublasHandle_t = cublasContext*;
enum cublasStatus_t { CUBLAS_STATUS_SUCCESS = 0, CUBLAS_STATUS_INVALID_VALUE = 7 };
enum cublasOperation_t { CUBLAS_OP_N, CUBLAS_OP_T };
enum cudaDataType_t { CUDA_R_32F, CUDA_R_16BF };
enum cublasComputeType_t { CUBLAS_COMPUTE_32F, CUBLAS_COMPUTE_32F_PEDANTIC };
enum cublasGemmAlgo_t { CUBLAS_GEMM_DEFAULT };
enum cublasMath_t { CUBLAS_DEFAULT_MATH, CUBLAS_PEDANTIC_MATH };

cublasStatus_t cublasCreate(cublasHandle_t* h);
cublasStatus_t cublasDestroy(cublasHandle_t h);
cublasStatus_t cublasSetMathMode(cublasHandle_t h, cublasMath_t mode);
cublasStatus_t cublasGemmEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                            const void* alpha, const void* A, cudaDataType_t at, int lda, const void* B,
                            cudaDataType_t bt, int ldb, const void* beta, void* C, cudaDataType_t ct, int ldc,
                            cublasComputeType_t compute, cublasGemmAlgo_t algo);
const char* cublasGetStatusName(cublasStatus_t s);
const char* cublasGetStatusString(cublasStatus_t s);
