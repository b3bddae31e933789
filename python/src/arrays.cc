// Arrays and small arguments: what a Python value means to the C API.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>

#include "binding.h"

namespace chorus_py {

namespace {

using nb::dlpack::dtype_code;

// nanobind's DLPack device types that hold memory Chorus can address: host,
// CUDA device, pinned host, managed.
bool usable_device(int device_type) {
    return device_type == nb::device::cpu::value || device_type == nb::device::cuda::value ||
           device_type == nb::device::cuda_host::value || device_type == nb::device::cuda_managed::value;
}

std::string kind_of(nb::handle obj) {
    return nb::type_name(obj.type()).c_str();
}

// Dense in C order. Extents of one element (and empty arrays) may carry any
// stride: no element is reached through them.
template <typename Nd>
bool c_contiguous(const Nd& a) {
    if (a.size() <= 1) return true;
    int64_t expected = 1;
    for (size_t i = a.ndim(); i-- > 0;) {
        if (a.shape(i) != 1 && a.stride(i) != expected) return false;
        expected *= static_cast<int64_t>(a.shape(i));
    }
    return true;
}

// What a DLPack import must be (the buffer protocol's are in from_buffer).
template <typename Nd>
void check_array(const Nd& a, const char* name) {
    if (!usable_device(a.device_type()))
        throw nb::type_error((std::string(name) + ": arrays on DLPack device type " + std::to_string(a.device_type()) +
                              " are not supported (host and CUDA memory are)")
                                 .c_str());
    // Without CUDA every pointer is taken for host memory: a device array
    // must not get that far.
    if (a.device_type() == nb::device::cuda::value && !chorus_has_cuda())
        throw nb::type_error(
            (std::string(name) + ": a CUDA device array, and this Chorus is built without CUDA").c_str());
    const nb::dlpack::dtype d = a.dtype();
    if (d.lanes != 1 || d.bits == 0 || d.bits % 8 != 0)
        throw nb::type_error((std::string(name) + ": element type " + dtype_name(d) + " is not supported").c_str());
    if (!c_contiguous(a))
        throw nb::value_error(
            (std::string(name) + " is not C-contiguous: pass a contiguous array (e.g. a copy)").c_str());
}

[[noreturn]] void not_an_array(nb::handle obj, const char* name) {
    throw nb::type_error(
        (std::string(name) + " must be an array that exports DLPack or the buffer protocol, not " + kind_of(obj))
            .c_str());
}

}  // namespace

std::string dtype_name(nb::dlpack::dtype d) {
    const char* base = nullptr;
    switch (static_cast<dtype_code>(d.code)) {
        case dtype_code::Int: base = "int"; break;
        case dtype_code::UInt: base = "uint"; break;
        case dtype_code::Float: base = "float"; break;
        case dtype_code::Bfloat: base = "bfloat"; break;
        case dtype_code::Complex: base = "complex"; break;
        case dtype_code::Bool: return "bool";
        default: return "DLPack type code " + std::to_string(d.code) + " of " + std::to_string(d.bits) + " bits";
    }
    std::string s = base + std::to_string(d.bits);
    if (d.lanes != 1) s += "x" + std::to_string(d.lanes);
    return s;
}

namespace {

// A buffer-protocol format of one plain number -> its DLPack type; false
// for anything else (structs, pointers, characters), left to DLPack.
bool format_dtype(const char* f, Py_ssize_t itemsize, nb::dlpack::dtype* out) {
    if (!f) f = "B";
    // Native byte order only ('<' is native on a little-endian host).
    constexpr bool little = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__;
    if (*f == '@' || *f == '=' || (*f == '<' && little)) ++f;
    bool complex = false;
    if (*f == 'Z') {
        complex = true;
        ++f;
    }
    if (!*f || f[1] || itemsize <= 0 || itemsize > 32) return false;
    dtype_code code;
    if (std::strchr("bhilqn", *f))
        code = dtype_code::Int;
    else if (std::strchr("BHILQN", *f))
        code = dtype_code::UInt;
    else if (std::strchr("efdg", *f))
        code = dtype_code::Float;
    else if (*f == '?')
        code = dtype_code::Bool;
    else
        return false;
    if (complex) {
        if (code != dtype_code::Float) return false;
        code = dtype_code::Complex;
    }
    out->code = static_cast<uint8_t>(code);
    out->bits = static_cast<uint8_t>(itemsize * 8);
    out->lanes = 1;
    return true;
}

// The buffer protocol's way in; false (nothing raised) where the object has
// none or one this module does not read, for DLPack to try.
bool from_buffer(nb::handle obj, bool writable, const char* name, Array* a) {
    if (!PyObject_CheckBuffer(obj.ptr())) return false;
    std::unique_ptr<Py_buffer> raw(new Py_buffer);
    if (PyObject_GetBuffer(obj.ptr(), raw.get(), PyBUF_RECORDS_RO) != 0) {
        PyErr_Clear();
        return false;
    }
    std::unique_ptr<Py_buffer, BufferRelease> view(raw.release());
    constexpr char foreign = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? '>' : '<';
    if (view->format && (view->format[0] == foreign || view->format[0] == '!'))
        throw nb::type_error((std::string(name) + ": byte order is not native (use .astype with '=')").c_str());
    if (!format_dtype(view->format, view->itemsize, &a->dtype)) return false;
    if (writable && view->readonly)
        throw nb::value_error((std::string(name) + " is read-only: results need a writable array").c_str());
    if (!PyBuffer_IsContiguous(view.get(), 'C'))
        throw nb::value_error(
            (std::string(name) + " is not C-contiguous: pass a contiguous array (e.g. a copy)").c_str());
    a->data = static_cast<char*>(view->buf);
    a->size = static_cast<size_t>(view->len / view->itemsize);
    a->held.view = std::move(view);
    return true;
}

// DLPack: torch, CuPy and the rest (and what the buffer protocol left).
template <bool Writable>
Array from_dlpack(nb::handle obj, const char* name) {
    // No conversion: nanobind would copy a strided or mistyped array, and a
    // result written into a copy is lost.
    Array a;
    nb::ndarray<nb::ro> ro;
    if constexpr (Writable) {
        nb::ndarray<> rw;
        if (!nb::try_cast(obj, rw, false)) {
            // Tell a read-only array from no array at all.
            if (nb::try_cast(obj, ro, false))
                throw nb::value_error((std::string(name) + " is read-only: results need a writable array").c_str());
            not_an_array(obj, name);
        }
        check_array(rw, name);
        a.data = static_cast<char*>(rw.data());
        a.size = rw.size();
        a.dtype = rw.dtype();
        ro = nb::ndarray<nb::ro>(rw);
    } else {
        if (!nb::try_cast(obj, ro, false)) not_an_array(obj, name);
        check_array(ro, name);
        a.data = const_cast<char*>(static_cast<const char*>(ro.data()));
        a.size = ro.size();
        a.dtype = ro.dtype();
    }
    a.held.dlpack = std::move(ro);
    return a;
}

}  // namespace

Input input_array(nb::handle obj, const char* name) {
    Array a;
    if (from_buffer(obj, false, name, &a)) return a;
    return from_dlpack<false>(obj, name);
}

Output output_array(nb::handle obj, const char* name) {
    Array a;
    if (from_buffer(obj, true, name, &a)) return a;
    return from_dlpack<true>(obj, name);
}

Elem element_of(nb::dlpack::dtype d, const chorus_op_t* op) {
    Elem e;
    e.itemsize = d.bits / 8;
    const bool integer =
        d.code == static_cast<uint8_t>(dtype_code::Int) || d.code == static_cast<uint8_t>(dtype_code::UInt);
    bool native = true;
    switch (d.bits) {
        case 8:
            if (integer)
                e.dtype = d.code == static_cast<uint8_t>(dtype_code::Int) ? CHORUS_INT8 : CHORUS_UINT8;
            else
                native = false;
            break;
        case 16:
            if (integer)
                e.dtype = d.code == static_cast<uint8_t>(dtype_code::Int) ? CHORUS_INT16 : CHORUS_UINT16;
            else if (d.code == static_cast<uint8_t>(dtype_code::Float))
                e.dtype = CHORUS_FLOAT16;
            else if (d.code == static_cast<uint8_t>(dtype_code::Bfloat))
                e.dtype = CHORUS_BFLOAT16;
            else
                native = false;
            break;
        case 32:
            if (integer)
                e.dtype = d.code == static_cast<uint8_t>(dtype_code::Int) ? CHORUS_INT32 : CHORUS_UINT32;
            else if (d.code == static_cast<uint8_t>(dtype_code::Float))
                e.dtype = CHORUS_FLOAT32;
            else
                native = false;
            break;
        case 64:
            if (integer)
                e.dtype = d.code == static_cast<uint8_t>(dtype_code::Int) ? CHORUS_INT64 : CHORUS_UINT64;
            else if (d.code == static_cast<uint8_t>(dtype_code::Float))
                e.dtype = CHORUS_FLOAT64;
            else
                native = false;
            break;
        default: native = false;
    }
    const bool is_bool = d.code == static_cast<uint8_t>(dtype_code::Bool) && d.bits == 8;
    if (!native) {
        // Moved as bytes; reduced only where the bytes' arithmetic is the
        // type's: bool (0 or 1 in a byte) under the ops that keep 0 and 1.
        e.dtype = CHORUS_UINT8;
        e.scale = is_bool ? 1 : e.itemsize;
    }
    if (!op) return e;
    const bool bitwise = *op == CHORUS_BAND || *op == CHORUS_BOR || *op == CHORUS_BXOR || *op == CHORUS_LAND ||
                         *op == CHORUS_LOR || *op == CHORUS_LXOR;
    if (is_bool) {
        if (bitwise || *op == CHORUS_MIN || *op == CHORUS_MAX) return e;
        throw nb::type_error(
            "bool arrays reduce with min, max and the bitwise and logical ops only "
            "(sum, prod and avg would leave 0 and 1)");
    }
    if (!native)
        throw nb::type_error(("Chorus does not reduce " + dtype_name(d) +
                              " arrays (reductions take int8..int64, uint8..uint64, float16, bfloat16, float32, "
                              "float64 and bool)")
                                 .c_str());
    if (bitwise && !integer)
        throw nb::type_error(("bitwise and logical ops take integer (or bool) arrays, not " + dtype_name(d)).c_str());
    return e;
}

void same_dtype(nb::dlpack::dtype a, nb::dlpack::dtype b, const char* what) {
    if (a != b)
        throw nb::type_error(
            (std::string(what) + " must have the same element type: " + dtype_name(a) + " and " + dtype_name(b))
                .c_str());
}

chorus_op_t op_arg(nb::handle obj) {
    chorus_op_t op;
    if (nb::try_cast(obj, op, false)) return op;
    if (nb::isinstance<nb::str>(obj)) {
        static const struct {
            const char* name;
            chorus_op_t op;
        } kNames[] = {{"sum", CHORUS_SUM},   {"prod", CHORUS_PROD}, {"min", CHORUS_MIN},  {"max", CHORUS_MAX},
                      {"avg", CHORUS_AVG},   {"band", CHORUS_BAND}, {"bor", CHORUS_BOR},  {"bxor", CHORUS_BXOR},
                      {"land", CHORUS_LAND}, {"lor", CHORUS_LOR},   {"lxor", CHORUS_LXOR}};
        const char* s = nb::borrow<nb::str>(obj).c_str();
        for (const auto& n : kNames)
            if (std::strcmp(s, n.name) == 0) return n.op;
        throw nb::value_error(
            (std::string("unknown op '") + s + "': one of sum, prod, min, max, avg, band, bor, bxor, land, lor, lxor")
                .c_str());
    }
    throw nb::type_error(("op must be a chorus.Op or its name, not " + kind_of(obj)).c_str());
}

void* stream_arg(nb::handle obj) {
    if (obj.is_none()) return nullptr;
    nb::object handle;
    if (nb::hasattr(obj, "__cuda_stream__")) {
        // The CUDA stream protocol: (version, address).
        nb::object t = obj.attr("__cuda_stream__")();
        if (nb::isinstance<nb::tuple>(t) && nb::len(t) == 2) handle = t[1];
    } else if (nb::hasattr(obj, "cuda_stream")) {
        handle = obj.attr("cuda_stream");  // torch.cuda.Stream
    } else if (nb::hasattr(obj, "ptr")) {
        handle = obj.attr("ptr");  // cupy.cuda.Stream
    }
    uintptr_t address = 0;
    if (!handle.is_valid() || !nb::try_cast(handle, address, false))
        throw nb::type_error(("stream must be None or a CUDA stream object (torch.cuda.Stream, cupy.cuda.Stream, "
                              "or one with __cuda_stream__), not " +
                              kind_of(obj))
                                 .c_str());
    return reinterpret_cast<void*>(address);
}

std::vector<size_t> counts_arg(nb::handle obj, int size, const char* name) {
    if (obj.is_none()) throw nb::type_error((std::string(name) + " is required (one count per rank)").c_str());
    nb::object seq = nb::steal(PySequence_Fast(obj.ptr(), ""));
    if (!seq.is_valid()) {
        PyErr_Clear();
        throw nb::type_error(
            (std::string(name) + " must be a sequence of integers (one per rank), not " + kind_of(obj)).c_str());
    }
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq.ptr());
    if (n != size)
        throw nb::value_error(
            (std::string(name) + " has " + std::to_string(n) + " entries; there are " + std::to_string(size) + " ranks")
                .c_str());
    std::vector<size_t> out(static_cast<size_t>(n));
    PyObject** items = PySequence_Fast_ITEMS(seq.ptr());
    for (Py_ssize_t i = 0; i < n; ++i) {
        nb::object index = nb::steal(PyNumber_Index(items[i]));
        if (!index.is_valid()) {
            PyErr_Clear();
            throw nb::type_error((std::string(name) + "[" + std::to_string(i) + "] is not an integer").c_str());
        }
        int overflow = 0;
        const long long v = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
        if (overflow || v < 0)
            throw nb::value_error((std::string(name) + "[" + std::to_string(i) +
                                   "] must be a non-negative count, not " + nb::str(index).c_str())
                                      .c_str());
        out[static_cast<size_t>(i)] = static_cast<size_t>(v);
    }
    return out;
}

