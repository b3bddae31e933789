#include "core/trace.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <type_traits>

#include "base/clock.h"
#include "base/log.h"
#include "exec/schedule.h"
#include "net/mpi_bootstrap.h"
#include "reduce/datatype.h"

namespace chorus {

namespace {

double ping_pong_offset_us(MPI_Comm comm) {
    int rank = 0, size = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    constexpr int kRounds = 8, kTag = 7301;
    std::vector<double> offsets(static_cast<size_t>(size), 0.0);
    if (rank == 0) {
        for (int r = 1; r < size; ++r) {
            double best_rtt = 1e300;
            for (int i = 0; i < kRounds; ++i) {
                double t0 = now_us(), theirs = 0;
                MPI_Send(&t0, 1, MPI_DOUBLE, r, kTag, comm);
                MPI_Recv(&theirs, 1, MPI_DOUBLE, r, kTag, comm, MPI_STATUS_IGNORE);
                double t1 = now_us();
                if (t1 - t0 < best_rtt) {
                    best_rtt = t1 - t0;
                    offsets[static_cast<size_t>(r)] = theirs - (t0 + t1) / 2;
                }
            }
        }
    } else {
        for (int i = 0; i < kRounds; ++i) {
            double t = 0;
            MPI_Recv(&t, 1, MPI_DOUBLE, 0, kTag, comm, MPI_STATUS_IGNORE);
            t = now_us();
            MPI_Send(&t, 1, MPI_DOUBLE, 0, kTag, comm);
        }
    }
    double mine = 0;
    MPI_Scatter(offsets.data(), 1, MPI_DOUBLE, &mine, 1, MPI_DOUBLE, 0, comm);
    return mine;
}

// Round k carries every rank's stamp taken before it, and the time its
// round k-1 ended (both on the rank's own clock). Rank 0's stamp of round k was taken before round k
// ended here: offset <= end_here - stamp_0. This rank's stamp was taken
// before round k ended on rank 0: offset >= stamp_here - end_0.
double exchange_offset_us(net::Bootstrap& boot) {
    constexpr int kRounds = 8;
    const int me = boot.rank();
    double low = -1e300, high = 1e300, stamp_prev = 0, end_prev = 0;
    for (int k = 0; k <= kRounds; ++k) {
        const double stamps[2] = {now_us(), end_prev};
        std::vector<std::string> all =
            boot.allgather(std::string(reinterpret_cast<const char*>(stamps), sizeof stamps));
        const double end = now_us();
        double zero[2];
        std::memcpy(zero, all[0].data(), sizeof zero);
        high = std::min(high, end - zero[0]);
        if (k > 0) low = std::max(low, stamp_prev - zero[1]);
        stamp_prev = stamps[0];
        end_prev = end;
    }
    return me == 0 || low > high ? 0 : (low + high) / 2;
}

}  // namespace

double clock_offset_us(net::Bootstrap& boot) {
    if (auto* mpi = dynamic_cast<net::MpiBootstrap*>(&boot)) return ping_pong_offset_us(mpi->comm());
    return exchange_offset_us(boot);
}

namespace {

std::string json_escape(const std::string& s) {
    std::string out;
    for (char ch : s) {
        auto c = static_cast<unsigned char>(ch);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += ch;
        } else if (c < 0x20) {
            char b[8];
            std::snprintf(b, sizeof b, "\\u%04x", c);
            out += b;
        } else {
            out += ch;
        }
    }
    return out;
}

const char* step_name(uint8_t kind) {
    return step_kind_name(static_cast<StepKind>(kind));
}

// Steps on their own rows below the operation: transfers, local work.
int step_lane(uint8_t kind) {
    switch (static_cast<StepKind>(kind)) {
        case StepKind::Send:
        case StepKind::Expose:
        case StepKind::Put: return 1;
        case StepKind::Recv:
        case StepKind::Get: return 2;
        case StepKind::Publish:
        case StepKind::Await:
        case StepKind::Claim:
        case StepKind::Release: return 4;
        default: return 3;
    }
}

}  // namespace

