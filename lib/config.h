// Every CHORUS_* environment variable, parsed in one place. A Config is read
// once per communicator (at chorus_comm_create) and passed explicitly; no
// other code reads the environment. A bad value is an error that names the
// variable; an unknown CHORUS_* variable is reported as a warning (a typo
// otherwise goes unnoticed).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "coll/cost_model.h"
#include "log.h"

namespace chorus {

struct Config {
    LogLevel log_level = LogLevel::Warn;      // CHORUS_LOG
    size_t chunk_bytes = 256 * 1024;          // CHORUS_CHUNK_BYTES: pipeline chunk
    int window = 16;                          // CHORUS_WINDOW: transfers in flight per operation
    uint64_t timeout_ms = 300000;             // CHORUS_TIMEOUT_MS: 0 = never time out
    std::map<std::string, std::string> algo;  // CHORUS_ALGO: collective -> algorithm name
    int spin_before_yield = -1;               // CHORUS_SPIN: idle polls before yielding; -1 = auto
    bool peer_errors = false;                 // CHORUS_PEER_ERRORS: UCX's own peer failure detection
    bool check = false;                       // CHORUS_CHECK: compare arguments across ranks first
    size_t shm_eager_bytes = 32768;           // CHORUS_SHM_EAGER: largest message through Chorus's shared memory
    bool always_stage = false;                // CHORUS_STAGING=always: stage device buffers even if UCX has CUDA
    coll::CostParams cost;                    // CHORUS_COST_ALPHA_US, _LINK_GBS, _REDUCE_GBS, _COPY_GBS

    // Parse from the process environment. Throws Error(CHORUS_ERR_CONFIG).
    static Config from_env();
    // Parse from an explicit list of NAME=VALUE strings (used by tests).
    static Config from_strings(const std::vector<std::string>& env);

    // Forced algorithm for a collective, or "" for automatic selection.
    std::string forced_algo(const std::string& collective) const;
    // One line per setting, for CHORUS_LOG=debug.
    std::string describe() const;
    // Names of CHORUS_* variables seen in the environment but not known.
    std::vector<std::string> unknown;
};

// Valid algorithm names per collective, for CHORUS_ALGO validation.
const std::map<std::string, std::vector<std::string>>& known_algorithms();

// "64K", "1M", "2G", "4096" -> bytes. Throws on malformed input.
size_t parse_bytes(const std::string& text, const std::string& variable);

}  // namespace chorus
