#include "sim/step_dag.h"

#include <algorithm>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/topological_sort.hpp>
#include <iterator>

#include "model/util/check.h"

namespace kv::sim {

namespace {
struct NodeData {
  std::string name;
  std::int64_t cycles = 0;
};
using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, NodeData>;
using Vertex = boost::graph_traits<Graph>::vertex_descriptor;
}  // namespace

struct StepDag::Impl {
  Graph graph;
  std::vector<Vertex> order;                 // topological order, valid when !dirty
  mutable std::vector<std::int64_t> finish;  // scratch: end time of each node
  bool dirty = true;
};

StepDag::StepDag() : impl_(std::make_unique<Impl>()) {}
StepDag::~StepDag() = default;
StepDag::StepDag(StepDag&&) noexcept = default;
StepDag& StepDag::operator=(StepDag&&) noexcept = default;

StepDag::NodeId StepDag::add_node(std::string name, std::int64_t cycles) {
  KV_CHECK(cycles >= 0, "node " << name << " has negative weight " << cycles);
  Vertex v = boost::add_vertex(NodeData{std::move(name), cycles}, impl_->graph);
  impl_->dirty = true;
  return static_cast<NodeId>(v);
}

void StepDag::add_edge(NodeId from, NodeId to) {
  KV_CHECK(from >= 0 && static_cast<std::size_t>(from) < num_nodes() && to >= 0 &&
               static_cast<std::size_t>(to) < num_nodes() && from != to,
           "bad edge " << from << " -> " << to);
  boost::add_edge(static_cast<Vertex>(from), static_cast<Vertex>(to), impl_->graph);
  impl_->dirty = true;
  ensure_order();  // checks acyclicity at once, where the bad edge is added
}

void StepDag::set_cycles(NodeId node, std::int64_t cycles) {
  KV_CHECK(cycles >= 0, "node " << name(node) << " gets negative weight " << cycles);
  impl_->graph[static_cast<Vertex>(node)].cycles = cycles;
}

std::int64_t StepDag::cycles(NodeId node) const { return impl_->graph[static_cast<Vertex>(node)].cycles; }

const std::string& StepDag::name(NodeId node) const { return impl_->graph[static_cast<Vertex>(node)].name; }

std::size_t StepDag::num_nodes() const { return boost::num_vertices(impl_->graph); }

void StepDag::ensure_order() const {
  if (!impl_->dirty) return;
  std::vector<Vertex> reversed;
  try {
    boost::topological_sort(impl_->graph, std::back_inserter(reversed));
  } catch (const boost::not_a_dag&) {
    KV_CHECK(false, "step DAG has a cycle");
  }
  impl_->order.assign(reversed.rbegin(), reversed.rend());
  impl_->finish.assign(num_nodes(), 0);
  impl_->dirty = false;
}

std::int64_t StepDag::critical_path_cycles() const {
  ensure_order();
  const Graph& g = impl_->graph;
  std::vector<std::int64_t>& finish = impl_->finish;
  std::int64_t longest = 0;
  for (Vertex v : impl_->order) {
    std::int64_t start = 0;
    for (auto [e, end] = boost::in_edges(v, g); e != end; ++e) {
      start = std::max(start, finish[boost::source(*e, g)]);
    }
    finish[v] = start + g[v].cycles;
    longest = std::max(longest, finish[v]);
  }
  return longest;
}

std::vector<StepDag::NodeId> StepDag::critical_path() const {
  std::int64_t longest = critical_path_cycles();
  const Graph& g = impl_->graph;
  const std::vector<std::int64_t>& finish = impl_->finish;
  std::vector<NodeId> path;
  if (num_nodes() == 0) return path;
  // The smallest-id node that ends last, then back through the smallest-id tight predecessor.
  Vertex v = 0;
  for (Vertex u = 0; u < num_nodes(); ++u) {
    if (finish[u] == longest) {
      v = u;
      break;
    }
  }
  while (true) {
    path.push_back(static_cast<NodeId>(v));
    std::int64_t start = finish[v] - g[v].cycles;
    bool found = false;
    Vertex best = 0;
    for (auto [e, end] = boost::in_edges(v, g); e != end; ++e) {
      Vertex u = boost::source(*e, g);
      if (finish[u] == start && (!found || u < best)) {
        best = u;
        found = true;
      }
    }
    if (!found) break;
    v = best;
  }
  std::reverse(path.begin(), path.end());
  return path;
}

}  // namespace kv::sim
