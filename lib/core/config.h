// Every CHORUS_* environment variable, parsed in one place from one table
// (config.cc): each setting's name, how it is parsed, how it prints, and
// whether it changes what ranks do on the wire. A Config is read once per
// communicator (at chorus_comm_create) and passed explicitly; no other code
// reads the environment. A bad value is an error that names the variable; an
// unknown CHORUS_* variable is reported as a warning (a typo otherwise goes
// unnoticed).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "base/log.h"
#include "coll/planner/cost_model.h"

namespace chorus {

// libchorus_mpi's policy (CHORUS_MPI_INTERCEPT).
enum class InterceptPolicy { Faster, All, Device, None };

// The one-sided steps' access to peers' memory (CHORUS_ONE_SIDED): `auto`
// cross-memory attach when every rank is on one host, UCX RMA with
// registration keys otherwise; `keys` UCX RMA even on one host; `off` none
// (no one-sided algorithms).
enum class OneSidedAccess { Auto, Keys, Off };

// Which blocking calls first agree whether every rank's buffers lie in
// mapped memory (chorus_mem_alloc), so that the choice of algorithm may
// count on single-copy access (CHORUS_MAPPED): `auto` on communicators with
// a registered window (chorus_comm_register), `always` on every one (the
// MPI interposer's default: MPI_Alloc_mem gives mapped memory), `off` none.
// Only calls of at least CHORUS_MAPPED_MIN bytes agree.
enum class MappedCalls { Auto, Always, Off };

struct Config {
    LogLevel log_level = LogLevel::Warn;      // CHORUS_LOG
    size_t chunk_bytes = 256 * 1024;          // CHORUS_CHUNK_BYTES: pipeline chunk
    int window = 16;                          // CHORUS_WINDOW: transfers in flight per operation
    uint64_t timeout_ms = 0;                  // CHORUS_TIMEOUT_MS: 0 = never time out
    uint64_t hang_warn_s = 60;                // CHORUS_HANG_WARN_S: warn once after this long idle; 0 = never
    std::map<std::string, std::string> algo;  // CHORUS_ALGO: collective -> algorithm name
    int spin_before_yield = -1;               // CHORUS_SPIN: idle polls before yielding; -1 = auto
    bool peer_errors = false;                 // CHORUS_PEER_ERRORS: UCX's own peer failure detection
    bool check = false;                       // CHORUS_CHECK: compare arguments across ranks first
    size_t shm_eager_bytes = 8192;            // CHORUS_SHM_EAGER: largest message through Chorus's shared memory
    bool shm_rendezvous = true;               // CHORUS_SHM_RENDEZVOUS: larger ones on a host by Chorus's rendezvous
    OneSidedAccess one_sided = OneSidedAccess::Auto;  // CHORUS_ONE_SIDED
    MappedCalls mapped = MappedCalls::Auto;           // CHORUS_MAPPED
    size_t mapped_min_bytes = 64 * 1024;              // CHORUS_MAPPED_MIN
    bool always_stage = false;  // CHORUS_STAGING=always: stage device buffers even if UCX has CUDA
    InterceptPolicy intercept = InterceptPolicy::Faster;  // CHORUS_MPI_INTERCEPT
    bool mpi_stage_all = false;                           // CHORUS_MPI_STAGING=all: host buffers copied too
    coll::CostParams cost;                                // CHORUS_COST_*
    // CHORUS_COST_FILE: this host's cost file ("": the usual place, "none":
    // none; core/machine_costs.h).
    std::string cost_file;
    std::string trace_dir;  // CHORUS_TRACE: write traces there ("": none)
    size_t record = 64;     // CHORUS_RECORD: operations the flight recorder keeps
    // CHORUS_INJECT_FAILURE (tests): "create" fails this rank's creation,
    // "start:N" the start of its operation number N.
    std::string inject;

    // Parse from the process environment. Throws Error(CHORUS_ERR_CONFIG).
    static Config from_env();
    // Parse from an explicit list of NAME=VALUE strings (used by tests).
    static Config from_strings(const std::vector<std::string>& env);

    // Forced algorithm for a collective, or "" for automatic selection.
    std::string forced_algo(const std::string& collective) const;
    // One line with every setting, for CHORUS_LOG=debug.
    std::string describe() const;
    // The settings that change the protocol, one NAME=value per line.
    std::string protocol_settings() const;
    // Names of CHORUS_* variables seen in the environment but not known.
    std::vector<std::string> unknown;
    // Names of the known settings the environment gave.
    std::set<std::string> given;
};

// One known setting.
struct Setting {
    const char* name;
    // Changes the protocol (what ranks send, in which pieces, with which
    // algorithm): must be the same on every rank.
    bool protocol;
    void (*parse)(Config& c, const std::string& name, const std::string& value);
    std::string (*show)(const Config& c);
};
const std::vector<Setting>& settings();
// The setting called `name`, or null.
const Setting* find_setting(const std::string& name);
// How the environment sets `s` (its default when unset), as it prints.
// Throws Error(CHORUS_ERR_CONFIG) for a bad value.
std::string setting_from_env(const Setting& s);

// Valid algorithm names per collective, for CHORUS_ALGO validation.
const std::map<std::string, std::vector<std::string>>& known_algorithms();

// "64K", "1M", "2G", "4096" -> bytes. Throws on malformed input.
size_t parse_bytes(const std::string& text, const std::string& variable);

}  // namespace chorus
