#include "bench_options.h"

#include <getopt.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>

#include "bench_collectives.h"

namespace bench {

namespace {

enum LongOnly { kNoMpi = 256, kCsv, kJson, kColdCache, kMapped };

bool parse_int(const char* text, long lo, int& out) {
    if (!text || !*text) return false;
    errno = 0;
    char* end = nullptr;
    const long v = std::strtol(text, &end, 10);
    if (errno != 0 || *end != '\0' || v < lo || v > INT_MAX) return false;
    out = static_cast<int>(v);
    return true;
}

bool parse_range(const std::string& text, Options& o) {
    const size_t colon = text.find(':');
    if (colon == std::string::npos) return parse_size(text, o.max_size);
    if (text.find(':', colon + 1) != std::string::npos) return false;
    const std::string lo = text.substr(0, colon), hi = text.substr(colon + 1);
    if (lo.empty() && hi.empty()) return false;
    if (!lo.empty() && !parse_size(lo, o.min_size)) return false;
    if (!hi.empty() && !parse_size(hi, o.max_size)) return false;
    return true;
}

// The option getopt_long just rejected, as the user spelled it.
std::string option_text(char** argv) {
    if (optopt > 0 && optopt < 256) return std::string("-") + static_cast<char>(optopt);
    return argv[optind - 1];
}

}  // namespace

bool parse_size(const std::string& text, size_t& out) {
    size_t i = 0, v = 0;
    if (text.empty() || text[0] < '0' || text[0] > '9') return false;
    for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
        const size_t d = static_cast<size_t>(text[i] - '0');
        if (v > (SIZE_MAX - d) / 10) return false;
        v = v * 10 + d;
    }
    unsigned shift = 0;
    if (i < text.size()) {
        switch (text[i]) {
            case 'k':
            case 'K': shift = 10; break;
            case 'm':
            case 'M': shift = 20; break;
            case 'g':
            case 'G': shift = 30; break;
            default: return false;
        }
        if (++i != text.size()) return false;
    }
    if (v > (SIZE_MAX >> shift)) return false;
    out = v << shift;
    return true;
}

void print_usage(FILE* out, const char* prog) {
    std::fprintf(out,
                 "Usage: mpirun -np N %s COLLECTIVE [options]\n"
                 "OSU-style latency benchmark of Chorus collectives, compared with the MPI library's.\n"
                 "\n"
                 "COLLECTIVE: %s\n"
                 "(the v forms with equal blocks; MPI's own: MPI_Allgatherv, MPI_Alltoallv, ...)\n"
                 "\n"
                 "Options:\n"
                 "  -d, --accelerator TYPE  buffer location: host (default) or cuda\n"
                 "  -m, --message-size [MIN:]MAX\n"
                 "                          message sizes in bytes, doubling from MIN to MAX;\n"
                 "                          suffixes K, M, G (binary); default 1:1M\n"
                 "                          (allreduce, bcast, reduce: the message; reduce_scatter:\n"
                 "                          the total input; allgather(v), gather(v): what each rank\n"
                 "                          sends; scatter(v): what each rank receives; alltoall(v):\n"
                 "                          the block for each peer; barrier: one row, no message)\n"
                 "  -i, --iterations N      timed iterations per size (default 1000 up to 8K,\n"
                 "                          then fewer as messages grow, at least 10)\n"
                 "  -x, --warmup N          untimed warm-up iterations per size\n"
                 "  -c, --validation        check every output element (Pass/Fail column; barrier:\n"
                 "                          that no rank leaves before the last, 20 ms late, came);\n"
                 "                          the exit status is 1 when any check fails\n"
                 "  -f, --full              also print min and max latency across ranks and the\n"
                 "                          iteration count\n"
                 "  -T, --type TYPE         datatype (default float32), one of:\n"
                 "                          %s\n"
                 "  -o, --op OP             reduction: %s (default sum)\n"
                 "  -l, --in-place          in place: sendbuf == recvbuf (allgather(v), and gather(v)\n"
                 "                          at the root: sendbuf is this rank's block of recvbuf;\n"
                 "                          scatter(v) at the root: recvbuf is its block of sendbuf;\n"
                 "                          bcast is always in place at the root, as MPI_Bcast)\n"
                 "  -k, --root RANK         root of bcast, reduce, gather(v), scatter(v) (default 0)\n"
                 "  -n, --nonblocking       the nonblocking calls (chorus_i..., MPI_I...): latency of\n"
                 "                          start + wait, then OSU's overlap: with a compute loop of\n"
                 "                          that length between start and wait, overlap %% =\n"
                 "                          100 (1 - (overall - compute) / latency), clamped to 0..100\n"
                 "      --no-mpi            skip the comparison with the MPI library's collective\n"
                 "      --cold-cache        time every call on the next of a ring of buffer sets\n"
                 "                          (together max(4 x last-level cache, 256 MiB), at most\n"
                 "                          1 GiB or two sets), each rewritten by the program after\n"
                 "                          its call: no library finds its data in a cache or its\n"
                 "                          pages pinned by the call before (host buffers only)\n"
                 "      --mapped            buffers in mapped memory (chorus_mem_alloc), registered\n"
                 "                          as windows of the communicator (single-copy collectives;\n"
                 "                          MPI runs on the same buffers), and a Copy(GB/s) column:\n"
                 "                          every rank copying the message size at once, a ceiling\n"
                 "                          (host buffers only)\n"
                 "      --csv FILE          also write the results as CSV\n"
                 "      --json FILE         also write the results as JSON\n"
                 "  -h, --help              this help\n"
                 "\n"
                 "Bandwidths follow nccl-tests: algbw = bytes / time, where bytes is the\n"
                 "message size (allgather(v), gather(v): the gathered output, nranks x the -m\n"
                 "size; scatter(v), alltoall(v): nranks x the -m size); busbw = algbw x\n"
                 "2(n-1)/n for allreduce, 1 for bcast and reduce, (n-1)/n for the others.\n"
                 "MPI/Chorus is MPI's average latency divided by Chorus's (above 1: Chorus is\n"
                 "faster).\n"
                 "\n"
                 "Self-test: CHORUS_BENCH_CORRUPT=1 in the environment makes one rank alter\n"
                 "one output element after each validation run, so that -c must report Fail\n"
                 "and exit with status 1.\n"
                 "\n"
                 "Exit status: 0 success, 1 validation failure or library error, 2 usage error.\n",
                 prog, collective_names().c_str(), type_names().c_str(), op_names().c_str());
}

