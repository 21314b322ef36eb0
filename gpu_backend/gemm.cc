#include "gpu_backend/gemm.h"

namespace kv::gpu {

Gemm::~Gemm() {
  if (handle_) cublasDestroy(handle_);
  if (workspace_) cudaFree(workspace_);
}

Status Gemm::init(cudaStream_t stream, std::size_t workspace_bytes) {
  cublasStatus_t st = cublasCreate(&handle_);
  if (st != CUBLAS_STATUS_SUCCESS) {
    handle_ = nullptr;
    return Status::error("cublasCreate failed: " + cublas_error_string(st));
  }
  if (cudaError_t e = cudaMalloc(&workspace_, workspace_bytes); e != cudaSuccess) {
    workspace_ = nullptr;
    return Status::error("cudaMalloc of the " + std::to_string(workspace_bytes) +
                         "-byte cuBLAS workspace failed: " + cudaGetErrorString(e));
  }
  if ((st = cublasSetStream(handle_, stream)) != CUBLAS_STATUS_SUCCESS ||
      (st = cublasSetWorkspace(handle_, workspace_, workspace_bytes)) != CUBLAS_STATUS_SUCCESS ||
      (st = cublasSetMathMode(handle_, CUBLAS_DEFAULT_MATH)) != CUBLAS_STATUS_SUCCESS) {
    return Status::error("configuring cuBLAS failed: " + cublas_error_string(st));
  }
  return Status();
}

cublasStatus_t Gemm::linear(gpuref::DType dtype, const void* x, std::int64_t rows, int in_dim,
                            const void* w, int out_dim, void* y, bool accumulate) {
  if (rows == 0) return CUBLAS_STATUS_SUCCESS;
  if (!handle_ || rows < 0 || rows > INT32_MAX) return CUBLAS_STATUS_INVALID_VALUE;
  const cudaDataType_t in_type = dtype == gpuref::DType::kFp16 ? CUDA_R_16F : CUDA_R_16BF;
  const cudaDataType_t out_type = accumulate ? CUDA_R_32F : in_type;
  const float alpha = 1.0f;
  const float beta = accumulate ? 1.0f : 0.0f;
  // Column-major view: y^T[N, M] = W[N, K] (stored as K x N, transposed) * x^T[K, M].
  return cublasGemmEx(handle_, CUBLAS_OP_T, CUBLAS_OP_N, out_dim, static_cast<int>(rows), in_dim, &alpha, w,
                      in_type, in_dim, x, in_type, in_dim, &beta, y, out_type, out_dim,
                      CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
}

std::string cublas_error_string(cublasStatus_t status) {
  const char* name = cublasGetStatusName(status);
  const char* text = cublasGetStatusString(status);
  return std::string(name ? name : "?") + " (" + (text ? text : "") + ")";
}

}  // namespace kv::gpu