TraceWriter::TraceWriter(const std::string& dir, uint64_t comm, int rank, int size, double offset_us,
                         const std::map<std::string, std::string>& forced)
    : comm_(comm), rank_(rank), forced_(forced) {
    // Room for a batch from the start (and an in-line key past its end): no
    // reallocation on the way of a call.
    ops_.reserve(kBatchBytes + 96);
    spans_.reserve(2 * kBatch);
    if (mkdir(dir.c_str(), 0777) != 0 && errno != EEXIST) {
        log(LogLevel::Warn, rank, "CHORUS_TRACE=", dir, ": cannot create the directory (", std::strerror(errno),
            "); no trace");
        return;
    }
    const std::string path = cat(dir, "/chorus-comm", comm, "-rank", rank, ".json");
    file_ = std::fopen(path.c_str(), "w");
    if (!file_) {
        log(LogLevel::Warn, rank, "CHORUS_TRACE: cannot write ", path, " (", std::strerror(errno), "); no trace");
        return;
    }
    // The JSON array form, which readers also accept without its closing
    // bracket.
    const int base = static_cast<int>(comm * 8);
    std::fprintf(file_,
                 "[\n{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"args\":{\"name\":\"rank %d\"}},\n"
                 "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":%d,\"args\":{\"sort_index\":%d}},\n"
                 "{\"ph\":\"M\",\"name\":\"chorus_clock\",\"pid\":%d,\"args\":{\"offset_us\":%.3f,\"comm\":%llu,"
                 "\"rank\":%d,\"size\":%d}},\n",
                 rank, rank, rank, rank, rank, offset_us, static_cast<unsigned long long>(comm), rank, size);
    const char* lanes[] = {"ops", "sends, exposes, puts", "recvs, gets", "local", "slots"};
    for (int l = 0; l < 5; ++l)
        std::fprintf(
            file_,
            "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":\"comm %llu %s\"}},\n",
            rank, base + l, static_cast<unsigned long long>(comm), lanes[l]);
}

TraceWriter::~TraceWriter() {
    TickScale scale;
    scale.start();
    scale.finish();
    close(Labels(), scale);
}

void TraceWriter::add_steps(const std::vector<StepSpan>& spans) {
    spans_.insert(spans_.end(), spans.begin(), spans.end());
    if (spans_.size() >= kBatch) spill(step_spill_, spans_);
}

uint32_t TraceWriter::find_shape(const ShapeKey& k) {
    auto it = shape_index_.find(k);
    uint32_t shape;
    if (it != shape_index_.end()) {
        shape = it->second;
    } else if (shapes_.size() < kMaxShapes) {
        shape = static_cast<uint32_t>(shapes_.size());
        shapes_.push_back(k);
        shape_index_.emplace(k, shape);
    } else {
        shape = kInlineShape;
    }
    last_key_ = k;
    last_shape_ = shape;
    return shape;
}

RecordFields TraceWriter::unpack(const ShapeKey& k, uint64_t number, uint64_t begin_tick, uint64_t end_tick) {
    RecordFields r;
    r.number = number;
    r.seq = k[0] + number;
    r.count = k[1];
    r.bytes = k[2];
    r.algorithm = reinterpret_cast<const char*>(k[3]);
    r.label = static_cast<uint32_t>(k[4]);
    r.steps = static_cast<uint32_t>(k[4] >> 32);
    r.root = static_cast<int32_t>(static_cast<uint32_t>(k[5]));
    r.coll = static_cast<coll::Collective>((k[5] >> 32) & 0xff);
    r.dtype = static_cast<chorus_datatype_t>((k[5] >> 40) & 0xff);
    r.op = static_cast<chorus_op_t>((k[5] >> 48) & 0xff);
    r.state = (k[5] >> 56) & 1 ? RecState::Failed : RecState::Done;
    r.inline_run = (k[5] >> 57) & 1;
    r.begin_tick = begin_tick;
    r.end_tick = end_tick;
    return r;
}

void TraceWriter::failed(const Record& r) {
    errors_[r.number] = r.error;
}

void TraceWriter::spill_ops() {
    if (!op_spill_) op_spill_ = std::tmpfile();
    const uint64_t n = ops_.size();
    if (op_spill_) {
        std::fwrite(&n, sizeof n, 1, op_spill_);
        std::fwrite(ops_.data(), 1, n, op_spill_);
    }
    ops_.clear();
}

template <typename T>
void TraceWriter::spill(std::FILE*& to, std::vector<T>& from) {
    if (!to) to = std::tmpfile();
    if (to) std::fwrite(from.data(), sizeof(T), from.size(), to);
    from.clear();
}

