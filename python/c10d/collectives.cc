// The backend's collectives and point-to-point calls, each one or a few
// nonblocking C API calls. Tensors are passed in place wherever the C API
// takes them so; lists of tensors go through one flat tensor, copied in
// before the call or out once it has completed.
//
// Data movement (broadcast, gathers, scatters, all-to-all, send and recv)
// moves bytes, so every dtype works; reductions map torch's dtype and op to
// Chorus's (bool through the bitwise operators, complex as pairs for SUM
// and AVG, PREMUL_SUM as a multiplication before a SUM).
#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <torch/csrc/distributed/c10d/Types.hpp>

#include "backend.h"

namespace chorus_c10d {

namespace {

void check_tensor(const at::Tensor& t, const char* what) {
    TORCH_CHECK_VALUE(t.layout() == at::kStrided, "chorus: ", what, ": only dense tensors are supported");
    TORCH_CHECK_VALUE(t.is_contiguous(), "chorus: ", what, ": tensors must be contiguous");
    TORCH_CHECK_VALUE(t.is_cpu() || t.is_cuda(), "chorus: ", what, ": tensors on ", t.device(),
                      " are not supported (cpu or cuda)");
}

const at::Tensor& single(const std::vector<at::Tensor>& v, const char* what) {
    TORCH_CHECK_VALUE(v.size() == 1, "chorus: ", what, " takes one tensor per process, got ", v.size());
    check_tensor(v[0], what);
    return v[0];
}

size_t bytes_of(const at::Tensor& t) { return static_cast<size_t>(t.numel()) * t.element_size(); }

void same_kind(const at::Tensor& a, const at::Tensor& b, const char* what) {
    TORCH_CHECK_TYPE(a.scalar_type() == b.scalar_type(), "chorus: ", what, ": dtypes differ (", a.scalar_type(),
                     " and ", b.scalar_type(), ")");
    TORCH_CHECK_VALUE(a.device() == b.device(), "chorus: ", what, ": tensors on different devices (", a.device(),
                      " and ", b.device(), ")");
}

// A reduction as Chorus computes it.
struct Reduction {
    chorus_datatype_t type = CHORUS_FLOAT32;
    chorus_op_t op = CHORUS_SUM;
    size_t per_element = 1;  // Chorus elements per torch element (2 for complex)
    bool premul = false;
    double factor = 1;
    at::Tensor factor_tensor;
};

Reduction reduction(const at::Tensor& t, const c10d::ReduceOp& rop, const char* what) {
    Reduction r;
    const auto st = t.scalar_type();
    const bool is_float = at::isFloatingType(st);
    const bool is_complex = at::isComplexType(st);
    switch (rop.op_) {
    case c10d::ReduceOp::SUM: r.op = CHORUS_SUM; break;
    case c10d::ReduceOp::AVG: r.op = CHORUS_AVG; break;
    case c10d::ReduceOp::PRODUCT: r.op = CHORUS_PROD; break;
    case c10d::ReduceOp::MIN: r.op = CHORUS_MIN; break;
    case c10d::ReduceOp::MAX: r.op = CHORUS_MAX; break;
    case c10d::ReduceOp::BAND: r.op = CHORUS_BAND; break;
    case c10d::ReduceOp::BOR: r.op = CHORUS_BOR; break;
    case c10d::ReduceOp::BXOR: r.op = CHORUS_BXOR; break;
    case c10d::ReduceOp::PREMUL_SUM: {
        r.op = CHORUS_SUM;
        r.premul = true;
        auto* sup = dynamic_cast<c10d::PreMulSumSupplement*>(rop.supplement_.get());
        TORCH_CHECK_VALUE(sup, "chorus: ", what, ": PREMUL_SUM without its factor");
        if (sup->tensor_factor.defined())
            r.factor_tensor = sup->tensor_factor;
        else
            r.factor = sup->double_factor;
        TORCH_CHECK_TYPE(is_float || is_complex, "chorus: ", what, ": PREMUL_SUM needs a floating dtype, not ", st);
        break;
    }
    default: TORCH_CHECK_VALUE(false, "chorus: ", what, ": reduce op ", static_cast<int>(rop.op_), " is not supported");
    }
    const bool bitwise = r.op == CHORUS_BAND || r.op == CHORUS_BOR || r.op == CHORUS_BXOR;
    if (st == at::kBool) {
        // 0 or 1 per byte: OR is SUM's and MAX's truth, AND is PRODUCT's and MIN's.
        r.type = CHORUS_UINT8;
        if (r.op == CHORUS_SUM || r.op == CHORUS_MAX || r.op == CHORUS_BOR)
            r.op = CHORUS_BOR;
        else if (r.op == CHORUS_PROD || r.op == CHORUS_MIN || r.op == CHORUS_BAND)
            r.op = CHORUS_BAND;
        else
            TORCH_CHECK_TYPE(r.op == CHORUS_BXOR, "chorus: ", what, ": AVG and PREMUL_SUM are not supported on bool tensors");
        return r;
    }
    TORCH_CHECK_TYPE(!(bitwise && (is_float || is_complex)), "chorus: ", what,
                     ": bitwise reductions need an integer dtype, not ", st);
    if (is_complex) {
        TORCH_CHECK_TYPE(r.op == CHORUS_SUM || r.op == CHORUS_AVG, "chorus: ", what,
                         ": complex tensors reduce with SUM, AVG or PREMUL_SUM only");
        r.per_element = 2;
    }
    switch (st) {
    case at::kChar: r.type = CHORUS_INT8; break;
    case at::kByte: r.type = CHORUS_UINT8; break;
    case at::kShort: r.type = CHORUS_INT16; break;
    case at::kUInt16: r.type = CHORUS_UINT16; break;
    case at::kInt: r.type = CHORUS_INT32; break;
    case at::kUInt32: r.type = CHORUS_UINT32; break;
    case at::kLong: r.type = CHORUS_INT64; break;
    case at::kUInt64: r.type = CHORUS_UINT64; break;
    case at::kHalf: r.type = CHORUS_FLOAT16; break;
    case at::kBFloat16: r.type = CHORUS_BFLOAT16; break;
    case at::kFloat:
    case at::kComplexFloat: r.type = CHORUS_FLOAT32; break;
    case at::kDouble:
    case at::kComplexDouble: r.type = CHORUS_FLOAT64; break;
    default: TORCH_CHECK_TYPE(false, "chorus: ", what, ": dtype ", st, " cannot be reduced");
    }
    return r;
}

// The input of a reduction, multiplied by PREMUL_SUM's factor when it is one:
// in place when `in_place` (the tensor is overwritten by the result anyway).
at::Tensor premultiplied(const at::Tensor& t, const Reduction& r, bool in_place) {
    if (!r.premul) return t;
    if (r.factor_tensor.defined()) {
        at::Tensor f = r.factor_tensor.to(t.device());
        return in_place ? t.mul_(f) : t.mul(f);
    }
    return in_place ? t.mul_(r.factor) : t.mul(r.factor);
}

size_t count_of(const at::Tensor& t, const Reduction& r) { return static_cast<size_t>(t.numel()) * r.per_element; }

void check_root(int root, int size, const char* what) {
    TORCH_CHECK_VALUE(root >= 0 && root < size, "chorus: ", what, ": root ", root, " is not a rank of the group (size ",
                      size, ")");
}

// The root's list of a gather or scatter (one tensor per rank, each like
// `like`); nothing elsewhere, where none may be given.
std::vector<at::Tensor> root_list(const std::vector<std::vector<at::Tensor>>& lists, bool is_root, int size,
                                  const at::Tensor& like, const char* what, const char* side) {
    if (!is_root) {
        TORCH_CHECK_VALUE(lists.empty() || (lists.size() == 1 && lists[0].empty()), "chorus: ", what, ": ", side,
                          "s are given on the root only");
        return {};
    }
    TORCH_CHECK_VALUE(lists.size() == 1 && lists[0].size() == static_cast<size_t>(size), "chorus: ", what,
                      " takes one list of ", size, " ", side, " tensors on the root");
    for (const auto& t : lists[0]) {
        check_tensor(t, what);
        same_kind(like, t, what);
        TORCH_CHECK_VALUE(t.numel() == like.numel(), "chorus: ", what, ": every ", side, " must have ",
                          like.numel(), " elements, one has ", t.numel());
    }
    return lists[0];
}

// A send's or a receive's peer (another rank of the group) and tag.
void check_peer(int peer, int tag, int rank, int size, const char* what) {
    TORCH_CHECK_VALUE(peer >= 0 && peer < size && peer != rank, "chorus: ", what, ": ", peer,
                      " is not another rank of the group (size ", size, ", this rank ", rank, ")");
    TORCH_CHECK_VALUE(tag >= 0, "chorus: ", what, ": the tag must not be negative, got ", tag);
}

// Byte counts and offsets of a list of tensors laid end to end.
std::vector<size_t> byte_sizes(const std::vector<at::Tensor>& ts) {
    std::vector<size_t> v;
    for (const auto& t : ts) v.push_back(bytes_of(t));
    return v;
}
std::vector<size_t> offsets(const std::vector<size_t>& sizes) {
    std::vector<size_t> v(sizes.size());
    size_t at = 0;
    for (size_t i = 0; i < sizes.size(); ++i) {
        v[i] = at;
        at += sizes[i];
    }
    return v;
}

at::Tensor flat_bytes(const std::vector<at::Tensor>& like, size_t total) {
    return at::empty({static_cast<int64_t>(total)}, like.front().options().dtype(at::kByte));
}
// Copy between a flat byte tensor and a list of tensors laid end to end.
void unflatten(const at::Tensor& flat, const std::vector<at::Tensor>& ts) {
    int64_t at_byte = 0;
    for (const auto& t : ts) {
        const int64_t n = static_cast<int64_t>(bytes_of(t));
        t.view({-1}).view(at::kByte).copy_(flat.narrow(0, at_byte, n));
        at_byte += n;
    }
}
void flatten(const std::vector<at::Tensor>& ts, const at::Tensor& flat) {
    int64_t at_byte = 0;
    for (const auto& t : ts) {
        const int64_t n = static_cast<int64_t>(bytes_of(t));
        flat.narrow(0, at_byte, n).copy_(t.reshape({-1}).view(at::kByte));
        at_byte += n;
    }
}

// `req` by reference: read after the call that sets it has returned (the
// order in which a call's arguments are evaluated is unspecified).
void start_or_fail(Work& w, chorus_result_t rc, const chorus_request_t& req) {
    if (rc != CHORUS_SUCCESS) w.fail_start(rc);
    w.add(req);
}

}  // namespace

// ---------------------------------------------------------------- reductions

c10::intrusive_ptr<c10d::Work> Backend::allreduce(std::vector<at::Tensor>& tensors,
                                                  const c10d::AllreduceOptions& opts) {
    const at::Tensor& t = single(tensors, "all_reduce");
    const Reduction r = reduction(t, opts.reduceOp, "all_reduce");
    return launch(c10d::OpType::ALLREDUCE, "chorus:all_reduce", tensors, [&](Work& w) {
        premultiplied(t, r, true);
        chorus_request_t req = nullptr;
        void* p = t.data_ptr();
        start_or_fail(w, chorus_iallreduce(p, p, count_of(t, r), r.type, r.op, comm_->handle, stream_of(t), &req),
                      req);
    });
}

c10::intrusive_ptr<c10d::Work> Backend::allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                            const c10d::AllreduceCoalescedOptions& opts) {
    std::vector<Reduction> rs;
    for (const auto& t : tensors) {
        check_tensor(t, "all_reduce_coalesced");
        rs.push_back(reduction(t, opts.reduceOp, "all_reduce_coalesced"));
    }
    return launch(c10d::OpType::ALLREDUCE_COALESCED, "chorus:all_reduce_coalesced", tensors, [&](Work& w) {
        for (size_t i = 0; i < tensors.size(); ++i) {
            const at::Tensor& t = tensors[i];
            premultiplied(t, rs[i], true);
            chorus_request_t req = nullptr;
            void* p = t.data_ptr();
            start_or_fail(w,
                          chorus_iallreduce(p, p, count_of(t, rs[i]), rs[i].type, rs[i].op, comm_->handle,
                                            stream_of(t), &req),
                          req);
        }
    });
}

