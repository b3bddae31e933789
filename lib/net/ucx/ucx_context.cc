#include "net/ucx/ucx_context.h"

#include <cstdlib>
#include <mutex>

#include "base/error.h"
#include "net/ucx/ucx_status.h"

namespace chorus::net {

namespace {
std::mutex g_mutex;
std::weak_ptr<UcxContext> g_context;
constexpr size_t kRequestBytes = 32;
}  // namespace

size_t UcxContext::request_bytes() {
    return kRequestBytes;
}

std::shared_ptr<UcxContext> UcxContext::get() {
    std::lock_guard<std::mutex> lock(g_mutex);
    std::shared_ptr<UcxContext> c = g_context.lock();
    if (!c) {
        c.reset(new UcxContext);
        g_context = c;
    }
    return c;
}

UcxContext::UcxContext() {
    ucp_config_t* config = nullptr;
    check_ucs(ucp_config_read(nullptr, nullptr, &config), "ucp_config_read");
    // Endpoints that use UCX's peer failure detection (CHORUS_PEER_ERRORS)
    // find a dead peer by keepalive, whose default period (tens of seconds)
    // is too slow to report it promptly. The user's own setting wins.
    if (!std::getenv("UCX_KEEPALIVE_INTERVAL")) ucp_config_modify(config, "KEEPALIVE_INTERVAL", "200ms");
    ucp_params_t params{};
    params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_NAME | UCP_PARAM_FIELD_REQUEST_SIZE |
                        UCP_PARAM_FIELD_MT_WORKERS_SHARED;
    // Tagged messages, and RMA for the one-sided steps between hosts
    // (without it if this UCX cannot give it).
    params.features = UCP_FEATURE_TAG | UCP_FEATURE_RMA;
    params.request_size = kRequestBytes;
    params.mt_workers_shared = 1;
    params.name = "chorus";
    ucs_status_t st = ucp_init(&params, config, &context_);
    rma_ = st == UCS_OK;
    if (!rma_) {
        params.features = UCP_FEATURE_TAG;
        st = ucp_init(&params, config, &context_);
    }
    ucp_config_release(config);
    check_ucs(st, "ucp_init");
    ucp_context_attr_t attr{};
    attr.field_mask = UCP_ATTR_FIELD_MEMORY_TYPES;
    if (ucp_context_query(context_, &attr) == UCS_OK)
        device_memory_ = (attr.memory_types & UCS_BIT(UCS_MEMORY_TYPE_CUDA)) != 0;
}

Registrations* UcxContext::registrations() {
    if (!rma_) return nullptr;
    std::call_once(registrations_once_, [this] { registrations_ = std::make_unique<Registrations>(context_); });
    return registrations_.get();
}

UcxContext::~UcxContext() {
    registrations_.reset();
    ucp_cleanup(context_);
}

}  // namespace chorus::net
