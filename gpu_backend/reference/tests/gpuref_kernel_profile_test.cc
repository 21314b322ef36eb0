#include "gpu_backend/reference/kernel_profile.h"

#include <gtest/gtest.h>

namespace kv::gpuref {
namespace {

TEST(KernelProfile, RepeatsOfAShapeBecomeOneRowWithTheirMedian) {
  KernelProfile p;
  p.add("qkv_proj", 1, 1, 543, 79'000'000);  // the first launch pays cuBLAS's set-up
  p.add("attention", 1, 1, 543, 900);
  p.add("qkv_proj", 1, 1, 544, 20'000);  // same num_tokens: the same key for a GEMM
  p.add("attention", 1, 1, 544, 950);    // another context: another key for attention
  p.add("qkv_proj", 1, 1, 545, 21'000);
  p.add("qkv_proj", 1, 1, 546, 19'000);
  EXPECT_EQ(p.num_keys(), 3u);
  EXPECT_EQ(p.csv(),
            "kernel,num_tokens,num_seqs,context_tokens,time_ns\n"
            "qkv_proj,1,1,543,20000\n"  // median of 19000, 20000, 21000, 79e6: the lower middle
            "attention,1,1,543,900\n"
            "attention,1,1,544,950\n");
}

TEST(KernelProfile, DecodeStepsGiveOneRowPerGemmShapeAndOnePerAttentionContext) {
  KernelProfile p;
  for (int step = 0; step < 5; ++step) {
    for (const char* k : {"slot_mapping", "rmsnorm", "qkv_proj", "attention", "lm_head"})
      p.add(k, 1, 1, 500 + step, 1000);
  }
  EXPECT_EQ(p.num_keys(), 4u + 5u);
}

}  // namespace
}  // namespace kv::gpuref
