// The one-sided steps of the executor: expose, get and put.
//
// An expose sends its peer a descriptor of the region (address, size, and
// whether it can be reached in place) and waits for the reply; a get or put
// waits for the descriptor, copies (transport get/put: one copy, straight
// between the two ranks' buffers), then replies "done". A get that reduces
// reads a block at a time into a small buffer that stays in cache and
// reduces it into place at once, so every remote byte is touched once.
//
// A region in memory the host's ranks map into each other (mapped memory,
// net::PeerMemory::mapped_here) is described by its reference instead: the
// reader maps the peer's allocation (once; the transport keeps it) and
// copies or reduces straight through the mapping, without a system call or
// a bounce buffer, or, when it cannot map it, falls back to get/put.
//
// With keyed access (UCX RMA: between hosts, where cross-memory attach is
// not offered) the exposer registers the region and its descriptor carries
// the key; the reader's get or put goes through the transport and completes
// later (a get that reduces lands in scratch and reduces from there), then
// the reply; the exposer gives its registration back when the reply comes
// (or when the operation is aborted).
//
// Device memory on either side is never reached in place: an exposer whose
// buffers are on the device says so in its descriptor, and a reader whose
// buffers are on the device does not read in place either; the reply then
// asks for the data as an ordinary message (exposer to getter, or putter to
// exposer), staged like any transfer, and a get that reduces lands it in
// scratch and reduces from there. Which it is, is settled between the two
// ranks by the messages themselves, so the schedule (and every other rank)
// is the same whatever memory each rank passes.
#include <algorithm>
#include <cstdlib>

#include "base/error.h"
#include "exec/executor.h"
#include "reduce/datatype.h"
#include "reduce/host_reducer.h"

