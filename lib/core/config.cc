#include "core/config.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "coll/algorithm.h"

extern char** environ;

namespace chorus {

namespace {

double parse_number(const std::string& text, const std::string& variable, bool zero_ok) {
    char* end = nullptr;
    errno = 0;
    double v = std::strtod(text.c_str(), &end);
    if (text.empty() || *end != '\0' || errno == ERANGE || !(zero_ok ? v >= 0 : v > 0) || v > 1e12)
        fail(CHORUS_ERR_CONFIG, variable, "='", text, "': expected a ", zero_ok ? "non-negative" : "positive",
             " number");
    return v;
}

uint64_t parse_uint(const std::string& text, const std::string& variable, uint64_t min, uint64_t max) {
    if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos)
        fail(CHORUS_ERR_CONFIG, variable, "='", text, "': expected a non-negative integer");
    errno = 0;
    unsigned long long v = std::strtoull(text.c_str(), nullptr, 10);
    if (errno == ERANGE || v < min || v > max)
        fail(CHORUS_ERR_CONFIG, variable, "='", text, "': must be between ", min, " and ", max);
    return v;
}

LogLevel parse_level(const std::string& text) {
    if (text == "error") return LogLevel::Error;
    if (text == "warn") return LogLevel::Warn;
    if (text == "info") return LogLevel::Info;
    if (text == "debug") return LogLevel::Debug;
    fail(CHORUS_ERR_CONFIG, "CHORUS_LOG='", text, "': expected one of error, warn, info, debug");
}

std::string join(const std::vector<std::string>& names) {
    std::string out;
    for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
    return out;
}

// "allreduce=ring,bcast=binomial"
std::map<std::string, std::string> parse_algo(const std::string& text) {
    std::map<std::string, std::string> out;
    size_t pos = 0;
    while (pos <= text.size()) {
        size_t end = text.find(',', pos);
        if (end == std::string::npos) end = text.size();
        std::string item = text.substr(pos, end - pos);
        pos = end + 1;
        if (item.empty()) continue;
        size_t eq = item.find('=');
        if (eq == std::string::npos)
            fail(CHORUS_ERR_CONFIG, "CHORUS_ALGO: '", item, "' is not of the form collective=algorithm");
        std::string coll = item.substr(0, eq), name = item.substr(eq + 1);
        auto it = known_algorithms().find(coll);
        if (it == known_algorithms().end()) {
            std::vector<std::string> colls;
            for (const auto& kv : known_algorithms()) colls.push_back(kv.first);
            fail(CHORUS_ERR_CONFIG, "CHORUS_ALGO: unknown collective '", coll, "' (valid: ", join(colls), ")");
        }
        bool ok = name == "auto";
        for (const auto& n : it->second) ok = ok || n == name;
        if (!ok)
            fail(CHORUS_ERR_CONFIG, "CHORUS_ALGO: unknown algorithm '", name, "' for ", coll, " (valid: auto, ",
                 join(it->second), ")");
        if (name != "auto") out[coll] = name;
    }
    return out;
}

}  // namespace

const std::map<std::string, std::vector<std::string>>& known_algorithms() {
    static const std::map<std::string, std::vector<std::string>> algos = [] {
        std::map<std::string, std::vector<std::string>> m;
        for (int c = 0; c < coll::kNumCollectives; ++c) {
            auto coll = static_cast<coll::Collective>(c);
            for (const auto& a : coll::algorithms_for(coll)) m[coll::collective_name(coll)].push_back(a.name);
        }
        return m;
    }();
    return algos;
}

size_t parse_bytes(const std::string& text, const std::string& variable) {
    std::string digits = text;
    uint64_t scale = 1;
    if (!digits.empty()) {
        switch (digits.back()) {
            case 'k':
            case 'K': scale = 1ull << 10; break;
            case 'm':
            case 'M': scale = 1ull << 20; break;
            case 'g':
            case 'G': scale = 1ull << 30; break;
            default: break;
        }
        if (scale != 1) digits.pop_back();
    }
    uint64_t v = parse_uint(digits, variable, 0, (1ull << 62) / scale);
    return static_cast<size_t>(v * scale);
}

