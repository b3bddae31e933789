#include "bench_report.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <utility>

#include "chorus.h"

namespace bench {

namespace {

// OSU's layout: a 10-wide size column, then 18-wide value columns with two
// decimals, a 12-wide iteration count. The columns Chorus adds are 14 wide.
constexpr int kSizeWidth = 10;
constexpr int kFieldWidth = 18;
constexpr int kIterWidth = 12;
constexpr int kExtraWidth = 14;
constexpr int kPrecision = 2;

const char* verdict_text(Verdict v) {
    switch (v) {
        case Verdict::kPass: return "Pass";
        case Verdict::kFail: return "Fail";
        default: return "-";
    }
}

std::string json_string(const std::string& s) {
    std::string out = "\"";
    for (const char ch : s) {
        const unsigned char c = static_cast<unsigned char>(ch);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += ch;
        } else if (c < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            out += buf;
        } else {
            out += ch;
        }
    }
    return out + "\"";
}

std::string num(double v, const char* fmt) {
    char buf[64];
    std::snprintf(buf, sizeof buf, fmt, v);
    return buf;
}

}  // namespace

Report::~Report() {
    if (csv_) std::fclose(csv_);
}

bool Report::open(const std::string& csv_path, const std::string& json_path, std::string& error) {
    if (!csv_path.empty()) {
        csv_ = std::fopen(csv_path.c_str(), "w");
        if (!csv_) {
            error = "cannot write CSV file '" + csv_path + "': " + std::strerror(errno);
            return false;
        }
        std::fprintf(csv_,
                     "collective,ranks,bytes,datatype,chorus_avg_us,chorus_min_us,chorus_max_us,"
                     "algbw_gbs,busbw_gbs,mpi_avg_us,mpi_busbw_gbs,speedup,validation%s%s\n",
                     info_.nonblocking ? ",overall_us,compute_us,overlap_pct,mpi_overlap_pct" : "",
                     device()       ? ",d2d_copy_gbs"
                     : info_.mapped ? ",copy_gbs"
                                    : "");
        std::fflush(csv_);
    }
    if (!json_path.empty()) {
        FILE* f = std::fopen(json_path.c_str(), "w");
        if (!f) {
            error = "cannot write JSON file '" + json_path + "': " + std::strerror(errno);
            return false;
        }
        std::fclose(f);
        json_path_ = json_path;
    }
    return true;
}

void Report::print_header() {
    std::printf("# OSU MPI-Chorus %s%s Latency Test v%d.%d.%d\n", info_.nonblocking ? "Non-blocking " : "",
                info_.title.c_str(), CHORUS_VERSION_MAJOR, CHORUS_VERSION_MINOR, CHORUS_VERSION_PATCH);
    std::printf("# Datatype: %s.", info_.datatype.c_str());
    if (info_.uses_op) std::printf(" Op: %s.", info_.op.c_str());
    std::printf(" Ranks: %d.", info_.ranks);
    if (info_.root >= 0) std::printf(" Root: %d.", info_.root);
    std::printf(" Buffers: %s%s%s%s.\n", info_.device.c_str(), info_.mapped ? ", mapped (registered windows)" : "",
                info_.in_place ? ", in place" : "",
                info_.cold_cache ? ", cold cache (a ring of buffer sets, rewritten between calls)" : "");
    if (info_.mapped)
        std::printf(
            "# Copy: every rank copying the message size at once between its own buffers, bytes / time: a "
            "ceiling.\n");
    if (info_.nonblocking)
        std::printf(
            "# Avg Latency: start + wait. Overall: with a compute loop of that length between them.\n"
            "# Overlap = 100 (1 - (Overall - Compute) / Avg Latency), clamped to 0..100.\n");
    if (device()) {
        std::printf("# MPI: host-staged (copy to the host, MPI on host buffers, copy back), timed end to end.\n");
        std::printf("# D2D: a device-to-device copy of the message size, bytes / time: a ceiling.\n");
    }
    std::printf("%-*s", kSizeWidth, "# Size");
    std::printf("%*s", kFieldWidth, "Avg Latency(us)");
    if (info_.full) {
        std::printf("%*s", kFieldWidth, "Min Latency(us)");
        std::printf("%*s", kFieldWidth, "Max Latency(us)");
        std::printf("%*s", kIterWidth, "Iterations");
    }
    if (info_.validate) std::printf("%*s", kFieldWidth, "Validation");
    std::printf("%*s%*s", kExtraWidth, "algbw(GB/s)", kExtraWidth, "busbw(GB/s)");
    if (info_.compare_mpi) std::printf("%*s%*s", kExtraWidth, "MPI Avg(us)", kExtraWidth, "MPI/Chorus");
    if (info_.nonblocking) {
        std::printf("%*s%*s%*s", kExtraWidth, "Overall(us)", kExtraWidth, "Compute(us)", kExtraWidth, "Overlap(%)");
        if (info_.compare_mpi) std::printf("%*s", kExtraWidth + 2, "MPI Overlap(%)");
    }
    if (ceiling()) std::printf("%*s", kExtraWidth, device() ? "D2D(GB/s)" : "Copy(GB/s)");
    std::printf("\n");
    std::fflush(stdout);
}