c10::intrusive_ptr<c10d::Work> Backend::reduce(std::vector<at::Tensor>& tensors, const c10d::ReduceOptions& opts) {
    const at::Tensor& t = single(tensors, "reduce");
    check_root(static_cast<int>(opts.rootRank), getSize(), "reduce");
    const Reduction r = reduction(t, opts.reduceOp, "reduce");
    const int root = static_cast<int>(opts.rootRank);
    return launch(c10d::OpType::REDUCE, "chorus:reduce", tensors, [&](Work& w) {
        // Other ranks' tensors are inputs only: PREMUL_SUM's product goes to
        // a copy.
        at::Tensor in = premultiplied(t, r, false);
        w.keep(in);
        chorus_request_t req = nullptr;
        start_or_fail(w,
                      chorus_ireduce(in.data_ptr(), getRank() == root ? t.data_ptr() : nullptr, count_of(t, r),
                                     r.type, r.op, root, comm_->handle, stream_of(t), &req),
                      req);
    });
}

c10::intrusive_ptr<c10d::Work> Backend::reduce_scatter_single(at::Tensor& output, at::Tensor& input,
                                                              const c10d::ReduceScatterOptions& opts) {
    check_tensor(output, "reduce_scatter_tensor");
    check_tensor(input, "reduce_scatter_tensor");
    same_kind(output, input, "reduce_scatter_tensor");
    TORCH_CHECK_VALUE(input.numel() == output.numel() * getSize(), "chorus: reduce_scatter_tensor: the input has ",
                      input.numel(), " elements, expected the output's ", output.numel(), " times the group size ",
                      getSize());
    const Reduction r = reduction(output, opts.reduceOp, "reduce_scatter_tensor");
    return launch(c10d::OpType::_REDUCE_SCATTER_BASE, "chorus:reduce_scatter_tensor", {output}, [&](Work& w) {
        at::Tensor in = premultiplied(input, r, false);
        w.keep(in);
        chorus_request_t req = nullptr;
        start_or_fail(w,
                      chorus_ireduce_scatter(in.data_ptr(), output.data_ptr(), count_of(output, r), r.type, r.op,
                                             comm_->handle, stream_of(output), &req),
                      req);
    });
}

