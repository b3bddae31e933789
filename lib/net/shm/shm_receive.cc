// ShmTransport's receive side: posting a receive, and taking the cells
// that arrive in this rank's queue (eager fragments, rendezvous offers,
// acknowledgements) to the receives that wait for them.
#include <cstring>

#include "base/error.h"
#include "net/shm/shm_request.h"
#include "net/shm/shm_transport.h"

namespace chorus::net {

Handle ShmTransport::recv(int peer, Tag tag, void* buf, size_t bytes) {
    if (!small(peer, bytes) && !by_rendezvous(peer, bytes)) {
        inner_used_ = true;
        return wrap(inner_->recv(peer, tag, buf, bytes), peer);
    }
    Peer& p = peers_[peer];
    poll_queue();
    for (auto it = p.unexpected.begin(); it != p.unexpected.end(); ++it) {
        if (it->tag != tag || it->waiter) continue;
        size_t got = it->total;
        if (it->rendezvous) {
            const shm::Rendezvous rts = it->rts;
            drop_message(p, it);
            if (got != bytes) {
                acknowledge(peer, rts);  // the sender's send completes, as an eager one would
                fail(CHORUS_ERR_MISMATCH, "shared memory: message from rank ", peer, " has ", got, " bytes, expected ",
                     bytes);
            }
            Request* r = new_request();
            *r = Request{Request::Kind::Recv, false, peer, tag, nullptr, buf, bytes, 0, nullptr};
            r->rendezvous = true;
            r->rts = rts;
            return r;
        }
        if (got != bytes) {
            if (p.in.msg == &*it) {  // still arriving: the rest is discarded
                p.in.dst = nullptr;
                p.in.msg = nullptr;
            }
            drop_message(p, it);
            fail(CHORUS_ERR_MISMATCH, "shared memory: message from rank ", peer, " has ", got, " bytes, expected ",
                 bytes);
        }
        if (!it->complete) {
            // Still arriving: the receive completes when it has.
            Request* r = new_request();
            *r = Request{Request::Kind::Recv, false, peer, tag, nullptr, buf, bytes, 0, nullptr};
            it->waiter = r;
            return r;
        }
        if (bytes) std::memcpy(buf, it->data.data(), bytes);
        drop_message(p, it);
        return nullptr;
    }
    if (dead_ >= 0) peer_failed();
    Request* r = new_request();
    *r = Request{Request::Kind::Recv, false, peer, tag, nullptr, buf, bytes, 0, nullptr};
    p.posted.push_back(r);
    return r;
}

// A message's last fragment has arrived.
void ShmTransport::finish_incoming(Peer& p) {
    Incoming& in = p.in;
    if (in.req) {
        in.req->got = in.total;
        in.req->done = true;
    } else if (in.msg) {
        in.msg->complete = true;
        if (Request* w = in.msg->waiter) {
            if (w->bytes) std::memcpy(w->dst, in.msg->data.data(), w->bytes);
            w->got = in.total;
            w->done = true;
            for (auto it = p.unexpected.begin(); it != p.unexpected.end(); ++it)
                if (&*it == in.msg) {
                    drop_message(p, it);
                    break;
                }
        }
    }
    in = Incoming{};
}

// Take every cell waiting in this rank's queue, whoever sent it.
bool ShmTransport::poll_queue() {
    bool moved = false;
    for (;;) {
        shm::Cell* c = seg_.cell(me_local_, head_);
        if (c->turn.load(std::memory_order_acquire) != head_ + 1) break;
        Peer& p = peers_[c->source];
        Incoming& in = p.in;
        if (c->bytes & shm::kRendezvousBit) {
            // A whole message in one cell (a sender's cells are in order: none
            // of its messages is arriving). To a posted receive of its tag,
            // whose test() reads it, or kept.
            shm::Rendezvous rts;
            std::memcpy(&rts, shm::payload(c), sizeof rts);
            const Tag tag = c->tag;
            const size_t total = c->total;
            const int source = static_cast<int>(c->source);
            c->turn.store(head_ + shm::kCells, std::memory_order_release);
            ++head_;
            moved = true;
            Request* req = nullptr;
            for (size_t i = 0; i < p.posted.size(); ++i)
                if (p.posted[i]->tag == tag) {
                    req = p.posted[i];
                    p.posted.erase(p.posted.begin() + static_cast<std::ptrdiff_t>(i));
                    break;
                }
            if (!req) {
                Message& m = new_message(p, tag, 0);
                m.rendezvous = true;
                m.rts = rts;
                m.total = total;
                m.complete = true;
                continue;
            }
            if (total != req->bytes) {
                acknowledge(source, rts);  // test() reports the mismatch
                req->got = total;
                req->done = true;
                continue;
            }
            req->rendezvous = true;
            req->rts = rts;
            continue;
        }
        if (!in.active) {
            // A message starts: to a posted receive of its tag, or kept.
            in.active = true;
            in.total = c->total;
            in.got = 0;
            for (size_t i = 0; i < p.posted.size(); ++i)
                if (p.posted[i]->tag == c->tag) {
                    in.req = p.posted[i];
                    p.posted.erase(p.posted.begin() + static_cast<std::ptrdiff_t>(i));
                    break;
                }
            if (in.req) {
                // A size mismatch is reported by test(); the data is dropped.
                in.dst = in.total == in.req->bytes ? static_cast<char*>(in.req->dst) : nullptr;
            } else {
                in.msg = &new_message(p, c->tag, in.total);
                in.dst = in.msg->data.data();
            }
        }
        size_t n = c->bytes;
        if (in.dst && n) std::memcpy(in.dst + in.got, shm::payload(c), n);
        in.got += n;
        c->turn.store(head_ + shm::kCells, std::memory_order_release);
        ++head_;
        moved = true;
        if (in.got >= in.total) finish_incoming(p);
    }
    return moved;
}

// Sends waiting for free cells, in order per receiver.
}  // namespace chorus::net
