#include "config.h"

#include "coll/algorithm.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>

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

double parse_positive(const std::string& text, const std::string& variable) {
    return parse_number(text, variable, false);
}

double parse_nonnegative(const std::string& text, const std::string& variable) {
    return parse_number(text, variable, true);
}

uint64_t parse_uint(const std::string& text, const std::string& variable, uint64_t min,
                    uint64_t max) {
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
            fail(CHORUS_ERR_CONFIG, "CHORUS_ALGO: unknown algorithm '", name, "' for ", coll,
                 " (valid: auto, ", join(it->second), ")");
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
            case 'k': case 'K': scale = 1ull << 10; break;
            case 'm': case 'M': scale = 1ull << 20; break;
            case 'g': case 'G': scale = 1ull << 30; break;
            default: break;
        }
        if (scale != 1) digits.pop_back();
    }
    uint64_t v = parse_uint(digits, variable, 0, (1ull << 62) / scale);
    return static_cast<size_t>(v * scale);
}

Config Config::from_strings(const std::vector<std::string>& env) {
    Config c;
    for (const auto& entry : env) {
        size_t eq = entry.find('=');
        if (eq == std::string::npos || entry.compare(0, 7, "CHORUS_") != 0) continue;
        std::string name = entry.substr(0, eq), value = entry.substr(eq + 1);
        if (name == "CHORUS_LOG") {
            c.log_level = parse_level(value);
        } else if (name == "CHORUS_CHUNK_BYTES") {
            c.chunk_bytes = parse_bytes(value, name);
            if (c.chunk_bytes < 64 || c.chunk_bytes > (1ull << 30))
                fail(CHORUS_ERR_CONFIG, name, "='", value, "': must be between 64 and 1G bytes");
        } else if (name == "CHORUS_WINDOW") {
            c.window = static_cast<int>(parse_uint(value, name, 1, 4096));
        } else if (name == "CHORUS_TIMEOUT_MS") {
            c.timeout_ms = parse_uint(value, name, 0, 1ull << 40);
        } else if (name == "CHORUS_ALGO") {
            c.algo = parse_algo(value);
        } else if (name == "CHORUS_COST_ALPHA_US") {
            c.cost.alpha_us = parse_positive(value, name);
        } else if (name == "CHORUS_COST_RNDV_US") {
            c.cost.rendezvous_us = parse_nonnegative(value, name);
        } else if (name == "CHORUS_COST_LINK_GBS") {
            c.cost.bandwidth_gbs = parse_positive(value, name);
        } else if (name == "CHORUS_COST_REDUCE_GBS") {
            c.cost.reduce_gbs = parse_positive(value, name);
        } else if (name == "CHORUS_COST_MAX_STEPS") {
            c.cost.max_simulated_steps = parse_uint(value, name, 1, 1ull << 34);
        } else if (name == "CHORUS_COST_COPY_GBS") {
            c.cost.copy_gbs = parse_positive(value, name);
        } else if (name == "CHORUS_CHECK" || name == "CHORUS_PEER_ERRORS") {
            if (value != "0" && value != "1") fail(CHORUS_ERR_CONFIG, name, "='", value, "': expected 0 or 1");
            (name == "CHORUS_CHECK" ? c.check : c.peer_errors) = value == "1";
        } else if (name == "CHORUS_SHM_EAGER") {
            c.shm_eager_bytes = parse_bytes(value, name);
            if (c.shm_eager_bytes > 256 * 1024)
                fail(CHORUS_ERR_CONFIG, name, "='", value, "': at most 256K bytes (0 turns it off)");
        } else if (name == "CHORUS_STAGING") {
            if (value != "auto" && value != "always")
                fail(CHORUS_ERR_CONFIG, name, "='", value, "': expected auto or always");
            c.always_stage = value == "always";
        } else if (name == "CHORUS_SPIN") {
            c.spin_before_yield = value == "auto" ? -1 : static_cast<int>(parse_uint(value, name, 0, 1u << 30));
        } else if (name.compare(0, 11, "CHORUS_MPI_") != 0 && name.compare(0, 13, "CHORUS_BENCH_") != 0) {
            // The interposer's and the benchmark's variables are theirs to check.
            c.unknown.push_back(name);
        }
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

std::string Config::describe() const {
    static const char* levels[] = {"error", "warn", "info", "debug"};
    std::string algos;
    for (const auto& kv : algo) algos += (algos.empty() ? "" : ",") + kv.first + "=" + kv.second;
    return cat("CHORUS_LOG=", levels[static_cast<int>(log_level)], " CHORUS_CHUNK_BYTES=", chunk_bytes,
               " CHORUS_WINDOW=", window, " CHORUS_TIMEOUT_MS=", timeout_ms,
               " CHORUS_ALGO=", algos.empty() ? "auto" : algos, " CHORUS_SPIN=", spin_before_yield,
               " CHORUS_CHECK=", check ? 1 : 0, " CHORUS_PEER_ERRORS=", peer_errors ? 1 : 0,
               " CHORUS_SHM_EAGER=", shm_eager_bytes, " CHORUS_STAGING=", always_stage ? "always" : "auto",
               " cost model: ", cost.describe());
}

}  // namespace chorus
