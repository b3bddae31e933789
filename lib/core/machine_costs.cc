#include "core/machine_costs.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "core/config.h"

namespace chorus {

namespace {

using P = coll::CostParams;

const std::vector<MachineConstant> kConstants = {
    {"alpha_us", &P::alpha_us, "CHORUS_COST_ALPHA_US"},
    {"local_alpha_us", &P::local_alpha_us, "CHORUS_COST_LOCAL_ALPHA_US"},
    {"slot_us", &P::slot_us, "CHORUS_COST_SLOT_US"},
    {"bandwidth_gbs", &P::bandwidth_gbs, "CHORUS_COST_LINK_GBS"},
    {"cache_mib", &P::cache_mib, "CHORUS_COST_CACHE_MIB"},
    {"memory_gbs", &P::memory_gbs, "CHORUS_COST_MEMORY_GBS"},
    {"copy_gbs", &P::copy_gbs, "CHORUS_COST_COPY_GBS"},
    {"stream_gbs", &P::stream_gbs, "CHORUS_COST_STREAM_GBS"},
    {"reduce_gbs", &P::reduce_gbs, "CHORUS_COST_REDUCE_GBS"},
    {"get_gbs", &P::get_gbs, "CHORUS_COST_GET_GBS"},
    {"get_us", &P::get_us, "CHORUS_COST_GET_US"},
    {"get_reduce_gbs", &P::get_reduce_gbs, "CHORUS_COST_GET_REDUCE_GBS"},
    {"net_alpha_us", &P::net_alpha_us, "CHORUS_COST_NET_ALPHA_US"},
    {"net_gbs", &P::net_gbs, "CHORUS_COST_NET_GBS"},
};

const MachineConstant* find_constant(const std::string& key) {
    for (const auto& k : kConstants)
        if (key == k.key) return &k;
    return nullptr;
}

std::string trim(const std::string& s) {
    const size_t b = s.find_first_not_of(" \t\r"), e = s.find_last_not_of(" \t\r");
    return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

// A whole string as a finite positive number.
bool positive(const std::string& text, double* v) {
    char* end = nullptr;
    errno = 0;
    *v = std::strtod(text.c_str(), &end);
    return !text.empty() && *end == '\0' && errno == 0 && std::isfinite(*v) && *v > 0;
}

std::string read_line(const std::string& path) {
    std::ifstream in(path);
    std::string line;
    std::getline(in, line);
    return trim(line);
}

// "32768K", "8M", "512" (bytes) -> bytes; 0 when it is none of them.
size_t sysfs_size(const std::string& text) {
    if (text.empty()) return 0;
    char* end = nullptr;
    const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
    if (end == text.c_str()) return 0;
    const std::string unit = end;
    if (unit.empty()) return v;
    if (unit == "K") return v << 10;
    if (unit == "M") return v << 20;
    if (unit == "G") return v << 30;
    return 0;
}

// The shortest text that reads back as `v` exactly.
std::string show(double v) {
    char buf[64];
    for (int digits = 15; digits <= 17; ++digits) {
        std::snprintf(buf, sizeof buf, "%.*g", digits, v);
        if (std::strtod(buf, nullptr) == v) break;
    }
    return buf;
}

}  // namespace

const std::vector<MachineConstant>& machine_constants() {
    return kConstants;
}

size_t largest_cache_bytes(const std::string& dir) {
    DIR* d = opendir(dir.c_str());
    if (!d) return 0;
    size_t best = 0;
    int best_level = 0;
    while (dirent* e = readdir(d)) {
        if (std::strncmp(e->d_name, "index", 5) != 0) continue;
        const std::string base = dir + "/" + e->d_name + "/";
        const std::string type = read_line(base + "type");
        if (type != "Data" && type != "Unified") continue;
        const int level = std::atoi(read_line(base + "level").c_str());
        const size_t bytes = sysfs_size(read_line(base + "size"));
        // The last level; of two at one level, the larger.
        if (bytes > 0 && (level > best_level || (level == best_level && bytes > best))) {
            best = bytes;
            best_level = level;
        }
    }
    closedir(d);
    return best;
}

size_t host_cache_bytes() {
    size_t bytes = largest_cache_bytes("/sys/devices/system/cpu/cpu0/cache");
#ifdef _SC_LEVEL3_CACHE_SIZE
    if (bytes == 0) {
        const long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
        if (l3 > 0) bytes = static_cast<size_t>(l3);
    }
#endif
    return bytes;
}

double cache_mib_of(size_t bytes) {
    return bytes == 0 ? coll::CostParams{}.cache_mib : static_cast<double>(bytes) / (1 << 20);
}

std::string host_name() {
    char name[256] = {};
    if (gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "localhost";
    return name;
}

std::string cost_file_path(const std::string& setting) {
    if (setting == "none") return "";
    if (!setting.empty()) return setting;
    const std::string file = "chorus/cost-" + host_name() + ".conf";
    const char* xdg = std::getenv("XDG_CACHE_HOME");
    if (xdg && xdg[0] == '/') return cat(xdg, "/", file);
    const char* home = std::getenv("HOME");
    if (home && home[0]) return cat(home, "/.cache/", file);
    return "";
}

CostFile read_cost_file(const std::string& path) {
    CostFile f;
    f.path = path;
    if (path.empty()) return f;
    std::ifstream in(path);
    if (!in) {
        const bool missing = errno == ENOENT;
        f.state = missing ? CostFile::State::Missing : CostFile::State::Unreadable;
        if (!missing) f.problem = std::strerror(errno);
        return f;
    }
    auto corrupt = [&](int n, const std::string& why) {
        f.state = CostFile::State::Corrupt;
        f.problem = cat("line ", n, ": ", why);
        f.values.clear();
        return f;
    };
    std::string line, format;
    for (int n = 1; std::getline(in, line); ++n) {
        line = trim(line);
        if (line.empty() || line[0] == '#') continue;
        const size_t eq = line.find('=');
        if (eq == std::string::npos) return corrupt(n, "not of the form key = value");
        const std::string key = trim(line.substr(0, eq)), value = trim(line.substr(eq + 1));
        double v = 0;
        if (key == "format")
            format = value;
        else if (key == "host")
            f.host = value;
        else if (!find_constant(key))
            return corrupt(n, cat("unknown key '", key, "'"));
        else if (!positive(value, &v))
            return corrupt(n, cat(key, " = '", value, "': expected a positive number"));
        else
            f.values[key] = v;
    }
    if (in.bad()) {
        f.state = CostFile::State::Unreadable;
        f.problem = "read error";
        f.values.clear();
        return f;
    }
    if (format.empty()) return corrupt(0, "no format line");
    if (format != std::to_string(kCostFileFormat)) {
        f.state = CostFile::State::Stale;
        f.problem = cat("format ", format, ", this library reads format ", kCostFileFormat);
        f.values.clear();
        return f;
    }
    f.state = CostFile::State::Loaded;
    return f;
}

std::string cost_file_text(const std::map<std::string, double>& values, const std::string& host,
                           const std::vector<std::string>& comment) {
    std::string out;
    for (const auto& c : comment) out += "# " + c + "\n";
    out += cat("format = ", kCostFileFormat, "\nhost = ", host, "\n");
    for (const auto& k : kConstants) {
        auto it = values.find(k.key);
        if (it != values.end()) out += cat(k.key, " = ", show(it->second), "\n");
    }
    return out;
}

void write_cost_file(const std::string& path, const std::string& text) {
    if (path.empty()) fail(CHORUS_ERR_INVALID_ARGUMENT, "no place for the cost file (set CHORUS_COST_FILE or HOME)");
    for (size_t slash = path.find('/', 1); slash != std::string::npos; slash = path.find('/', slash + 1))
        if (mkdir(path.substr(0, slash).c_str(), 0755) != 0 && errno != EEXIST)
            fail(CHORUS_ERR_INVALID_ARGUMENT, "cannot make ", path.substr(0, slash), ": ", std::strerror(errno));
    const std::string tmp = cat(path, ".", getpid(), ".tmp");
    {
        std::ofstream out(tmp, std::ios::trunc);
        out << text;
        out.flush();
        if (!out) fail(CHORUS_ERR_INVALID_ARGUMENT, "cannot write ", tmp);
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
        const int err = errno;
        std::remove(tmp.c_str());
        fail(CHORUS_ERR_INVALID_ARGUMENT, "cannot write ", path, ": ", std::strerror(err));
    }
}

MachineCosts machine_costs(const Config& config, const CostFile& file, size_t cache_bytes) {
    MachineCosts m;
    m.cost = config.cost;
    const bool loaded = file.state == CostFile::State::Loaded;
    for (const auto& k : kConstants) {
        std::string& source = m.source[k.key];
        if (config.given.count(k.setting)) {
            source = "setting";
            continue;
        }
        auto it = file.values.find(k.key);
        if (loaded && it != file.values.end()) {
            m.cost.*k.member = it->second;
            source = "file";
        } else if (k.member == &P::cache_mib && cache_bytes > 0) {
            m.cost.cache_mib = cache_mib_of(cache_bytes);
            source = "OS";
        } else {
            source = "default";
        }
    }
    using S = CostFile::State;
    switch (file.state) {
        case S::Ignored: m.note = "cost file: none (CHORUS_COST_FILE=none or no home folder)"; break;
        case S::Missing:
            m.level = LogLevel::Info;
            m.note = cat("cost file ", file.path, ": none (chorus-tune writes it); built-in defaults");
            break;
        case S::Unreadable:
        case S::Stale:
            m.level = LogLevel::Info;
            m.note = cat("cost file ", file.path, " ignored (", file.problem, "); built-in defaults");
            break;
        case S::Corrupt:
            m.level = LogLevel::Warn;
            m.note = cat("cost file ", file.path, " ignored: ", file.problem, "; built-in defaults");
            break;
        case S::Loaded:
            m.level = file.host.empty() || file.host == host_name() ? LogLevel::Debug : LogLevel::Info;
            m.note = cat("cost file ", file.path, " loaded (", file.values.size(), " constants, measured on ",
                         file.host.empty() ? "an unnamed host" : file.host, ")");
            break;
    }
    return m;
}

std::string machine_line(const coll::CostParams& cost) {
    std::string out;
    for (const auto& k : kConstants) out += cat(out.empty() ? "" : " ", k.key, "=", show(cost.*k.member));
    return out;
}

void apply_machine_line(coll::CostParams& cost, const std::string& line) {
    std::istringstream in(line);
    std::string item;
    while (in >> item) {
        const size_t eq = item.find('=');
        const MachineConstant* k = eq == std::string::npos ? nullptr : find_constant(item.substr(0, eq));
        double v = 0;
        if (!k || !positive(item.substr(eq + 1), &v))
            fail(CHORUS_ERR_INTERNAL, "cost constants exchanged at creation: cannot read '", item, "'");
        cost.*k->member = v;
    }
}

}  // namespace chorus