void Report::add(const Row& r) {
    rows_.push_back(r);
    std::printf("%-*zu", kSizeWidth, r.bytes);
    std::printf("%*.*f", kFieldWidth, kPrecision, r.avg_us);
    if (info_.full) {
        std::printf("%*.*f", kFieldWidth, kPrecision, r.min_us);
        std::printf("%*.*f", kFieldWidth, kPrecision, r.max_us);
        std::printf("%*d", kIterWidth, r.iterations);
    }
    if (info_.validate) std::printf("%*s", kFieldWidth, verdict_text(r.verdict));
    std::printf("%*.*f%*.*f", kExtraWidth, kPrecision, r.algbw_gbs, kExtraWidth, kPrecision, r.busbw_gbs);
    if (info_.compare_mpi) {
        if (r.has_mpi)
            std::printf("%*.*f%*.*f", kExtraWidth, kPrecision, r.mpi_avg_us, kExtraWidth, kPrecision, r.speedup);
        else
            std::printf("%*s%*s", kExtraWidth, "-", kExtraWidth, "-");
    }
    if (info_.nonblocking) {
        std::printf("%*.*f%*.*f%*.*f", kExtraWidth, kPrecision, r.overall_us, kExtraWidth, kPrecision, r.compute_us,
                    kExtraWidth, kPrecision, r.overlap_pct);
        if (info_.compare_mpi) {
            if (r.has_mpi)
                std::printf("%*.*f", kExtraWidth + 2, kPrecision, r.mpi_overlap_pct);
            else
                std::printf("%*s", kExtraWidth + 2, "-");
        }
    }
    if (ceiling()) std::printf("%*.*f", kExtraWidth, kPrecision, r.copy_gbs);
    std::printf("\n");
    std::fflush(stdout);

    if (csv_) {
        std::fprintf(csv_, "%s,%d,%zu,%s,%.3f,%.3f,%.3f,%.4f,%.4f,", info_.collective.c_str(), info_.ranks, r.bytes,
                     info_.datatype.c_str(), r.avg_us, r.min_us, r.max_us, r.algbw_gbs, r.busbw_gbs);
        if (r.has_mpi)
            std::fprintf(csv_, "%.3f,%.4f,%.3f,", r.mpi_avg_us, r.mpi_busbw_gbs, r.speedup);
        else
            std::fprintf(csv_, ",,,");
        std::fprintf(csv_, "%s", verdict_text(r.verdict));
        if (info_.nonblocking) {
            std::fprintf(csv_, ",%.3f,%.3f,%.2f,", r.overall_us, r.compute_us, r.overlap_pct);
            if (r.has_mpi) std::fprintf(csv_, "%.2f", r.mpi_overlap_pct);
        }
        if (ceiling()) std::fprintf(csv_, ",%.4f", r.copy_gbs);
        std::fprintf(csv_, "\n");
        std::fflush(csv_);
    }
}

