// op_kernels.cu compiled by the host compiler against the stand-in CUDA
// headers of this folder: every kernel a host loop (gpu_emulated_test).
#include "../../../src/runtime_cuda/op_kernels.cu"
