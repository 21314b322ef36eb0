#include "gpu_backend/gemm.h"

#include <dlfcn.h>

namespace kv::gpu {

namespace {

#define KV_CUBLAS_NAME(fn) KV_CUBLAS_STR(fn)  // expands cublas_v2.h's renames (cublasCreate_v2)
#define KV_CUBLAS_STR(fn) #fn

// The cuBLAS entry points the backend calls, resolved from libcublas.so.MAJOR when the first
// Gemm is initialised. Linking cuBLAS instead would cost every kvsim process, --device sim and
// --help included, about 215 MiB of resident memory for the library's relocations.
struct CublasApi {
  decltype(&cublasCreate) create = nullptr;
  decltype(&cublasDestroy) destroy = nullptr;
  decltype(&cublasSetStream) set_stream = nullptr;
  decltype(&cublasSetWorkspace) set_workspace = nullptr;
  decltype(&cublasSetMathMode) set_math_mode = nullptr;
  // The C entry point: the header adds a C++ overload with a cudaDataType compute type.
  cublasStatus_t (*gemm_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*,
                            const void*, cudaDataType, int, const void*, cudaDataType, int, const void*, void*,
                            cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t) = nullptr;
  decltype(&cublasGetStatusName) status_name = nullptr;
  decltype(&cublasGetStatusString) status_string = nullptr;
  std::string error;  // empty when every entry point was found
};

template <typename Fn>
void resolve(void* lib, const char* name, Fn* out, std::string& error) {
  *out = reinterpret_cast<Fn>(dlsym(lib, name));
  if (*out == nullptr && error.empty()) error = std::string("no symbol ") + name + " in cuBLAS";
}

// The soname first (the loader's search path, LD_LIBRARY_PATH, the binary's RUNPATH), then the
// toolkit this was built against.
void* open_cublas(std::string& error) {
  const std::string soname = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);
  if (void* lib = dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL)) return lib;
  const std::string first = dlerror();
  const std::string built = std::string(KVSIM_CUDA_LIBRARY_DIR) + "/" + soname;
  if (void* lib = dlopen(built.c_str(), RTLD_NOW | RTLD_LOCAL)) return lib;
  error = "cannot load cuBLAS: " + first + "; " + dlerror() + " (install the CUDA " + std::to_string(CUBLAS_VER_MAJOR) +
          " toolkit libraries or set LD_LIBRARY_PATH)";
  return nullptr;
}

const CublasApi& cublas() {
  static const CublasApi api = [] {
    CublasApi a;
    void* lib = open_cublas(a.error);
    if (lib == nullptr) return a;  // kept loaded for the life of the process when found
    resolve(lib, KV_CUBLAS_NAME(cublasCreate), &a.create, a.error);
    resolve(lib, KV_CUBLAS_NAME(cublasDestroy), &a.destroy, a.error);
    resolve(lib, KV_CUBLAS_NAME(cublasSetStream), &a.set_stream, a.error);
    resolve(lib, KV_CUBLAS_NAME(cublasSetWorkspace), &a.set_workspace, a.error);
    resolve(lib, KV_CUBLAS_NAME(cublasSetMathMode), &a.set_math_mode, a.error);
    resolve(lib, KV_CUBLAS_NAME(cublasGemmEx), &a.gemm_ex, a.error);
    resolve(lib, KV_CUBLAS_NAME(cublasGetStatusName), &a.status_name, a.error);
    resolve(lib, KV_CUBLAS_NAME(cublasGetStatusString), &a.status_string, a.error);
    return a;
  }();
  return api;
}

}  // namespace

Gemm::~Gemm() {
  if (handle_) cublas().destroy(handle_);
  if (workspace_) cudaFree(workspace_);
}

Status Gemm::init(cudaStream_t stream, std::size_t workspace_bytes) {
  const CublasApi& api = cublas();
  if (!api.error.empty()) return Status::error(api.error);
  cublasStatus_t st = api.create(&handle_);
  if (st != CUBLAS_STATUS_SUCCESS) {
    handle_ = nullptr;
    return Status::error("cublasCreate failed: " + cublas_error_string(st));
  }
  if (cudaError_t e = cudaMalloc(&workspace_, workspace_bytes); e != cudaSuccess) {
    workspace_ = nullptr;
    return Status::error("cudaMalloc of the " + std::to_string(workspace_bytes) +
                         "-byte cuBLAS workspace failed: " + cudaGetErrorString(e));
  }
  if ((st = api.set_stream(handle_, stream)) != CUBLAS_STATUS_SUCCESS ||
      (st = api.set_workspace(handle_, workspace_, workspace_bytes)) != CUBLAS_STATUS_SUCCESS ||
      (st = api.set_math_mode(handle_, CUBLAS_DEFAULT_MATH)) != CUBLAS_STATUS_SUCCESS) {
    return Status::error("configuring cuBLAS failed: " + cublas_error_string(st));
  }
  return Status();
}

cublasStatus_t Gemm::linear(gpuref::DType dtype, const void* x, std::int64_t rows, int in_dim, const void* w,
                            int out_dim, void* y, bool accumulate) {
  if (rows == 0) return CUBLAS_STATUS_SUCCESS;
  if (!handle_ || rows < 0 || rows > INT32_MAX) return CUBLAS_STATUS_INVALID_VALUE;
  const cudaDataType_t in_type = dtype == gpuref::DType::kFp16 ? CUDA_R_16F : CUDA_R_16BF;
  const cudaDataType_t out_type = accumulate ? CUDA_R_32F : in_type;
  const float alpha = 1.0f;
  const float beta = accumulate ? 1.0f : 0.0f;
  // Column-major view: y^T[N, M] = W[N, K] (stored as K x N, transposed) * x^T[K, M].
  return cublas().gemm_ex(handle_, CUBLAS_OP_T, CUBLAS_OP_N, out_dim, static_cast<int>(rows), in_dim, &alpha, w,
                          in_type, in_dim, x, in_type, in_dim, &beta, y, out_type, out_dim, CUBLAS_COMPUTE_32F,
                          CUBLAS_GEMM_DEFAULT);
}

std::string cublas_load_error() { return cublas().error; }

std::string cublas_error_string(cublasStatus_t status) {
  const CublasApi& api = cublas();
  if (!api.error.empty()) return "status " + std::to_string(static_cast<int>(status)) + " (" + api.error + ")";
  const char* name = api.status_name(status);
  const char* text = api.status_string(status);
  return std::string(name ? name : "?") + " (" + (text ? text : "") + ")";
}

}  // namespace kv::gpu