c10::intrusive_ptr<c10d::Work> Backend::reduce_scatter_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                        std::vector<at::Tensor>& inputs,
                                                                        const c10d::ReduceScatterOptions& opts) {
    TORCH_CHECK_VALUE(outputs.size() == inputs.size(), "chorus: reduce_scatter_tensor_coalesced: ", outputs.size(),
                      " outputs for ", inputs.size(), " inputs");
    std::vector<Reduction> rs;
    for (size_t i = 0; i < outputs.size(); ++i) {
        check_tensor(outputs[i], "reduce_scatter_tensor_coalesced");
        check_tensor(inputs[i], "reduce_scatter_tensor_coalesced");
        same_kind(outputs[i], inputs[i], "reduce_scatter_tensor_coalesced");
        TORCH_CHECK_VALUE(inputs[i].numel() == outputs[i].numel() * getSize(),
                          "chorus: reduce_scatter_tensor_coalesced: input ", i, " has ", inputs[i].numel(),
                          " elements, expected ", outputs[i].numel() * getSize());
        rs.push_back(reduction(outputs[i], opts.reduceOp, "reduce_scatter_tensor_coalesced"));
    }
    return launch(c10d::OpType::REDUCE_SCATTER_TENSOR_COALESCED, "chorus:reduce_scatter_tensor_coalesced", outputs,
                  [&](Work& w) {
                      for (size_t i = 0; i < outputs.size(); ++i) {
                          at::Tensor in = premultiplied(inputs[i], rs[i], false);
                          w.keep(in);
                          chorus_request_t req = nullptr;
                          start_or_fail(w,
                                        chorus_ireduce_scatter(in.data_ptr(), outputs[i].data_ptr(),
                                                               count_of(outputs[i], rs[i]), rs[i].type, rs[i].op,
                                                               comm_->handle, stream_of(outputs[i]), &req),
                                        req);
                      }
                  });
}

