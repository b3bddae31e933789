// Command line of chorus-bench. Parsing is a pure function of argv, so every
// rank reaches the same verdict without communicating.
#pragma once

#include <cstddef>
#include <cstdio>
#include <string>

#include "bench_types.h"

namespace bench {

struct Options {
    std::string collective;
    std::string device = "host";
    size_t min_size = 1;
    size_t max_size = size_t{1} << 20;
    int iterations = 0;  // 0: chosen per message size
    int warmup = -1;     // -1: chosen per message size
    bool validate = false;
    bool full = false;
    bool in_place = false;
    bool compare_mpi = true;
    bool nonblocking = false;  // -n: the i-calls, and their overlap with computation
    bool cold_cache = false;
    bool mapped = false;  // --mapped: buffers from chorus_mem_alloc, registered as windows
    int root = 0;
    const TypeInfo* type = nullptr;
    const OpInfo* op = nullptr;
    std::string csv_path;
    std::string json_path;
};

enum class ParseStatus { kRun, kHelp, kError };

// Fills `opts`, or sets `error` to a one-line reason.
ParseStatus parse_options(int argc, char** argv, Options& opts, std::string& error);

// Parse "123", "4K", "64M", "1G" (binary multiples). False on bad syntax or
// overflow.
bool parse_size(const std::string& text, size_t& out);

void print_usage(FILE* out, const char* prog);

}  // namespace bench
