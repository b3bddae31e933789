#include "exec/inline_run.h"

namespace chorus {

size_t run_in_order(const Schedule& s, net::PublishSlots* slots, const Buffers& b, unsigned polls, uint64_t* arrived) {
    return run_in_order_on<net::PublishSlots>(s, slots, b, polls, arrived);
}

}  // namespace chorus