namespace chorus {

namespace {
// Descriptor: desc[0] the address, desc[1] the bytes, desc[2] the mode.
constexpr uint64_t kInPlace = 1;    // read or write the region where it is
constexpr uint64_t kByMessage = 2;  // it travels as a message
constexpr uint64_t kKeyed = 3;      // reach it with the key that follows (UCX RMA)
constexpr uint64_t kMapped = 4;     // in memory the ranks map into each other: the reference follows
// Replies.
constexpr uint64_t kDone = 1;  // the reader or writer is done with the region
constexpr uint64_t kPush = 2;  // send me the region's contents
constexpr uint64_t kPull = 3;  // receive the region's new contents
// A get that reduces reads this much at a time (fits L2 with its operands).
constexpr size_t kBounceBytes = 128 * 1024;
}  // namespace

void Executor::FreeBounce::operator()(char* p) const {
    std::free(p);
}

void Executor::os_message(StepId s, Part part, bool is_send, void* buf, size_t bytes) {
    const Step& st = sched_->steps()[s];
    net::Handle h = is_send ? transport_.send(st.peer, net::make_tag(sched_->rank(), seq_, st.tag), buf, bytes)
                            : transport_.recv(st.peer, net::make_tag(st.peer, seq_, st.tag), buf, bytes);
    if (h)
        inflight_.push_back({s, h, nullptr, part, is_send});
    else
        os_done(s, part);
}

void Executor::os_start(StepId s) {
    const Step& st = sched_->steps()[s];
    OneSided& o = os_[s];
    o.reply = 0;
    if (st.kind != StepKind::Expose) {
        o.pending = 1;  // the descriptor, then the reply
        os_message(s, Part::Desc, false, desc_of(s), desc_bytes());
        return;
    }
    uint64_t* desc = keyed_.empty() ? o.desc : keyed_[s].msg.desc;
    desc[0] = dev_.on_device ? 0 : reinterpret_cast<uint64_t>(resolve(st.src));
    desc[1] = st.bytes;
    desc[2] = dev_.on_device ? kByMessage : kInPlace;
    net::MappedRef ref;
    if (keyed_.empty() && !dev_.on_device && peer_memory_ &&
        peer_memory_->mapped_here(resolve(st.src), st.bytes, &ref)) {
        desc[2] = kMapped;
        desc[3] = ref.serial;
        desc[4] = ref.fd;
        desc[5] = ref.offset;
        desc[6] = ref.size;
    }
    if (!keyed_.empty() && !dev_.on_device) {
        // Registered (or found registered) now; a region that cannot be
        // travels as a message.
        Keyed& k = keyed_[s];
        desc[3] = keyed_memory_->rma_register(resolve(st.src), st.bytes, k.msg.key, &k.region);
        desc[2] = desc[3] ? kKeyed : kByMessage;
    }
    o.pending = 2;  // the descriptor's send and the reply
    os_message(s, Part::Reply, false, &o.reply, sizeof o.reply);
    os_message(s, Part::Desc, true, desc_of(s), desc_bytes());
}

void Executor::os_release(StepId s) {
    if (keyed_.empty() || !keyed_[s].region) return;
    keyed_memory_->rma_release(keyed_[s].region);
    keyed_[s].region = 0;
}

void Executor::os_access(StepId s) {
    const Step& st = sched_->steps()[s];
    const KeyedDesc& d = keyed_[s].msg;
    if (d.desc[3] > sizeof d.key)
        fail(CHORUS_ERR_INTERNAL, "one-sided: rank ", st.peer, " sent a key of ", d.desc[3], " bytes");
    net::Handle h;
    if (st.kind == StepKind::Put) {
        h = keyed_memory_->rma_put(st.peer, d.desc[0], resolve(st.src), st.bytes, d.key, d.desc[3]);
    } else {
        // A get that reduces lands the data where a message would (scratch),
        // then reduces it into place.
        h = keyed_memory_->rma_get(st.peer, resolve(st.count ? st.src : st.dst), d.desc[0], st.bytes, d.key, d.desc[3]);
    }
    if (h)
        inflight_.push_back({s, h, nullptr, Part::Access, true});
    else
        os_done(s, Part::Access);
}

void Executor::os_done(StepId s, Part part) {
    const Step& st = sched_->steps()[s];
    OneSided& o = os_[s];
    if (st.kind == StepKind::Expose && part == Part::Reply) {
        os_release(s);  // the peer is done with the region (or has it sent)
        if (o.reply == kPush || o.reply == kPull) {
            ++o.pending;
            transfer(s, Part::Data, o.reply == kPush, resolve(st.src));
        } else if (o.reply != kDone) {
            fail(CHORUS_ERR_INTERNAL, "one-sided: bad reply ", o.reply, " from rank ", st.peer);
        }
    } else if (st.kind != StepKind::Expose && part == Part::Desc) {
        const uint64_t* desc = keyed_.empty() ? o.desc : keyed_[s].msg.desc;
        if (desc[1] != st.bytes)
            fail(CHORUS_ERR_MISMATCH, "one-sided: rank ", st.peer, " exposes ", desc[1], " bytes, this rank ",
                 st.kind == StepKind::Get ? "reads " : "writes ", st.bytes);
        if (desc[2] == kKeyed && !dev_.on_device) {
            os_access(s);
            return;
        }
        if (desc[2] == kMapped && !dev_.on_device && keyed_.empty() && peer_memory_) {
            const net::MappedRef ref{desc[3], desc[4], desc[5], desc[6]};
            if (ref.offset > ref.size || st.bytes > ref.size - ref.offset)
                fail(CHORUS_ERR_INTERNAL, "one-sided: rank ", st.peer, " exposes ", st.bytes, " bytes at ", ref.offset,
                     " of an allocation of ", ref.size);
            if (char* base = peer_memory_->map_peer(st.peer, ref)) {
                os_copy_mapped(s, base + ref.offset);
            } else {
                os_copy(s, o.desc[0]);  // cannot be mapped here: through the kernel
            }
            o.reply = kDone;
            os_message(s, Part::Reply, true, &o.reply, sizeof o.reply);
            return;
        }
        if (desc[2] == kInPlace && !dev_.on_device && keyed_.empty()) {
            os_copy(s, o.desc[0]);
            o.reply = kDone;
            os_message(s, Part::Reply, true, &o.reply, sizeof o.reply);
            return;
        }
        const bool get = st.kind == StepKind::Get;
        o.reply = get ? kPush : kPull;
        ++o.pending;  // the data
        os_message(s, Part::Reply, true, &o.reply, sizeof o.reply);
        char* buf = get ? resolve(st.count ? st.src : st.dst) : resolve(st.src);
        transfer(s, Part::Data, !get, buf);
        return;
    } else if (part == Part::Access) {
        // The keyed get or put is done: reduce what a get landed, then
        // tell the exposer.
        if (st.kind == StepKind::Get && st.count) reduce_landed(s);
        o.reply = kDone;
        os_message(s, Part::Reply, true, &o.reply, sizeof o.reply);
        return;
    } else if (st.kind == StepKind::Get && st.count && part == Part::Data) {
        // The data landed in scratch: reduce it into place (on the device,
        // the step ends when the reduction does).
        if (reduce_landed(s)) return;
    }
    if (--o.pending == 0) finish(s);
}

bool Executor::reduce_landed(StepId s) {
    const Step& st = sched_->steps()[s];
    char* dst = resolve(st.dst);
    const char* local = resolve(st.src2);
    const char* landed = resolve(st.src);
    const char* a = st.remote_first ? landed : local;
    const char* b = st.remote_first ? local : landed;
    if (dev_.on_device) {
        dev_.device->reduce(sched_->dtype(), sched_->op(), dst, a, b, st.count);
        queued_.push_back({s, dev_.device->mark(), Phase::Local, nullptr, Part::Reduced});
        return true;
    }
    host_reduce(sched_->dtype(), sched_->op(), dst, a, b, st.count);
    return false;
}

void Executor::os_copy(StepId s, uint64_t remote) {
    const Step& st = sched_->steps()[s];
    if (st.kind == StepKind::Put) {
        peer_memory_->put(st.peer, remote, resolve(st.src), st.bytes);
        return;
    }
    char* dst = resolve(st.dst);
    if (!st.count) {
        peer_memory_->get(st.peer, dst, remote, st.bytes);
        return;
    }
    if (!bounce_) {
        void* p = nullptr;
        if (posix_memalign(&p, 64, kBounceBytes) != 0) fail(CHORUS_ERR_OUT_OF_MEMORY, "one-sided: bounce buffer");
        bounce_.reset(static_cast<char*>(p));
    }
    const size_t esize = datatype_size(sched_->dtype());
    const size_t block = kBounceBytes / esize;
    const char* local = resolve(st.src2);
    for (size_t i = 0; i < st.count; i += block) {
        const size_t n = std::min(block, st.count - i), off = i * esize;
        peer_memory_->get(st.peer, bounce_.get(), remote + off, n * esize);
        if (st.remote_first)
            host_reduce(sched_->dtype(), sched_->op(), dst + off, bounce_.get(), local + off, n);
        else
            host_reduce(sched_->dtype(), sched_->op(), dst + off, local + off, bounce_.get(), n);
    }
}

void Executor::os_copy_mapped(StepId s, char* remote) {
    const Step& st = sched_->steps()[s];
    // A step marked to stream (a message beyond the caches) writes with
    // non-temporal stores: its result is not read again soon, and its lines
    // are not read first.
    auto copy = st.stream ? host_copy_stream : host_copy;
    if (st.kind == StepKind::Put) {
        copy(remote, resolve(st.src), st.bytes);
        return;
    }
    char* dst = resolve(st.dst);
    if (!st.count) {
        copy(dst, remote, st.bytes);
        return;
    }
    const char* local = resolve(st.src2);
    auto reduce = st.stream ? host_reduce_stream : host_reduce;
    if (st.remote_first)
        reduce(sched_->dtype(), sched_->op(), dst, remote, local, st.count);
    else
        reduce(sched_->dtype(), sched_->op(), dst, local, remote, st.count);
}

}  // namespace chorus
