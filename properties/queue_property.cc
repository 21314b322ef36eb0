// Level (a): FreeBlockQueue against a plain std::vector model of the queue (head first).
// After every command the queue's walk, size, per-block membership and link check agree
// with the model.
#include "properties/properties.h"

#include <algorithm>
#include <memory>
#include <sstream>

#include "model/free_block_queue.h"
#include "properties/manager_model.h"  // ids_text
#include "properties/state_runner.h"

namespace kv::props {
namespace {

struct QueueModel {
  int num_blocks = 0;
  std::vector<BlockId> order;  // head first

  bool queued(BlockId id) const { return std::find(order.begin(), order.end(), id) != order.end(); }
  std::vector<BlockId> not_queued() const {
    std::vector<BlockId> out;
    for (BlockId b = 0; b < num_blocks; ++b) {
      if (!queued(b)) out.push_back(b);
    }
    return out;
  }
};

struct QueueSut {
  explicit QueueSut(int n) : blocks(static_cast<std::size_t>(n)) {
    for (int i = 0; i < n; ++i) blocks[static_cast<std::size_t>(i)].id = i;
    queue = std::make_unique<FreeBlockQueue>(blocks);
  }
  Block* block(BlockId id) { return &blocks[static_cast<std::size_t>(id)]; }
  std::vector<Block> blocks;
  std::unique_ptr<FreeBlockQueue> queue;
};

using QueueCommand = rc::state::Command<QueueModel, QueueSut>;

// Everything observable about the queue agrees with the model.
void compare(const QueueModel& m, QueueSut& sut) {
  const std::vector<BlockId> got = sut.queue->ids();
  if (got != m.order) RC_FAIL("queue order " + ids_text(got) + ", model " + ids_text(m.order));
  RC_ASSERT(sut.queue->size() == m.order.size());
  RC_ASSERT(sut.queue->empty() == m.order.empty());
  const Block* front = sut.queue->front();
  RC_ASSERT((front == nullptr ? kNoBlock : front->id) == (m.order.empty() ? kNoBlock : m.order.front()));
  for (BlockId b = 0; b < m.num_blocks; ++b) {
    if (sut.queue->contains(sut.block(b)) != m.queued(b)) {
      RC_FAIL("block " + std::to_string(b) + " membership differs from the model");
    }
  }
  std::string why;
  if (!sut.queue->check(&why)) RC_FAIL("check: " + why);
}

struct PopLeft : QueueCommand {
  void apply(QueueModel& m) const override {
    if (!m.order.empty()) m.order.erase(m.order.begin());
  }
  void run(const QueueModel& m, QueueSut& sut) const override {
    Block* b = sut.queue->popleft();
    if (m.order.empty()) {
      RC_ASSERT(b == nullptr);
    } else {
      RC_ASSERT(b != nullptr);
      RC_ASSERT(b->id == m.order.front());
      RC_ASSERT(!sut.queue->contains(b));
    }
    QueueModel next = nextState(m);
    compare(next, sut);
  }
  void show(std::ostream& os) const override { os << "popleft"; }
};

struct PopLeftN : QueueCommand {
  std::size_t n;
  explicit PopLeftN(std::size_t count) : n(count) {}
  void checkPreconditions(const QueueModel& m) const override { require(n <= m.order.size()); }
  void apply(QueueModel& m) const override {
    m.order.erase(m.order.begin(), m.order.begin() + static_cast<std::ptrdiff_t>(n));
  }
  void run(const QueueModel& m, QueueSut& sut) const override {
    std::vector<Block*> out{sut.block(0)};  // popleft_n appends: keep a sentinel first
    sut.queue->popleft_n(n, out);
    RC_ASSERT(out.size() == n + 1);
    for (std::size_t i = 0; i < n; ++i) RC_ASSERT(out[i + 1]->id == m.order[i]);
    compare(nextState(m), sut);
  }
  void show(std::ostream& os) const override { os << "popleft_n " << n; }
};

struct Remove : QueueCommand {
  BlockId id;
  explicit Remove(BlockId b) : id(b) {}
  void checkPreconditions(const QueueModel& m) const override { require(m.queued(id)); }
  void apply(QueueModel& m) const override { m.order.erase(std::find(m.order.begin(), m.order.end(), id)); }
  void run(const QueueModel& m, QueueSut& sut) const override {
    sut.queue->remove(sut.block(id));
    compare(nextState(m), sut);
  }
  void show(std::ostream& os) const override { os << "remove " << id; }
};

// append / append_n / prepend_n of blocks not in the queue.
struct Insert : QueueCommand {
  enum Kind { kAppend, kAppendN, kPrependN } kind;
  std::vector<BlockId> ids;
  Insert(Kind k, std::vector<BlockId> b) : kind(k), ids(std::move(b)) {}
  void checkPreconditions(const QueueModel& m) const override {
    require(kind != kAppend || ids.size() == 1);
    std::vector<BlockId> sorted = ids;
    std::sort(sorted.begin(), sorted.end());
    require(std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end());
    for (BlockId b : ids) require(b >= 0 && b < m.num_blocks && !m.queued(b));
  }
  void apply(QueueModel& m) const override {
    if (kind == kPrependN) {
      m.order.insert(m.order.begin(), ids.begin(), ids.end());
    } else {
      m.order.insert(m.order.end(), ids.begin(), ids.end());
    }
  }
  void run(const QueueModel& m, QueueSut& sut) const override {
    std::vector<Block*> ptrs;
    for (BlockId b : ids) ptrs.push_back(sut.block(b));
    if (kind == kAppend) {
      sut.queue->append(ptrs.front());
    } else if (kind == kAppendN) {
      sut.queue->append_n(ptrs);
    } else {
      sut.queue->prepend_n(ptrs);
    }
    compare(nextState(m), sut);
  }
  void show(std::ostream& os) const override {
    os << (kind == kAppend ? "append " : kind == kAppendN ? "append_n " : "prepend_n ") << ids_text(ids);
  }
};

rc::Gen<std::shared_ptr<const QueueCommand>> gen_queue_command(const QueueModel& m) {
  return rc::gen::exec([m]() -> std::shared_ptr<const QueueCommand> {
    const std::vector<BlockId> outside = m.not_queued();
    std::vector<int> kinds{0};                                   // popleft: always valid
    if (!m.order.empty()) kinds.insert(kinds.end(), {1, 2, 2});  // popleft_n, remove
    if (!outside.empty()) kinds.insert(kinds.end(), {3, 4, 5, 5});
    switch (*rc::gen::elementOf(kinds)) {
      case 0:
        return std::make_shared<PopLeft>();
      case 1:
        return std::make_shared<PopLeftN>(
            static_cast<std::size_t>(*rc::gen::inRange<std::size_t>(0, m.order.size() + 1)));
      case 2:
        return std::make_shared<Remove>(*rc::gen::elementOf(m.order));
      case 3:
        return std::make_shared<Insert>(Insert::kAppend, std::vector<BlockId>{*rc::gen::elementOf(outside)});
      default: {
        // A random subset of the blocks outside the queue, in random order.
        const auto k = outside.size();
        const auto keep = *rc::gen::container<std::vector<bool>>(k, rc::gen::arbitrary<bool>());
        const auto keys = *rc::gen::container<std::vector<int>>(k, rc::gen::inRange(0, 64));
        std::vector<std::pair<int, BlockId>> keyed;
        for (std::size_t i = 0; i < k; ++i) {
          if (keep[i]) keyed.emplace_back(keys[i], outside[i]);
        }
        std::stable_sort(keyed.begin(), keyed.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
        std::vector<BlockId> pick;
        for (const auto& kb : keyed) pick.push_back(kb.second);
        return std::make_shared<Insert>(
            *rc::gen::elementOf(std::vector<int>{4, 5}) == 4 ? Insert::kAppendN : Insert::kPrependN, std::move(pick));
      }
    }
  });
}

}  // namespace

void queue_property() {
  const int n = *rc::gen::inRange(1, 17);
  QueueModel m0;
  m0.num_blocks = n;
  for (BlockId b = 0; b < n; ++b) m0.order.push_back(b);
  const auto commands = *rc::state::gen::commands(m0, &gen_queue_command);
  const CaseOutcome o = run_isolated([&] {
    QueueSut sut(n);
    return run_commands(commands, m0, sut);
  });
  if (!o.passed) {
    std::ostringstream os;
    os << o.message << "\nqueue of " << n << " blocks (0.." << n - 1 << " queued in id order), then:\n";
    show_commands(os, commands, o.failed_step, "    <- fails here");
    RC_FAIL(os.str());
  }
}

}  // namespace kv::props
