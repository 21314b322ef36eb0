// cuBLAS is loaded when the backend first needs it, not at process start: a process that links
// the CUDA backend but never runs a GEMM (kvsim --device sim, --help) does not map it. Needs the
// CUDA toolkit's libraries, not a GPU.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "gpu_backend/gemm.h"

namespace kv::gpu {
namespace {

bool cublas_mapped() {
  std::ifstream maps("/proc/self/maps");
  std::stringstream text;
  text << maps.rdbuf();
  return text.str().find("libcublas") != std::string::npos;
}

TEST(CublasLoad, LoadedOnFirstUseOnly) {
  EXPECT_FALSE(cublas_mapped()) << "cuBLAS is mapped before the backend asked for it";
  EXPECT_EQ(cublas_load_error(), "");
  EXPECT_TRUE(cublas_mapped());
  EXPECT_EQ(cublas_error_string(CUBLAS_STATUS_NOT_INITIALIZED).rfind("CUBLAS_STATUS_NOT_INITIALIZED", 0), 0u);
}

}  // namespace
}  // namespace kv::gpu