std::vector<size_t> displs_arg(nb::handle obj, const std::vector<size_t>& counts, const char* name) {
    if (!obj.is_none()) return counts_arg(obj, static_cast<int>(counts.size()), name);
    std::vector<size_t> out(counts.size());
    size_t at = 0;
    for (size_t i = 0; i < counts.size(); ++i) {
        out[i] = at;
        at += counts[i];
    }
    return out;
}

size_t blocks_extent(const std::vector<size_t>& counts, const std::vector<size_t>& displs, const char* name) {
    size_t end = 0;
    for (size_t i = 0; i < counts.size(); ++i) {
        if (!counts[i]) continue;
        // Every extent is then compared with a real array's size, which
        // bounds the counts and their scaling to bytes.
        if (displs[i] > SIZE_MAX - counts[i])
            throw nb::value_error(
                (std::string(name) + ": block " + std::to_string(i) + " ends past any array").c_str());
        end = std::max(end, displs[i] + counts[i]);
    }
    return end;
}

nb::object mapped_bytes(size_t bytes) {
    void* p = nullptr;
    const chorus_result_t rc = chorus_mem_alloc(std::max<size_t>(bytes, 1), &p);
    if (rc != CHORUS_SUCCESS) raise_chorus(rc, chorus_comm_last_error(nullptr));
    nb::capsule owner(p, [](void* q) noexcept { chorus_mem_free(q); });
    const size_t shape[1] = {std::max<size_t>(bytes, 1)};
    return nb::cast(nb::ndarray<nb::numpy, uint8_t, nb::ndim<1>>(p, 1, shape, owner));
}

}  // namespace chorus_py
