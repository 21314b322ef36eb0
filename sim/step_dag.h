// StepDag: one step as a DAG of host work, copies and kernels (a Boost.Graph adjacency_list);
// the step's duration is its critical path: the longest path where a node's length is its
// weight in integer cycles and edges cost nothing.
// Invariants:
//   1. The graph is acyclic (add_edge KV_CHECKs it) and node ids are 0..num_nodes()-1 in
//      insertion order.
//   2. The topological order is computed once per structure change, so re-weighting a fixed
//      structure every step costs O(nodes + edges) and allocates nothing.
//   3. critical_path() is deterministic: among equally long predecessors it follows the one
//      with the smallest id.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kv::sim {

class StepDag {
 public:
  using NodeId = int;

  StepDag();
  ~StepDag();
  StepDag(StepDag&&) noexcept;
  StepDag& operator=(StepDag&&) noexcept;

  NodeId add_node(std::string name, std::int64_t cycles = 0);
  void add_edge(NodeId from, NodeId to);  // `to` starts after `from` ends

  void set_cycles(NodeId node, std::int64_t cycles);
  std::int64_t cycles(NodeId node) const;
  const std::string& name(NodeId node) const;
  std::size_t num_nodes() const;

  // The length of the longest path, in cycles.
  std::int64_t critical_path_cycles() const;
  // The nodes of one longest path, first to last.
  std::vector<NodeId> critical_path() const;

 private:
  void ensure_order() const;

  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kv::sim