namespace {

const char* level_name(LogLevel l) {
    static const char* names[] = {"error", "warn", "info", "debug"};
    return names[static_cast<int>(l)];
}

bool parse_flag(const std::string& name, const std::string& value) {
    if (value != "0" && value != "1") fail(CHORUS_ERR_CONFIG, name, "='", value, "': expected 0 or 1");
    return value == "1";
}

std::string show_bytes(size_t b) {
    return std::to_string(b);
}

// Settings with named values, in the order of their enums.
constexpr const char* kOneSidedNames[] = {"auto", "keys", "off"};
constexpr const char* kMappedNames[] = {"auto", "always", "off"};
constexpr const char* kInterceptNames[] = {"faster", "all", "device", "none"};

// The enum value `value` names (its index in `names`), or a configuration
// error that lists them.
template <typename E, size_t N>
E parse_named(const std::string& name, const std::string& value, const char* const (&names)[N]) {
    for (size_t i = 0; i < N; ++i)
        if (value == names[i]) return static_cast<E>(i);
    std::string expected;
    for (size_t i = 0; i < N; ++i) expected += cat(i == 0 ? "" : i + 1 == N ? " or " : ", ", names[i]);
    fail(CHORUS_ERR_CONFIG, name, "='", value, "': expected ", expected);
}

// The cost model's numbers: positive (or, with ZeroOk, non-negative).
template <double coll::CostParams::*M, bool ZeroOk>
void parse_cost(Config& c, const std::string& name, const std::string& value) {
    c.cost.*M = parse_number(value, name, ZeroOk);
}
template <double coll::CostParams::*M>
std::string show_cost(const Config& c) {
    return cat(c.cost.*M);
}

// One row per variable: name, protocol?, parse, show.
const std::vector<Setting> kSettings = {
    {"CHORUS_LOG", false, [](Config& c, const std::string&, const std::string& v) { c.log_level = parse_level(v); },
     [](const Config& c) -> std::string { return level_name(c.log_level); }},
    {"CHORUS_CHUNK_BYTES", true,
     [](Config& c, const std::string& n, const std::string& v) {
         c.chunk_bytes = parse_bytes(v, n);
         if (c.chunk_bytes < 64 || c.chunk_bytes > (1ull << 30))
             fail(CHORUS_ERR_CONFIG, n, "='", v, "': must be between 64 and 1G bytes");
     },
     [](const Config& c) { return show_bytes(c.chunk_bytes); }},
    {"CHORUS_WINDOW", true,
     [](Config& c, const std::string& n, const std::string& v) {
         c.window = static_cast<int>(parse_uint(v, n, 1, 4096));
     },
     [](const Config& c) { return std::to_string(c.window); }},
    {"CHORUS_TIMEOUT_MS", false,
     [](Config& c, const std::string& n, const std::string& v) { c.timeout_ms = parse_uint(v, n, 0, 1ull << 40); },
     [](const Config& c) { return std::to_string(c.timeout_ms); }},
    {"CHORUS_HANG_WARN_S", false,
     [](Config& c, const std::string& n, const std::string& v) { c.hang_warn_s = parse_uint(v, n, 0, 1ull << 30); },
     [](const Config& c) { return std::to_string(c.hang_warn_s); }},
    {"CHORUS_TRACE", false, [](Config& c, const std::string&, const std::string& v) { c.trace_dir = v; },
     [](const Config& c) { return c.trace_dir.empty() ? std::string("none") : c.trace_dir; }},
    {"CHORUS_RECORD", false,
     [](Config& c, const std::string& n, const std::string& v) { c.record = parse_uint(v, n, 0, 1u << 20); },
     [](const Config& c) { return std::to_string(c.record); }},
    {"CHORUS_INJECT_FAILURE", false,
     [](Config& c, const std::string& n, const std::string& v) {
         if (!v.empty() && v != "create" &&
             (v.compare(0, 6, "start:") != 0 || v.size() == 6 ||
              v.find_first_not_of("0123456789", 6) != std::string::npos))
             fail(CHORUS_ERR_CONFIG, n, "='", v, "': expected create or start:N");
         c.inject = v;
     },
     [](const Config& c) { return c.inject.empty() ? std::string("none") : c.inject; }},
    {"CHORUS_ALGO", true, [](Config& c, const std::string&, const std::string& v) { c.algo = parse_algo(v); },
     [](const Config& c) -> std::string {
         std::string out;
         for (const auto& kv : c.algo) out += (out.empty() ? "" : ",") + kv.first + "=" + kv.second;
         return out.empty() ? "auto" : out;
     }},
    {"CHORUS_SPIN", false,
     [](Config& c, const std::string& n, const std::string& v) {
         c.spin_before_yield = v == "auto" ? -1 : static_cast<int>(parse_uint(v, n, 0, 1u << 30));
     },
     [](const Config& c) {
         return c.spin_before_yield < 0 ? std::string("auto") : std::to_string(c.spin_before_yield);
     }},
    {"CHORUS_CHECK", true, [](Config& c, const std::string& n, const std::string& v) { c.check = parse_flag(n, v); },
     [](const Config& c) { return std::string(c.check ? "1" : "0"); }},
    {"CHORUS_PEER_ERRORS", true,
     [](Config& c, const std::string& n, const std::string& v) { c.peer_errors = parse_flag(n, v); },
     [](const Config& c) { return std::string(c.peer_errors ? "1" : "0"); }},
    {"CHORUS_SHM_EAGER", true,
     [](Config& c, const std::string& n, const std::string& v) {
         c.shm_eager_bytes = parse_bytes(v, n);
         if (c.shm_eager_bytes > 256 * 1024)
             fail(CHORUS_ERR_CONFIG, n, "='", v, "': at most 256K bytes (0 turns it off)");
     },
     [](const Config& c) { return show_bytes(c.shm_eager_bytes); }},
    {"CHORUS_SHM_RENDEZVOUS", true,
     [](Config& c, const std::string& n, const std::string& v) { c.shm_rendezvous = parse_flag(n, v); },
     [](const Config& c) { return std::string(c.shm_rendezvous ? "1" : "0"); }},
    {"CHORUS_ONE_SIDED", true,
     [](Config& c, const std::string& n, const std::string& v) {
         c.one_sided = parse_named<OneSidedAccess>(n, v, kOneSidedNames);
     },
     [](const Config& c) { return std::string(kOneSidedNames[static_cast<int>(c.one_sided)]); }},
    {"CHORUS_MAPPED", true,
     [](Config& c, const std::string& n, const std::string& v) {
         c.mapped = parse_named<MappedCalls>(n, v, kMappedNames);
     },
     [](const Config& c) { return std::string(kMappedNames[static_cast<int>(c.mapped)]); }},
    {"CHORUS_MAPPED_MIN", true,
     [](Config& c, const std::string& n, const std::string& v) { c.mapped_min_bytes = parse_bytes(v, n); },
     [](const Config& c) { return show_bytes(c.mapped_min_bytes); }},
    {"CHORUS_STAGING", false,
     [](Config& c, const std::string& n, const std::string& v) {
         if (v != "auto" && v != "always") fail(CHORUS_ERR_CONFIG, n, "='", v, "': expected auto or always");
         c.always_stage = v == "always";
     },
     [](const Config& c) { return std::string(c.always_stage ? "always" : "auto"); }},
    {"CHORUS_MPI_INTERCEPT", true,
     [](Config& c, const std::string& n, const std::string& v) {
         c.intercept = v.empty() ? InterceptPolicy::Faster : parse_named<InterceptPolicy>(n, v, kInterceptNames);
     },
     [](const Config& c) { return std::string(kInterceptNames[static_cast<int>(c.intercept)]); }},
    // Which buffers of the calls libchorus_mpi.so hands to MPI go through
    // host copies: device and managed ones (device), or every one (all: the
    // staging path checked without a GPU).
    {"CHORUS_MPI_STAGING", false,
     [](Config& c, const std::string& n, const std::string& v) {
         if (!v.empty() && v != "device" && v != "all")
             fail(CHORUS_ERR_CONFIG, n, "='", v, "': expected device or all");
         c.mpi_stage_all = v == "all";
     },
     [](const Config& c) { return std::string(c.mpi_stage_all ? "all" : "device"); }},
    // The cost model's two link classes: within a host (ALPHA, RNDV, LINK),
    // and between hosts (NET_ALPHA, NET_GBS: a host's link, shared by its
    // ranks; defaults measured on tools/vcluster.sh's TCP links).
    {"CHORUS_COST_ALPHA_US", true, parse_cost<&coll::CostParams::alpha_us, false>,
     show_cost<&coll::CostParams::alpha_us>},
    {"CHORUS_COST_RNDV_US", true, parse_cost<&coll::CostParams::rendezvous_us, true>,
     show_cost<&coll::CostParams::rendezvous_us>},
    {"CHORUS_COST_OVERHEAD_US", true, parse_cost<&coll::CostParams::overhead_us, true>,
     show_cost<&coll::CostParams::overhead_us>},
    {"CHORUS_COST_LINK_GBS", true, parse_cost<&coll::CostParams::bandwidth_gbs, false>,
     show_cost<&coll::CostParams::bandwidth_gbs>},
    {"CHORUS_COST_NET_ALPHA_US", true, parse_cost<&coll::CostParams::net_alpha_us, false>,
     show_cost<&coll::CostParams::net_alpha_us>},
    {"CHORUS_COST_NET_GBS", true, parse_cost<&coll::CostParams::net_gbs, false>, show_cost<&coll::CostParams::net_gbs>},
    {"CHORUS_COST_NET_RMA_GBS", true, parse_cost<&coll::CostParams::net_rma_gbs, true>,
     show_cost<&coll::CostParams::net_rma_gbs>},
    {"CHORUS_COST_CACHE_MIB", true, parse_cost<&coll::CostParams::cache_mib, false>,
     show_cost<&coll::CostParams::cache_mib>},
    {"CHORUS_COST_MEMORY_GBS", true, parse_cost<&coll::CostParams::memory_gbs, false>,
     show_cost<&coll::CostParams::memory_gbs>},
    {"CHORUS_COST_REDUCE_GBS", true, parse_cost<&coll::CostParams::reduce_gbs, false>,
     show_cost<&coll::CostParams::reduce_gbs>},
    {"CHORUS_COST_COPY_GBS", true, parse_cost<&coll::CostParams::copy_gbs, false>,
     show_cost<&coll::CostParams::copy_gbs>},
    {"CHORUS_COST_STREAM_GBS", true, parse_cost<&coll::CostParams::stream_gbs, false>,
     show_cost<&coll::CostParams::stream_gbs>},
    // Single-copy steps and the slots on one host (measured by chorus-tune).
    {"CHORUS_COST_LOCAL_ALPHA_US", true, parse_cost<&coll::CostParams::local_alpha_us, false>,
     show_cost<&coll::CostParams::local_alpha_us>},
    {"CHORUS_COST_SLOT_US", true, parse_cost<&coll::CostParams::slot_us, false>, show_cost<&coll::CostParams::slot_us>},
    {"CHORUS_COST_GET_GBS", true, parse_cost<&coll::CostParams::get_gbs, false>, show_cost<&coll::CostParams::get_gbs>},
    {"CHORUS_COST_GET_US", true, parse_cost<&coll::CostParams::get_us, false>, show_cost<&coll::CostParams::get_us>},
    {"CHORUS_COST_GET_REDUCE_GBS", true, parse_cost<&coll::CostParams::get_reduce_gbs, false>,
     show_cost<&coll::CostParams::get_reduce_gbs>},
    // Per rank: which file gives this host's constants (every rank then
    // takes rank 0's values, so the files may differ).
    {"CHORUS_COST_FILE", false, [](Config& c, const std::string&, const std::string& v) { c.cost_file = v; },
     [](const Config& c) { return c.cost_file.empty() ? std::string("auto") : c.cost_file; }},
    {"CHORUS_COST_MAX_STEPS", true,
     [](Config& c, const std::string& n, const std::string& v) {
         c.cost.max_simulated_steps = parse_uint(v, n, 1, 1ull << 34);
     },
     [](const Config& c) { return std::to_string(c.cost.max_simulated_steps); }},
};

}  // namespace

