// UCX status codes as Chorus errors.
#pragma once

#include <ucp/api/ucp.h>

#include "base/error.h"

namespace chorus::net {

inline chorus_result_t classify(ucs_status_t status) {
    switch (status) {
        case UCS_ERR_MESSAGE_TRUNCATED: return CHORUS_ERR_MISMATCH;
        case UCS_ERR_ENDPOINT_TIMEOUT:
        case UCS_ERR_CONNECTION_RESET:
        case UCS_ERR_UNREACHABLE:
        case UCS_ERR_REJECTED: return CHORUS_ERR_PEER_FAILED;
        case UCS_ERR_NO_MEMORY: return CHORUS_ERR_OUT_OF_MEMORY;
        default: return CHORUS_ERR_TRANSPORT;
    }
}

inline void check_ucs(ucs_status_t status, const char* what) {
    if (status != UCS_OK) fail(classify(status), "UCX ", what, ": ", ucs_status_string(status));
}

}  // namespace chorus::net
