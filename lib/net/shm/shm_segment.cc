#include "net/shm/shm_segment.h"

#include <new>

namespace chorus::net::shm {

namespace {
constexpr size_t kQueueBytes = sizeof(QueueHeader) + kCells * kCellBytes;
static_assert(sizeof(Cell) == 32, "a cell header is 32 bytes");
static_assert(kCellBytes % 64 == 0 && sizeof(SlotArea) % 64 == 0, "cache-line multiples");
}  // namespace

size_t Segment::bytes(int local) {
    return static_cast<size_t>(local) * (kQueueBytes + sizeof(SlotArea) + sizeof(AckArea));
}

void Segment::init(void* mem, int local) {
    Segment s(mem, local);
    for (int i = 0; i < local; ++i) {
        new (s.queue(i)) QueueHeader;
        s.queue(i)->tail.store(0, std::memory_order_relaxed);
        for (uint64_t k = 0; k < kCells; ++k) {
            Cell* c = new (s.cell(i, k)) Cell;
            c->turn.store(k, std::memory_order_relaxed);  // free for position k
        }
        SlotArea* a = new (s.slots(i)) SlotArea;
        a->done.store(0, std::memory_order_relaxed);
        for (auto& slot : a->slots) slot.op.store(0, std::memory_order_relaxed);
        AckArea* k = new (s.acks(i)) AckArea;
        for (auto& w : k->word) w.store(0, std::memory_order_relaxed);
    }
    // No fence here: the peers learn the segment's name only through the
    // bootstrap's all-gather that follows, which orders these stores before
    // their first access.
}

QueueHeader* Segment::queue(int i) const {
    return reinterpret_cast<QueueHeader*>(base_ + static_cast<size_t>(i) * kQueueBytes);
}

Cell* Segment::cell(int i, uint64_t position) const {
    return reinterpret_cast<Cell*>(base_ + static_cast<size_t>(i) * kQueueBytes + sizeof(QueueHeader) +
                                   (position % kCells) * kCellBytes);
}

SlotArea* Segment::slots(int i) const {
    return reinterpret_cast<SlotArea*>(base_ + static_cast<size_t>(local_) * kQueueBytes +
                                       static_cast<size_t>(i) * sizeof(SlotArea));
}

AckArea* Segment::acks(int i) const {
    return reinterpret_cast<AckArea*>(base_ + static_cast<size_t>(local_) * (kQueueBytes + sizeof(SlotArea)) +
                                      static_cast<size_t>(i) * sizeof(AckArea));
}

}  // namespace chorus::net::shm
