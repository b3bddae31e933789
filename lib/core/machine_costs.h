// Where the cost model's machine constants come from. In order of
// precedence: a CHORUS_COST_* setting; this host's cost file, written by
// chorus-tune (perf/chorus_tune.cc) after measuring the host; the built-in
// defaults of coll::CostParams, with the cache size the OS reports
// (cache_mib: the largest data or unified cache, in MiB) when no file gives
// one. A missing, stale or corrupt file is never an error: the defaults
// stand, and the note says why. Every rank of a communicator then adopts
// rank 0's constants (Communicator::create), so the protocol, which the cost
// model chooses, is the same on every rank.
//
// The file: plain text, one `key = value` a line, `#` comments; a
// `format = 1` line (another number: stale, ignored) and `host = NAME`;
// every other key one of machine_constants()'s, its value a positive number.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "base/log.h"
#include "coll/planner/cost_model.h"

namespace chorus {

struct Config;

// The format of the cost file this library reads and chorus-tune writes.
constexpr int kCostFileFormat = 1;

// One constant a cost file may give: its key there, the member of
// CostParams, and the setting that overrides it.
struct MachineConstant {
    const char* key;
    double coll::CostParams::*member;
    const char* setting;
};
const std::vector<MachineConstant>& machine_constants();

// Bytes of the largest data or unified cache described under `dir` (as
// sysfs describes a CPU's: index*/level, type, size such as "32768K");
// 0 when none is readable.
size_t largest_cache_bytes(const std::string& dir);
// This host's: cpu0's in sysfs, else sysconf(_SC_LEVEL3_CACHE_SIZE), else 0.
size_t host_cache_bytes();
// cache_mib for a cache of `bytes` (the default's when 0).
double cache_mib_of(size_t bytes);

std::string host_name();

// Where this host's cost file is: CHORUS_COST_FILE (Config::cost_file),
// else $XDG_CACHE_HOME/chorus/cost-HOST.conf, else
// $HOME/.cache/chorus/cost-HOST.conf. "" when files are ignored
// (CHORUS_COST_FILE=none) or there is no such place.
std::string cost_file_path(const std::string& setting);

struct CostFile {
    enum class State { Ignored, Missing, Unreadable, Stale, Corrupt, Loaded };
    State state = State::Ignored;
    std::string path;
    std::string host;     // as the file says
    std::string problem;  // what is wrong with it (Stale, Corrupt, Unreadable)
    std::map<std::string, double> values;
};
CostFile read_cost_file(const std::string& path);
// The file's text: the format line, the host, the values, with `comment`
// lines (each prefixed with "# ") first.
std::string cost_file_text(const std::map<std::string, double>& values, const std::string& host,
                           const std::vector<std::string>& comment);
// Writes `text` to `path` (its folders made, replaced whole: a reader never
// sees half a file). Throws Error(CHORUS_ERR_INVALID_ARGUMENT) on failure.
void write_cost_file(const std::string& path, const std::string& text);

// The constants a rank would use: `config.cost` (defaults and settings)
// with every constant no setting gave taken from `file`, and cache_mib,
// where neither gives it, from `cache_bytes` (0: the default).
struct MachineCosts {
    coll::CostParams cost;
    std::map<std::string, std::string> source;  // key -> "setting", "file", "OS" or "default"
    LogLevel level = LogLevel::Debug;           // of the note
    std::string note;                           // one line on the file, if any
};
MachineCosts machine_costs(const Config& config, const CostFile& file, size_t cache_bytes);

// The constants as one line ("key=value ..." exactly, for the exchange at
// creation), and back into `cost`. A line that does not parse throws.
std::string machine_line(const coll::CostParams& cost);
void apply_machine_line(coll::CostParams& cost, const std::string& line);

}  // namespace chorus