c10::intrusive_ptr<c10d::Work> Backend::reduce_scatter(std::vector<at::Tensor>& outputs,
                                                       std::vector<std::vector<at::Tensor>>& inputs,
                                                       const c10d::ReduceScatterOptions& opts) {
    const at::Tensor& out = single(outputs, "reduce_scatter");
    TORCH_CHECK_VALUE(inputs.size() == 1 && inputs[0].size() == static_cast<size_t>(getSize()),
                      "chorus: reduce_scatter takes one list of ", getSize(), " tensors");
    for (const auto& t : inputs[0]) {
        check_tensor(t, "reduce_scatter");
        same_kind(out, t, "reduce_scatter");
    }
    const auto& mine = inputs[0][static_cast<size_t>(getRank())];
    TORCH_CHECK_VALUE(mine.numel() == out.numel(), "chorus: reduce_scatter: the output has ", out.numel(),
                      " elements and this rank's input ", mine.numel());
    const Reduction r = reduction(out, opts.reduceOp, "reduce_scatter");
    bool even = true;
    for (const auto& t : inputs[0]) even = even && t.numel() == out.numel();
    return launch(c10d::OpType::REDUCE_SCATTER, "chorus:reduce_scatter", outputs, [&](Work& w) {
        at::Tensor flat = at::cat(inputs[0]).view({-1});
        premultiplied(flat, r, true);
        w.keep(flat);
        chorus_request_t req = nullptr;
        if (even) {
            start_or_fail(w,
                          chorus_ireduce_scatter(flat.data_ptr(), out.data_ptr(), count_of(out, r), r.type, r.op,
                                                 comm_->handle, stream_of(out), &req),
                          req);
            return;
        }
        // Sizes that differ by rank (every rank passes the same list of sizes).
        at::Tensor counts = at::empty({getSize()}, at::kLong);
        auto* c = static_cast<size_t*>(counts.data_ptr());
        for (size_t i = 0; i < inputs[0].size(); ++i) c[i] = count_of(inputs[0][i], r);
        w.keep(counts);
        start_or_fail(w,
                      chorus_ireduce_scatterv(flat.data_ptr(), out.data_ptr(), c, r.type, r.op, comm_->handle,
                                              stream_of(out), &req),
                      req);
    });
}