ParseStatus parse_options(int argc, char** argv, Options& o, std::string& error) {
    static const struct option longopts[] = {
        {"accelerator", required_argument, nullptr, 'd'},
        {"message-size", required_argument, nullptr, 'm'},
        {"iterations", required_argument, nullptr, 'i'},
        {"warmup", required_argument, nullptr, 'x'},
        {"validation", no_argument, nullptr, 'c'},
        {"full", no_argument, nullptr, 'f'},
        {"type", required_argument, nullptr, 'T'},
        {"op", required_argument, nullptr, 'o'},
        {"in-place", no_argument, nullptr, 'l'},
        {"root", required_argument, nullptr, 'k'},
        {"nonblocking", no_argument, nullptr, 'n'},
        {"no-mpi", no_argument, nullptr, kNoMpi},
        {"cold-cache", no_argument, nullptr, kColdCache},
        {"mapped", no_argument, nullptr, kMapped},
        {"csv", required_argument, nullptr, kCsv},
        {"json", required_argument, nullptr, kJson},
        {"help", no_argument, nullptr, 'h'},
        {nullptr, 0, nullptr, 0},
    };
    std::string type = "float32", op = "sum";
    opterr = 0;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, ":d:m:i:x:cfT:o:lk:nh", longopts, nullptr)) != -1) {
        switch (c) {
            case 'd': o.device = optarg; break;
            case 'm':
                if (!parse_range(optarg, o)) {
                    error = "bad message size '" + std::string(optarg) + "' (want [MIN:]MAX, e.g. 4:64M)";
                    return ParseStatus::kError;
                }
                break;
            case 'i':
                if (!parse_int(optarg, 1, o.iterations)) {
                    error = "bad iteration count '" + std::string(optarg) + "' (want an integer >= 1)";
                    return ParseStatus::kError;
                }
                break;
            case 'x':
                if (!parse_int(optarg, 0, o.warmup)) {
                    error = "bad warm-up count '" + std::string(optarg) + "' (want an integer >= 0)";
                    return ParseStatus::kError;
                }
                break;
            case 'c': o.validate = true; break;
            case 'f': o.full = true; break;
            case 'T': type = optarg; break;
            case 'o': op = optarg; break;
            case 'l': o.in_place = true; break;
            case 'k':
                if (!parse_int(optarg, 0, o.root)) {
                    error = "bad root '" + std::string(optarg) + "' (want a rank >= 0)";
                    return ParseStatus::kError;
                }
                break;
            case 'n': o.nonblocking = true; break;
            case kNoMpi: o.compare_mpi = false; break;
            case kColdCache: o.cold_cache = true; break;
            case kMapped: o.mapped = true; break;
            case kCsv: o.csv_path = optarg; break;
            case kJson: o.json_path = optarg; break;
            case 'h': return ParseStatus::kHelp;
            case ':': error = "option '" + option_text(argv) + "' needs an argument"; return ParseStatus::kError;
            default: error = "unknown option '" + option_text(argv) + "'"; return ParseStatus::kError;
        }
    }
    if (optind >= argc) {
        error = "no collective given";
        return ParseStatus::kError;
    }
    if (argc - optind > 1) {
        error = "unexpected argument '" + std::string(argv[optind + 1]) + "'";
        return ParseStatus::kError;
    }
    o.collective = argv[optind];
    if (o.device != "host" && o.device != "cuda") {
        error = "unknown buffer location '" + o.device + "' (want host or cuda)";
        return ParseStatus::kError;
    }
    if (!(o.type = find_type(type))) {
        error = "unknown datatype '" + type + "' (want one of: " + type_names() + ")";
        return ParseStatus::kError;
    }
    if (!(o.op = find_op(op))) {
        error = "unknown op '" + op + "' (want one of: " + op_names() + ")";
        return ParseStatus::kError;
    }
    if (o.mapped && o.device != "host") {
        error = "--mapped takes host buffers only (not -d " + o.device + ")";
        return ParseStatus::kError;
    }
    if (o.cold_cache && o.device != "host") {
        error = "--cold-cache takes host buffers only (not -d " + o.device + ")";
        return ParseStatus::kError;
    }
    if (o.min_size > o.max_size) {
        error = "message size MIN " + std::to_string(o.min_size) + " is larger than MAX " + std::to_string(o.max_size);
        return ParseStatus::kError;
    }
    return ParseStatus::kRun;
}

}  // namespace bench
