// Gemm: the dense projections through cuBLAS (bf16/fp16 inputs, fp32 accumulation), row-major
// as the rest of the backend: y[M, N] = x[M, K] W[N, K]^T. With accumulate, y is the fp32
// residual stream and gets y += x W^T (beta = 1) in the same call. One cuBLAS handle bound to
// one stream, with its own workspace so that calls can be captured into CUDA graphs.
// Invariant: cuBLAS is loaded (dlopen) by the first init() or cublas_load_error(), never at
// process start. Internal to gpu_backend/.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "gpu_backend/reference/numerics.h"
#include "model/util/status.h"

namespace kv::gpu {

class Gemm {
 public:
  Gemm() = default;
  ~Gemm();
  Gemm(const Gemm&) = delete;
  Gemm& operator=(const Gemm&) = delete;

  Status init(cudaStream_t stream, std::size_t workspace_bytes);

  // dtype: the element type of x and w (kBf16 or kFp16); y has that type too unless
  // accumulate, where y is fp32. Returns CUBLAS_STATUS_SUCCESS or the cuBLAS error.
  cublasStatus_t linear(gpuref::DType dtype, const void* x, std::int64_t rows, int in_dim, const void* w, int out_dim,
                        void* y, bool accumulate);

 private:
  cublasHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;
};

std::string cublas_error_string(cublasStatus_t status);

// Loads cuBLAS on first use (it is never linked: see gemm.cc); "" once every entry point the
// backend calls is resolved, else why not. Needs no GPU.
std::string cublas_load_error();

}  // namespace kv::gpu