const std::vector<Setting>& settings() {
    return kSettings;
}

const Setting* find_setting(const std::string& name) {
    for (const Setting& s : kSettings)
        if (name == s.name) return &s;
    return nullptr;
}

std::string setting_from_env(const Setting& s) {
    Config c;
    if (const char* v = std::getenv(s.name)) s.parse(c, s.name, v);
    return s.show(c);
}

Config Config::from_strings(const std::vector<std::string>& env) {
    Config c;
    for (const auto& entry : env) {
        size_t eq = entry.find('=');
        if (eq == std::string::npos || entry.compare(0, 7, "CHORUS_") != 0) continue;
        std::string name = entry.substr(0, eq), value = entry.substr(eq + 1);
        if (const Setting* s = find_setting(name)) {
            s->parse(c, name, value);
            c.given.insert(name);
        }
        // The benchmark's variables are its own to check.
        else if (name.compare(0, 13, "CHORUS_BENCH_") != 0)
            c.unknown.push_back(name);
    }
    return c;
}

Config Config::from_env() {
    std::vector<std::string> env;
    for (char** e = environ; e && *e; ++e)
        if (std::strncmp(*e, "CHORUS_", 7) == 0) env.emplace_back(*e);
    return from_strings(env);
}

std::string Config::forced_algo(const std::string& collective) const {
    auto it = algo.find(collective);
    return it == algo.end() ? std::string() : it->second;
}

std::string Config::protocol_settings() const {
    std::string out;
    for (const Setting& s : kSettings)
        if (s.protocol) out += cat(s.name, "=", s.show(*this), "\n");
    return out;
}

std::string Config::describe() const {
    std::string out;
    for (const Setting& s : kSettings) out += cat(out.empty() ? "" : " ", s.name, "=", s.show(*this));
    return out;
}

}  // namespace chorus