bool Report::finish(std::string& error) {
    if (csv_) {
        const bool ok = std::fclose(csv_) == 0;
        csv_ = nullptr;
        if (!ok) {
            error = std::string("cannot finish the CSV file: ") + std::strerror(errno);
            return false;
        }
    }
    if (json_path_.empty()) return true;
    std::string s = "{\n";
    s += "  \"collective\": " + json_string(info_.collective) + ",\n";
    s += "  \"ranks\": " + std::to_string(info_.ranks) + ",\n";
    s += "  \"datatype\": " + json_string(info_.datatype) + ",\n";
    s += "  \"op\": " + (info_.uses_op ? json_string(info_.op) : std::string("null")) + ",\n";
    s += "  \"root\": " + (info_.root >= 0 ? std::to_string(info_.root) : std::string("null")) + ",\n";
    s += "  \"in_place\": " + std::string(info_.in_place ? "true" : "false") + ",\n";
    s += "  \"nonblocking\": " + std::string(info_.nonblocking ? "true" : "false") + ",\n";
    s += "  \"cold_cache\": " + std::string(info_.cold_cache ? "true" : "false") + ",\n";
    s += "  \"mapped\": " + std::string(info_.mapped ? "true" : "false") + ",\n";
    s += "  \"device\": " + json_string(info_.device) + ",\n";
    s += "  \"hostname\": " + json_string(info_.hostname) + ",\n";
    s += "  \"date\": " + json_string(info_.date) + ",\n";
    s += "  \"chorus_version\": \"" + std::to_string(CHORUS_VERSION_MAJOR) + "." +
         std::to_string(CHORUS_VERSION_MINOR) + "." + std::to_string(CHORUS_VERSION_PATCH) + "\",\n";
    s += "  \"rows\": [";
    for (size_t i = 0; i < rows_.size(); ++i) {
        const Row& r = rows_[i];
        const std::string null = "null";
        s += i ? ",\n    {" : "\n    {";
        s += "\"collective\": " + json_string(info_.collective);
        s += ", \"ranks\": " + std::to_string(info_.ranks);
        s += ", \"bytes\": " + std::to_string(r.bytes);
        s += ", \"datatype\": " + json_string(info_.datatype);
        s += ", \"iterations\": " + std::to_string(r.iterations);
        s += ", \"chorus_avg_us\": " + num(r.avg_us, "%.3f");
        s += ", \"chorus_min_us\": " + num(r.min_us, "%.3f");
        s += ", \"chorus_max_us\": " + num(r.max_us, "%.3f");
        s += ", \"algbw_gbs\": " + num(r.algbw_gbs, "%.4f");
        s += ", \"busbw_gbs\": " + num(r.busbw_gbs, "%.4f");
        s += ", \"mpi_avg_us\": " + (r.has_mpi ? num(r.mpi_avg_us, "%.3f") : null);
        s += ", \"mpi_busbw_gbs\": " + (r.has_mpi ? num(r.mpi_busbw_gbs, "%.4f") : null);
        s += ", \"speedup\": " + (r.has_mpi ? num(r.speedup, "%.3f") : null);
        s += ", \"validation\": " + json_string(verdict_text(r.verdict));
        if (info_.nonblocking) {
            s += ", \"overall_us\": " + num(r.overall_us, "%.3f");
            s += ", \"compute_us\": " + num(r.compute_us, "%.3f");
            s += ", \"overlap_pct\": " + num(r.overlap_pct, "%.2f");
            s += ", \"mpi_overlap_pct\": " + (r.has_mpi ? num(r.mpi_overlap_pct, "%.2f") : null);
        }
        if (ceiling())
            s += std::string(device() ? ", \"d2d_copy_gbs\": " : ", \"copy_gbs\": ") + num(r.copy_gbs, "%.4f");
        s += "}";
    }
    s += rows_.empty() ? "]\n}\n" : "\n  ]\n}\n";
    FILE* f = std::fopen(json_path_.c_str(), "w");
    bool ok = f != nullptr;
    if (ok) ok = std::fwrite(s.data(), 1, s.size(), f) == s.size();
    if (f && std::fclose(f) != 0) ok = false;
    if (!ok) error = "cannot write JSON file '" + json_path_ + "': " + std::strerror(errno);
    return ok;
}

std::string host_name() {
    char buf[256] = {};
    if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
    return buf;
}

std::string now_iso8601() {
    const std::time_t t = std::time(nullptr);
    std::tm tm{};
    localtime_r(&t, &tm);
    char buf[64];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S%z", &tm);
    return buf;
}

}  // namespace bench
