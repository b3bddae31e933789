#include "net/transport.h"

#include "base/error.h"

namespace chorus::net {

void Transport::get(int peer, void*, uint64_t, size_t) {
    fail(CHORUS_ERR_INTERNAL, name(), " transport: no one-sided read of rank ", peer, "'s memory");
}

void Transport::put(int peer, uint64_t, const void*, size_t) {
    fail(CHORUS_ERR_INTERNAL, name(), " transport: no one-sided write into rank ", peer, "'s memory");
}

Handle Transport::rma_get(int peer, void*, uint64_t, size_t, const void*, size_t) {
    fail(CHORUS_ERR_INTERNAL, name(), " transport: no keyed read of rank ", peer, "'s memory");
}

Handle Transport::rma_put(int peer, uint64_t, const void*, size_t, const void*, size_t) {
    fail(CHORUS_ERR_INTERNAL, name(), " transport: no keyed write into rank ", peer, "'s memory");
}

}  // namespace chorus::net
