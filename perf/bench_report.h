// Output of chorus-bench: the OSU-style table on stdout, and optional CSV
// and JSON files. Used on rank 0 only.
#pragma once

#include <cstddef>
#include <cstdio>
#include <string>
#include <vector>

namespace bench {

struct RunInfo {
    std::string collective;  // as given on the command line, e.g. "allreduce"
    std::string title;       // for the table header, e.g. "Allreduce"
    std::string datatype;
    std::string op;
    std::string device;
    std::string hostname;
    std::string date;
    int ranks = 0;
    int root = -1;  // -1: the collective has no root
    bool in_place = false;
    bool cold_cache = false;
    bool mapped = false;  // --mapped: with the host copy ceiling
    bool uses_op = true;
    bool full = false;
    bool validate = false;
    bool compare_mpi = true;
    bool nonblocking = false;  // the overlap columns
};

enum class Verdict { kNotChecked, kPass, kFail };

struct Row {
    size_t bytes = 0;  // message size as given by -m
    int iterations = 0;
    double avg_us = 0, min_us = 0, max_us = 0;
    double algbw_gbs = 0, busbw_gbs = 0;
    bool has_mpi = false;  // false with --no-mpi or without an MPI equivalent
    double mpi_avg_us = 0, mpi_busbw_gbs = 0, speedup = 0;
    double copy_gbs = 0;  // -d cuda: device-to-device copy of `bytes`, bytes / time
    // Nonblocking: with computation between start and wait (OSU's overlap).
    double overall_us = 0, compute_us = 0, overlap_pct = 0, mpi_overlap_pct = 0;
    Verdict verdict = Verdict::kNotChecked;
};

class Report {
public:
    explicit Report(RunInfo info) : info_(std::move(info)) {}
    ~Report();

    // Opens the CSV file and checks the JSON file can be written. False, with
    // `error` set, when one cannot be.
    bool open(const std::string& csv_path, const std::string& json_path, std::string& error);
    void print_header();
    void add(const Row& row);
    // Writes the JSON file. False, with `error` set, on failure.
    bool finish(std::string& error);

private:
    bool device() const { return info_.device == "cuda"; }
    // A copy ceiling column: a device copy (-d cuda) or a host one (--mapped).
    bool ceiling() const { return device() || info_.mapped; }
    RunInfo info_;
    std::vector<Row> rows_;
    FILE* csv_ = nullptr;
    std::string json_path_;
};

// Host name and the current local time in ISO 8601.
std::string host_name();
std::string now_iso8601();

}  // namespace bench
