// UcxTransport's notices: short texts a rank sends its peers outside any
// collective (a failure, an abort), received from any source on this
// communicator's epoch.
#include <chrono>
#include <memory>
#include <string>

#include "net/ucx/ucx_transport.h"

namespace chorus::net {

namespace {
// From any source (the mask leaves out the source bits), of this
// communicator's epoch (in the step field).
constexpr Tag kNoticeMask = (Tag(1) << (kTagSeqBits + kTagStepBits)) - 1;
}  // namespace

void UcxTransport::post_notice_recv() {
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
    ucs_status_ptr_t r = ucp_tag_recv_nbx(worker_, notice_in_->data(), notice_in_->size(),
                                          (kNoticeSeq << kTagStepBits) | epoch_, kNoticeMask, &p);
    notice_recv_ = UCS_PTR_IS_ERR(r) ? nullptr : r;
}

void UcxTransport::notify(int peer, const std::string& notice) {
    if (peer == rank_ || peer_status_[peer].load()) return;
    clean_ = false;
    try {
        auto text = std::make_unique<std::string>(notice.substr(0, kMaxNotice));
        ucp_request_param_t p{};
        p.op_attr_mask = 0;
        ucs_status_ptr_t r =
            ucp_tag_send_nbx(endpoint(peer), text->data(), text->size(), make_tag(rank_, kNoticeSeq, epoch_), &p);
        if (UCS_PTR_IS_PTR(r)) notices_out_.emplace_back(r, std::move(text));
    } catch (...) {
        // A notice that cannot be sent is dropped: the peer learns of the
        // failure by its own means.
    }
}

void UcxTransport::reap_notices() {
    for (size_t i = 0; i < notices_out_.size();) {
        if (ucp_request_check_status(notices_out_[i].first) == UCS_INPROGRESS) {
            ++i;
            continue;
        }
        ucp_request_free(notices_out_[i].first);
        notices_out_.erase(notices_out_.begin() + static_cast<std::ptrdiff_t>(i));
    }
}

void UcxTransport::flush_notices(int ms) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    for (reap_notices(); !notices_out_.empty() && std::chrono::steady_clock::now() < deadline; reap_notices())
        ucp_worker_progress(worker_);
}

bool UcxTransport::poll_notice(int* source, std::string* notice) {
    reap_notices();
    if (!notice_recv_) return false;
    ucp_tag_recv_info_t info{};
    ucs_status_t st = ucp_tag_recv_request_test(notice_recv_, &info);
    if (st == UCS_INPROGRESS) return false;
    ucp_request_free(notice_recv_);
    notice_recv_ = nullptr;
    bool got = st == UCS_OK;
    if (got) {
        clean_ = false;
        *source = static_cast<int>(info.sender_tag >> (kTagSeqBits + kTagStepBits));
        notice->assign(notice_in_->data(), info.length);
    }
    post_notice_recv();
    return got;
}

}  // namespace chorus::net