void TraceWriter::close(const Labels& labels, const TickScale& scale) {
    if (!file_) return;
    // Spilled entries first (they are older), then those still here.
    auto replay = [&](std::FILE* f, auto& held, auto write) {
        using T = typename std::decay_t<decltype(held)>::value_type;
        if (f) {
            std::rewind(f);
            std::vector<T> chunk(kBatch);
            size_t n;
            while ((n = std::fread(chunk.data(), sizeof(T), chunk.size(), f)) > 0)
                for (size_t i = 0; i < n; ++i) write(chunk[i]);
            std::fclose(f);
        }
        for (const T& e : held) write(e);
        held.clear();
    };
    // Operations: decoded as add() encoded them, the stamps and numbers
    // carried from each to the next.
    struct Decoder {
        uint64_t number = 0, begin = 0;
        ShapeKey key{};
        std::vector<uint8_t> buf;
        size_t at = 0;
        bool more() const { return at < buf.size(); }
        uint64_t varint() {
            uint64_t v = 0;
            for (int shift = 0; at < buf.size() && shift < 64; shift += 7) {
                const uint8_t b = buf[at++];
                v |= static_cast<uint64_t>(b & 0x7f) << shift;
                if (!(b & 0x80)) break;
            }
            return v;
        }
        static uint64_t unzigzag(uint64_t v) { return (v >> 1) ^ (~(v & 1) + 1); }
    } d;
    auto decode = [&] {
        while (d.more()) {
            const uint8_t tag = d.buf[d.at++];
            if (tag == kFull) {
                d.number = d.varint();
                const uint32_t shape = static_cast<uint32_t>(d.varint());
                if (shape == kInlineShape)
                    for (uint64_t& v : d.key) v = d.varint();
                else if (shape < shapes_.size())
                    d.key = shapes_[shape];
            } else {
                ++d.number;
            }
            d.begin += Decoder::unzigzag(d.varint());
            const uint64_t end = d.begin + Decoder::unzigzag(d.varint());
            write_op(unpack(d.key, d.number, d.begin, end), labels, scale);
        }
        d.buf.clear();
        d.at = 0;
    };
    // Spilled blocks first (they are older: each its size, then whole
    // operations), then those still here.
    if (op_spill_) {
        std::rewind(op_spill_);
        uint64_t n = 0;
        while (std::fread(&n, sizeof n, 1, op_spill_) == 1 && n <= 2 * kBatchBytes) {
            d.buf.resize(n);
            if (std::fread(d.buf.data(), 1, n, op_spill_) != n) break;
            d.at = 0;
            decode();
        }
        std::fclose(op_spill_);
    }
    d.buf = std::move(ops_);
    decode();
    ops_.clear();
    replay(step_spill_, spans_, [&](const StepSpan& s) { write_step(s, scale); });
    op_spill_ = step_spill_ = nullptr;
    // A last event without a trailing comma, then the end of the array.
    std::fprintf(file_, "{\"ph\":\"M\",\"name\":\"chorus_end\",\"pid\":%d,\"args\":{}}\n]\n", rank_);
    std::fclose(file_);
    file_ = nullptr;
}

void TraceWriter::write_op(const RecordFields& e, const Labels& labels, const TickScale& scale) {
    const int base = static_cast<int>(comm_ * 8);
    const std::string coll = coll::collective_name(static_cast<coll::Collective>(e.coll));
    auto forced = forced_.find(coll);
    const char* why =
        forced != forced_.end() && forced->second == e.algorithm ? "forced by CHORUS_ALGO" : "chosen by the cost model";
    const std::string label = e.label ? labels.text(e.label) : std::string();
    const std::string name = label.empty() ? coll : cat(coll, " \"", label, "\"");
    auto error = errors_.find(e.number);
    std::fprintf(file_,
                 "{\"ph\":\"X\",\"cat\":\"op\",\"name\":\"%s\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,"
                 "\"args\":{\"collective\":\"%s\",\"comm\":%llu,\"seq\":%llu,\"number\":%llu,\"count\":%llu,"
                 "\"bytes\":%llu,\"datatype\":\"%s\",\"op\":\"%s\",\"root\":%d,\"algorithm\":\"%s\",\"why\":\"%s%s\","
                 "\"steps\":%u,\"result\":\"%s\",\"label\":\"%s\"}},\n",
                 json_escape(name).c_str(), rank_, base, scale.us(e.begin_tick),
                 scale.us(e.end_tick) - scale.us(e.begin_tick), coll.c_str(), static_cast<unsigned long long>(comm_),
                 static_cast<unsigned long long>(e.seq), static_cast<unsigned long long>(e.number),
                 static_cast<unsigned long long>(e.count), static_cast<unsigned long long>(e.bytes),
                 datatype_name(static_cast<chorus_datatype_t>(e.dtype)), op_name(static_cast<chorus_op_t>(e.op)),
                 e.root, e.algorithm, why, e.inline_run ? ", run inline" : "", e.steps,
                 error != errors_.end() ? json_escape(error->second).c_str() : "success", json_escape(label).c_str());
}

void TraceWriter::write_step(const StepSpan& s, const TickScale& scale) {
    const int base = static_cast<int>(comm_ * 8);
    std::string name = step_name(s.kind);
    const auto kind = static_cast<StepKind>(s.kind);
    const bool to = kind == StepKind::Send || kind == StepKind::Expose || kind == StepKind::Put;
    if (s.peer >= 0) name += cat(to ? " to " : " from ", s.peer);
    if (s.steps > 1) name += cat(" x", s.steps);
    std::fprintf(file_,
                 "{\"ph\":\"X\",\"cat\":\"step\",\"name\":\"%s\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,"
                 "\"args\":{\"seq\":%llu,\"kind\":\"%s\",\"peer\":%d,\"steps\":%u,\"bytes\":%llu}},\n",
                 name.c_str(), rank_, base + step_lane(s.kind), scale.us(s.begin_tick),
                 scale.us(s.end_tick) - scale.us(s.begin_tick), static_cast<unsigned long long>(s.seq),
                 step_name(s.kind), s.peer, s.steps, static_cast<unsigned long long>(s.bytes));
}

}  // namespace chorus