// ----------------------------------------------------------------- movement

c10::intrusive_ptr<c10d::Work> Backend::broadcast(std::vector<at::Tensor>& tensors,
                                                  const c10d::BroadcastOptions& opts) {
    const at::Tensor& t = single(tensors, "broadcast");
    const int root = static_cast<int>(opts.rootRank);
    check_root(root, getSize(), "broadcast");
    return launch(c10d::OpType::BROADCAST, "chorus:broadcast", tensors, [&](Work& w) {
        chorus_request_t req = nullptr;
        void* p = t.data_ptr();
        start_or_fail(w, chorus_ibroadcast(p, p, bytes_of(t), CHORUS_UINT8, root, comm_->handle, stream_of(t), &req),
                      req);
    });
}

c10::intrusive_ptr<c10d::Work> Backend::all_gather_single(at::Tensor& output, at::Tensor& input,
                                                          const c10d::AllgatherOptions&) {
    check_tensor(output, "all_gather_into_tensor");
    check_tensor(input, "all_gather_into_tensor");
    same_kind(output, input, "all_gather_into_tensor");
    TORCH_CHECK_VALUE(output.numel() == input.numel() * getSize(), "chorus: all_gather_into_tensor: the output has ",
                      output.numel(), " elements, expected the input's ", input.numel(), " times the group size ",
                      getSize());
    return launch(c10d::OpType::_ALLGATHER_BASE, "chorus:all_gather_into_tensor", {output}, [&](Work& w) {
        w.keep(input);
        chorus_request_t req = nullptr;
        start_or_fail(w,
                      chorus_iallgather(input.data_ptr(), output.data_ptr(), bytes_of(input), CHORUS_UINT8,
                                        comm_->handle, stream_of(output), &req),
                      req);
    });
}

c10::intrusive_ptr<c10d::Work> Backend::allgather_into_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                        std::vector<at::Tensor>& inputs,
                                                                        const c10d::AllgatherOptions&) {
    TORCH_CHECK_VALUE(outputs.size() == inputs.size(), "chorus: all_gather_into_tensor_coalesced: ", outputs.size(),
                      " outputs for ", inputs.size(), " inputs");
    for (size_t i = 0; i < outputs.size(); ++i) {
        check_tensor(outputs[i], "all_gather_into_tensor_coalesced");
        check_tensor(inputs[i], "all_gather_into_tensor_coalesced");
        same_kind(outputs[i], inputs[i], "all_gather_into_tensor_coalesced");
        TORCH_CHECK_VALUE(outputs[i].numel() == inputs[i].numel() * getSize(),
                          "chorus: all_gather_into_tensor_coalesced: output ", i, " has ", outputs[i].numel(),
                          " elements, expected ", inputs[i].numel() * getSize());
    }
    return launch(c10d::OpType::ALLGATHER_INTO_TENSOR_COALESCED, "chorus:all_gather_into_tensor_coalesced", outputs,
                  [&](Work& w) {
                      for (size_t i = 0; i < outputs.size(); ++i) {
                          w.keep(inputs[i]);
                          chorus_request_t req = nullptr;
                          start_or_fail(w,
                                        chorus_iallgather(inputs[i].data_ptr(), outputs[i].data_ptr(),
                                                          bytes_of(inputs[i]), CHORUS_UINT8, comm_->handle,
                                                          stream_of(outputs[i]), &req),
                                        req);
                      }
                  });
}

