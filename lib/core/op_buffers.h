// The memory an operation runs on. Host operations get host scratch from a
// pool. When either user buffer is device or managed memory the operation
// runs on the device: device scratch, a device mirror of a host buffer on the
// other side (copied in first, and out at the end), pinned staging buffers
// for transfers when the transport cannot take device memory, and a gate
// that holds the first step until the caller's stream has caught up.
// Memory kind changes how steps run, never which steps run.
#pragma once

#include <memory>

#include "core/operation.h"
#include "exec/device.h"
#include "exec/executor.h"
#include "exec/scratch_pool.h"

namespace chorus {

class OpBuffers {
public:
    // `direct`: device buffers may go to the transport as they are.
    OpBuffers(std::unique_ptr<Device> device, bool direct);
    Device& device() { return *device_; }

    // Allocate and touch `bytes` of host scratch now, not in the first call.
    void warm(size_t bytes);
    // Memory for `op` (whose schedule is set), and how its steps run. On
    // failure nothing is held.
    Buffers prepare(Operation& op, const void* sendbuf, void* recvbuf, void* stream, DeviceUse& use);
    // Scratch of `bytes` for `op` (from the pool its buffers came from) in
    // place of what it holds: a two-stage operation's second stage.
    void* rescratch(Operation& op, size_t bytes);
    // Back to the pools.
    void release(Operation& op);

private:
    Buffers prepare_device(Operation& op, const void* sendbuf, void* recvbuf, void* stream, MemKind ks, MemKind kr,
                           DeviceUse& use);

    std::unique_ptr<Device> device_;  // first: the pools free through it
    bool direct_;
    ScratchPool scratch_;
    ScratchPool device_scratch_;  // device memory: scratch and mirrors
    ScratchPool staging_;         // pinned host memory: staged transfers
};

}  // namespace chorus
