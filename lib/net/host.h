// Which ranks share a host, decided from facts that prove it. Two processes
// are on the same host when they have the same host name, the same kernel
// boot (/proc/sys/kernel/random/boot_id) and the same PID namespace: only
// then is a peer's process id meaningful here (kill(pid, 0) tells whether
// it lives). Containers that share a host name but not a PID namespace, or
// namespaces with a private boot id, are other hosts.
#pragma once

#include <string>

namespace chorus::net {

// This process's host identity: host name, boot id and PID namespace.
const std::string& host_identity();

// Whether the process `pid` of a peer with the same host identity is gone:
// no longer there, or ended and not yet reaped by its parent (a zombie).
// False when it lives (stopped included) or when that cannot be told. Asked
// only while an operation is stalled.
bool process_gone(int pid);

}  // namespace chorus::net