c10::intrusive_ptr<c10d::Work> Backend::allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                                  std::vector<at::Tensor>& inputs, const c10d::AllgatherOptions&) {
    const at::Tensor& in = single(inputs, "all_gather");
    TORCH_CHECK_VALUE(outputs.size() == 1 && outputs[0].size() == static_cast<size_t>(getSize()),
                      "chorus: all_gather takes one list of ", getSize(), " output tensors");
    for (const auto& t : outputs[0]) {
        check_tensor(t, "all_gather");
        same_kind(in, t, "all_gather");
        TORCH_CHECK_VALUE(t.numel() == in.numel(), "chorus: all_gather: every output must have the input's ",
                          in.numel(), " elements, one has ", t.numel());
    }
    std::vector<at::Tensor> outs = outputs[0];
    return launch(c10d::OpType::ALLGATHER, "chorus:all_gather", outs, [&](Work& w) {
        at::Tensor flat = flat_bytes(outs, bytes_of(in) * outs.size());
        w.keep(flat);
        w.keep(in);
        w.on_success([flat, outs] { unflatten(flat, outs); });
        chorus_request_t req = nullptr;
        start_or_fail(w,
                      chorus_iallgather(in.data_ptr(), flat.data_ptr(), bytes_of(in), CHORUS_UINT8, comm_->handle,
                                        stream_of(in), &req),
                      req);
    });
}

c10::intrusive_ptr<c10d::Work> Backend::allgather_coalesced(std::vector<std::vector<at::Tensor>>& outputs,
                                                            std::vector<at::Tensor>& inputs,
                                                            const c10d::AllgatherOptions&) {
    // outputs[r][j] receives rank r's inputs[j].
    TORCH_CHECK_VALUE(outputs.size() == static_cast<size_t>(getSize()), "chorus: all_gather_coalesced takes ",
                      getSize(), " output lists");
    for (const auto& list : outputs) {
        TORCH_CHECK_VALUE(list.size() == inputs.size(), "chorus: all_gather_coalesced: an output list has ",
                          list.size(), " tensors for ", inputs.size(), " inputs");
        for (size_t j = 0; j < list.size(); ++j) {
            check_tensor(list[j], "all_gather_coalesced");
            same_kind(list[j], inputs[j], "all_gather_coalesced");
            TORCH_CHECK_VALUE(list[j].numel() == inputs[j].numel(), "chorus: all_gather_coalesced: sizes differ");
        }
    }
    for (const auto& t : inputs) check_tensor(t, "all_gather_coalesced");
    std::vector<at::Tensor> all;
    for (const auto& list : outputs) all.insert(all.end(), list.begin(), list.end());
    return launch(c10d::OpType::ALLGATHER_COALESCED, "chorus:all_gather_coalesced", all, [&](Work& w) {
        const size_t mine = [&] {
            size_t n = 0;
            for (const auto& t : inputs) n += bytes_of(t);
            return n;
        }();
        at::Tensor packed = flat_bytes(inputs.empty() ? all : inputs, std::max<size_t>(mine, 1));
        flatten(inputs, packed);
        at::Tensor flat = flat_bytes(inputs.empty() ? all : inputs, std::max<size_t>(mine, 1) * getSize());
        w.keep(packed);
        w.keep(flat);
        w.on_success([flat, all] { unflatten(flat, all); });
        chorus_request_t req = nullptr;
        start_or_fail(w,
                      chorus_iallgather(packed.data_ptr(), flat.data_ptr(), mine, CHORUS_UINT8, comm_->handle,
                                        stream_of(packed), &req),
                      req);
    });
}

