// StepDag: critical paths of hand-built graphs with exact numbers, re-weighting, ties.
#include "sim/step_dag.h"

#include <gtest/gtest.h>

#include <vector>

namespace kv::sim {
namespace {

TEST(StepDagTest, DiamondWithATail) {
  //        +--> copy_a (5) --> kernel (4)
  //  host (3)                  ^
  //        +--> copy_b (2) ----+--> tail (10)
  StepDag dag;
  auto host = dag.add_node("host", 3);
  auto copy_a = dag.add_node("copy_a", 5);
  auto copy_b = dag.add_node("copy_b", 2);
  auto kernel = dag.add_node("kernel", 4);
  auto tail = dag.add_node("tail", 10);
  dag.add_edge(host, copy_a);
  dag.add_edge(host, copy_b);
  dag.add_edge(copy_a, kernel);
  dag.add_edge(copy_b, kernel);
  dag.add_edge(copy_b, tail);
  // host+copy_a+kernel = 12; host+copy_b+tail = 15.
  EXPECT_EQ(dag.critical_path_cycles(), 15);
  EXPECT_EQ(dag.critical_path(), (std::vector<StepDag::NodeId>{host, copy_b, tail}));

  dag.set_cycles(tail, 1);  // now 12 via copy_a
  EXPECT_EQ(dag.critical_path_cycles(), 12);
  EXPECT_EQ(dag.critical_path(), (std::vector<StepDag::NodeId>{host, copy_a, kernel}));

  dag.set_cycles(copy_b, 5);  // copy_a and copy_b tie into kernel: the smaller id is followed
  EXPECT_EQ(dag.critical_path_cycles(), 12);
  EXPECT_EQ(dag.critical_path(), (std::vector<StepDag::NodeId>{host, copy_a, kernel}));
  EXPECT_EQ(dag.name(kernel), "kernel");
  EXPECT_EQ(dag.num_nodes(), 5u);
}

TEST(StepDagTest, ParallelBranchesOverlap) {
  // Two independent chains of 7 and 9 cycles: the step takes 9, not 16.
  StepDag dag;
  auto a1 = dag.add_node("a1", 3), a2 = dag.add_node("a2", 4);
  auto b1 = dag.add_node("b1", 1), b2 = dag.add_node("b2", 8);
  dag.add_edge(a1, a2);
  dag.add_edge(b1, b2);
  EXPECT_EQ(dag.critical_path_cycles(), 9);
  EXPECT_EQ(dag.critical_path(), (std::vector<StepDag::NodeId>{b1, b2}));
}

TEST(StepDagTest, EmptyAndSingle) {
  StepDag dag;
  EXPECT_EQ(dag.critical_path_cycles(), 0);
  EXPECT_TRUE(dag.critical_path().empty());
  dag.add_node("only", 42);
  EXPECT_EQ(dag.critical_path_cycles(), 42);
}

TEST(StepDagDeathTest, CycleIsABug) {
  StepDag dag;
  auto a = dag.add_node("a", 1), b = dag.add_node("b", 1);
  dag.add_edge(a, b);
  EXPECT_DEATH(dag.add_edge(b, a), "cycle");
}

}  // namespace
}  // namespace kv::sim