c10::intrusive_ptr<c10d::Work> Backend::gather(std::vector<std::vector<at::Tensor>>& outputs,
                                               std::vector<at::Tensor>& inputs, const c10d::GatherOptions& opts) {
    const at::Tensor& in = single(inputs, "gather");
    const int root = static_cast<int>(opts.rootRank);
    check_root(root, getSize(), "gather");
    const std::vector<at::Tensor> outs = root_list(outputs, getRank() == root, getSize(), in, "gather", "output");
    return launch(c10d::OpType::GATHER, "chorus:gather", outs, [&](Work& w) {
        at::Tensor flat;
        if (!outs.empty()) {
            flat = flat_bytes(outs, bytes_of(in) * outs.size());
            w.keep(flat);
            w.on_success([flat, outs] { unflatten(flat, outs); });
        }
        w.keep(in);
        chorus_request_t req = nullptr;
        start_or_fail(w,
                      chorus_igather(in.data_ptr(), flat.defined() ? flat.data_ptr() : nullptr, bytes_of(in),
                                     CHORUS_UINT8, root, comm_->handle, stream_of(in), &req),
                      req);
    });
}

c10::intrusive_ptr<c10d::Work> Backend::scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ScatterOptions& opts) {
    const at::Tensor& out = single(outputs, "scatter");
    const int root = static_cast<int>(opts.rootRank);
    check_root(root, getSize(), "scatter");
    const std::vector<at::Tensor> ins = root_list(inputs, getRank() == root, getSize(), out, "scatter", "input");
    return launch(c10d::OpType::SCATTER, "chorus:scatter", outputs, [&](Work& w) {
        at::Tensor flat;
        if (!ins.empty()) {
            flat = flat_bytes(ins, bytes_of(out) * ins.size());
            flatten(ins, flat);
            w.keep(flat);
        }
        chorus_request_t req = nullptr;
        start_or_fail(w,
                      chorus_iscatter(flat.defined() ? flat.data_ptr() : nullptr, out.data_ptr(), bytes_of(out),
                                      CHORUS_UINT8, root, comm_->handle, stream_of(out), &req),
                      req);
    });
}

c10::intrusive_ptr<c10d::Work> Backend::all_to_all_single(at::Tensor& output, at::Tensor& input,
                                                          std::vector<int64_t>& output_splits,
                                                          std::vector<int64_t>& input_splits,
                                                          const c10d::AllToAllOptions&) {
    check_tensor(output, "all_to_all_single");
    check_tensor(input, "all_to_all_single");
    same_kind(output, input, "all_to_all_single");
    const size_t n = static_cast<size_t>(getSize());
    // Splits are rows of dimension 0; a row is the rest of the tensor.
    auto row_bytes = [](const at::Tensor& t) -> size_t {
        return t.dim() == 0 || t.size(0) == 0 ? static_cast<size_t>(t.element_size())
                                              : bytes_of(t) / static_cast<size_t>(t.size(0));
    };
    auto layout = [&](const at::Tensor& t, const std::vector<int64_t>& splits, const char* side) {
        std::vector<size_t> counts(n);
        if (splits.empty()) {
            TORCH_CHECK_VALUE(t.dim() > 0 && t.size(0) % static_cast<int64_t>(n) == 0, "chorus: all_to_all_single: the ",
                              side, "'s first dimension must divide by the group size ", n, " when no splits are given");
            for (auto& c : counts) c = bytes_of(t) / n;
        } else {
            TORCH_CHECK_VALUE(splits.size() == n, "chorus: all_to_all_single: ", splits.size(), " ", side,
                              " splits for a group of ", n);
            int64_t rows = 0;
            for (size_t i = 0; i < n; ++i) {
                TORCH_CHECK_VALUE(splits[i] >= 0, "chorus: all_to_all_single: a negative split");
                counts[i] = static_cast<size_t>(splits[i]) * row_bytes(t);
                rows += splits[i];
            }
            TORCH_CHECK_VALUE(t.dim() > 0 && rows == t.size(0), "chorus: all_to_all_single: the ", side,
                              " splits sum to ", rows, " rows, the tensor has ", t.dim() > 0 ? t.size(0) : 0);
        }
        return counts;
    };
    std::vector<size_t> scounts = layout(input, input_splits, "input");
    std::vector<size_t> rcounts = layout(output, output_splits, "output");
    std::vector<size_t> sdispls = offsets(scounts), rdispls = offsets(rcounts);
    // Without splits every rank sends equal blocks: an all-to-all whose size
    // every rank agrees on (chosen by size, as splits would not let it be).
    const bool even = input_splits.empty() && output_splits.empty();
    return launch(c10d::OpType::ALLTOALL_BASE, "chorus:all_to_all_single", {output}, [&](Work& w) {
        w.keep(input);
        chorus_request_t req = nullptr;
        if (even) {
            start_or_fail(w,
                          chorus_ialltoall(input.data_ptr(), output.data_ptr(), scounts[0], CHORUS_UINT8,
                                           comm_->handle, stream_of(output), &req),
                          req);
            return;
        }
        start_or_fail(w,
                      chorus_ialltoallv(input.data_ptr(), scounts.data(), sdispls.data(), output.data_ptr(),
                                        rcounts.data(), rdispls.data(), CHORUS_UINT8, comm_->handle,
                                        stream_of(output), &req),
                      req);
    });
}

c10::intrusive_ptr<c10d::Work> Backend::alltoall(std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
                                                 const c10d::AllToAllOptions&) {
    const size_t n = static_cast<size_t>(getSize());
    TORCH_CHECK_VALUE(outputs.size() == n && inputs.size() == n, "chorus: all_to_all takes ", n,
                      " input and output tensors");
    for (size_t i = 0; i < n; ++i) {
        check_tensor(outputs[i], "all_to_all");
        check_tensor(inputs[i], "all_to_all");
        same_kind(outputs[i], inputs[0], "all_to_all");
        same_kind(inputs[i], inputs[0], "all_to_all");
    }
    std::vector<size_t> scounts = byte_sizes(inputs), rcounts = byte_sizes(outputs);
    std::vector<size_t> sdispls = offsets(scounts), rdispls = offsets(rcounts);
    return launch(c10d::OpType::ALLTOALL, "chorus:all_to_all", outputs, [&](Work& w) {
        at::Tensor sflat = flat_bytes(inputs, std::max<size_t>(sdispls.back() + scounts.back(), 1));
        at::Tensor rflat = flat_bytes(outputs, std::max<size_t>(rdispls.back() + rcounts.back(), 1));
        flatten(inputs, sflat);
        w.keep(sflat);
        w.keep(rflat);
        std::vector<at::Tensor> outs = outputs;
        w.on_success([rflat, outs] { unflatten(rflat, outs); });
        chorus_request_t req = nullptr;
        start_or_fail(w,
                      chorus_ialltoallv(sflat.data_ptr(), scounts.data(), sdispls.data(), rflat.data_ptr(),
                                        rcounts.data(), rdispls.data(), CHORUS_UINT8, comm_->handle,
                                        stream_of(rflat), &req),
                      req);
    });
}

c10::intrusive_ptr<c10d::Work> Backend::barrier(const c10d::BarrierOptions&) {
    return launch(c10d::OpType::BARRIER, "chorus:barrier", {}, [&](Work& w) {
        chorus_request_t req = nullptr;
        start_or_fail(w, chorus_ibarrier(comm_->handle, nullptr, &req), req);
    });
}

// ------------------------------------------------------------ point-to-point

c10::intrusive_ptr<c10d::Work> Backend::send(std::vector<at::Tensor>& tensors, int dst, int tag) {
    const at::Tensor& t = single(tensors, "send");
    check_peer(dst, tag, getRank(), getSize(), "send");
    return launch(c10d::OpType::SEND, "chorus:send", tensors, [&](Work& w) {
        chorus_request_t req = nullptr;
        start_or_fail(w, chorus_isend(t.data_ptr(), bytes_of(t), CHORUS_UINT8, dst, tag, comm_->handle, stream_of(t),
                                      &req),
                      req);
    });
}

c10::intrusive_ptr<c10d::Work> Backend::recv(std::vector<at::Tensor>& tensors, int src, int tag) {
    const at::Tensor& t = single(tensors, "recv");
    check_peer(src, tag, getRank(), getSize(), "recv");
    return launch(c10d::OpType::RECV, "chorus:recv", tensors, [&](Work& w) {
        chorus_request_t req = nullptr;
        start_or_fail(w, chorus_irecv(t.data_ptr(), bytes_of(t), CHORUS_UINT8, src, tag, comm_->handle, stream_of(t),
                                      &req),
                      req);
    });
}

}  // namespace chorus_c10d
