// The module chorus._chorus: its classes, enums and functions.
#include <nanobind/stl/string.h>

#include <deque>
#include <string>

#include "binding.h"
#include "collectives.h"
#include "docs.h"

namespace chorus_py {

namespace {

// The single chorus.IN_PLACE: an instance of a type of its own, compared
// by identity (the module's attribute holds the reference).
struct InPlace {};
PyObject* g_in_place = nullptr;

// A docstring built at import, kept for the life of the process.
const char* keep_doc(std::string doc) {
    static std::deque<std::string> docs;
    return docs.emplace_back(std::move(doc)).c_str();
}

// Each collective twice: blocking (returns the result's array) and
// nonblocking (returns a Request), with the same arguments.
template <typename... A, typename... Extra>
void def_collective(nb::class_<Communicator>& cls, const char* name, void (*prep)(Communicator&, Call&, A...),
                    const char* doc, const Extra&... extra) {
    const char* blocking_doc = keep_doc(std::string(doc) + docs::kStream);
    const char* nonblocking_doc =
        keep_doc(std::string("The nonblocking twin of ") + name + docs::kNonblocking + doc + docs::kStream);
    const char* iname = keep_doc(std::string("i") + name);
    cls.def(
        name,
        [prep](Communicator& self, A... a) {
            Call call;
            prep(self, call, a...);
            return self.run(call);
        },
        extra..., blocking_doc);
    cls.def(
        iname,
        [prep](Communicator& self, A... a) {
            Call call;
            prep(self, call, a...);
            return self.start(call);
        },
        extra..., nonblocking_doc);
}

}  // namespace

bool is_in_place(nb::handle obj) {
    return obj.ptr() == g_in_place;
}

}  // namespace chorus_py

NB_MODULE(_chorus, m) {
    using namespace chorus_py;
    namespace nb = nanobind;
    m.doc() = docs::kModule;
    m.attr("__version__") = CHORUS_PY_VERSION;

    nb::enum_<chorus_op_t>(m, "Op", "Reduction operators (chorus_op_t).")
        .value("SUM", CHORUS_SUM)
        .value("PROD", CHORUS_PROD)
        .value("MIN", CHORUS_MIN, "fmin on floating types: a NaN loses to a number")
        .value("MAX", CHORUS_MAX, "fmax on floating types: a NaN loses to a number")
        .value("AVG", CHORUS_AVG, "the sum divided by the number of ranks (truncated for integers)")
        .value("BAND", CHORUS_BAND)
        .value("BOR", CHORUS_BOR)
        .value("BXOR", CHORUS_BXOR)
        .value("LAND", CHORUS_LAND)
        .value("LOR", CHORUS_LOR)
        .value("LXOR", CHORUS_LXOR);

    nb::enum_<chorus_result_t>(m, "Result", "Result codes of the C API (chorus_result_t).", nb::is_arithmetic())
        .value("SUCCESS", CHORUS_SUCCESS)
        .value("ERR_INVALID_ARGUMENT", CHORUS_ERR_INVALID_ARGUMENT)
        .value("ERR_UNSUPPORTED", CHORUS_ERR_UNSUPPORTED)
        .value("ERR_OUT_OF_MEMORY", CHORUS_ERR_OUT_OF_MEMORY)
        .value("ERR_TRANSPORT", CHORUS_ERR_TRANSPORT)
        .value("ERR_CUDA", CHORUS_ERR_CUDA)
        .value("ERR_TIMEOUT", CHORUS_ERR_TIMEOUT)
        .value("ERR_PEER_FAILED", CHORUS_ERR_PEER_FAILED)
        .value("ERR_COMM_FAILED", CHORUS_ERR_COMM_FAILED)
        .value("ERR_MISMATCH", CHORUS_ERR_MISMATCH)
        .value("ERR_INTERNAL", CHORUS_ERR_INTERNAL)
        .value("ERR_CONFIG", CHORUS_ERR_CONFIG);

    nb::class_<InPlace>(m, "_InPlaceType")
        .def("__repr__", [](const InPlace&) { return "chorus.IN_PLACE"; })
        .def("__reduce__", [](const InPlace&) { return "IN_PLACE"; });
    nb::object in_place = nb::cast(InPlace{});
    g_in_place = in_place.ptr();
    m.attr("IN_PLACE") = in_place;

    nb::class_<Request>(m, "Request", docs::kRequest)
        .def("wait", &Request::wait, "Block until the collective completes; return the result's array.")
        .def("test", &Request::test, "Progress the collective; return True once it has completed.")
        .def_prop_ro("done", &Request::done, "Whether completion has been seen (by wait or test).");

    nb::class_<Communicator> comm(m, "Communicator", docs::kCommunicator);
    comm.def(nb::init<nb::handle>(), nb::arg("comm").none() = nb::none())
        .def_static(
            "from_oob",
            [](int rank, int size, nb::handle allgather) { return new Communicator(rank, size, allgather); },
            nb::arg("rank"), nb::arg("size"), nb::arg("allgather"), nb::rv_policy::take_ownership, docs::kFromOob)
        .def_prop_ro("rank", &Communicator::rank, "This process's rank in the communicator.")
        .def_prop_ro("size", &Communicator::size, "The number of ranks.")
        .def_prop_ro("closed", &Communicator::closed, "Whether close() has been called.")
        .def("close", &Communicator::close, "Complete the operations in flight and free the communicator. Idempotent.")
        .def(
            "register", [](Communicator& self, nb::handle a) { self.window(a, true); }, nb::arg("array"),
            docs::kRegister)
        .def(
            "deregister", [](Communicator& self, nb::handle a) { self.window(a, false); }, nb::arg("array"),
            "Deregister the window that starts at `array` (collective; every rank its own).")
        .def("set_label", &Communicator::set_label, nb::arg("label").none(),
             "Label the operations this rank starts from now on (traces, hang reports); None removes it.")
        .def(
            "__enter__", [](Communicator& self) -> Communicator& { return self; }, nb::rv_policy::reference)
        .def("__exit__", [](Communicator& self, nb::args) { self.close(); })
        .def("__repr__", [](const Communicator& self) {
            if (self.closed()) return std::string("<chorus.Communicator (closed)>");
            return "<chorus.Communicator rank " + std::to_string(self.rank()) + " of " + std::to_string(self.size()) +
                   ">";
        });

    const nb::object sum = nb::cast(CHORUS_SUM);
    auto none = [] { return nb::none(); };
    using nb::arg;
    // Buffers, counts and streams may be None (what a rank does not use).
    def_collective(comm, "allreduce", &prep_allreduce, docs::kAllreduce, arg("sendbuf").none(),
                   arg("recvbuf").none() = none(), arg("op") = sum, nb::kw_only(), arg("stream").none() = none());
    def_collective(comm, "broadcast", &prep_broadcast, docs::kBroadcast, arg("sendbuf").none(),
                   arg("recvbuf").none() = none(), arg("root") = 0, nb::kw_only(), arg("stream").none() = none());
    def_collective(comm, "reduce", &prep_reduce, docs::kReduce, arg("sendbuf").none(), arg("recvbuf").none() = none(),
                   arg("op") = sum, arg("root") = 0, nb::kw_only(), arg("stream").none() = none());
    def_collective(comm, "reduce_scatter", &prep_reduce_scatter, docs::kReduceScatter, arg("sendbuf").none(),
                   arg("recvbuf").none(), arg("op") = sum, nb::kw_only(), arg("stream").none() = none());
    def_collective(comm, "reduce_scatterv", &prep_reduce_scatterv, docs::kReduceScatterv, arg("sendbuf").none(),
                   arg("recvbuf").none(), arg("recvcounts").none(), arg("op") = sum, nb::kw_only(),
                   arg("stream").none() = none());
    def_collective(comm, "allgather", &prep_allgather, docs::kAllgather, arg("sendbuf").none(), arg("recvbuf").none(),
                   nb::kw_only(), arg("stream").none() = none());
    def_collective(comm, "allgatherv", &prep_allgatherv, docs::kAllgatherv, arg("sendbuf").none(),
                   arg("recvbuf").none(), arg("recvcounts").none(), arg("displs").none() = none(), nb::kw_only(),
                   arg("stream").none() = none());
    def_collective(comm, "alltoall", &prep_alltoall, docs::kAlltoall, arg("sendbuf").none(),
                   arg("recvbuf").none() = none(), nb::kw_only(), arg("stream").none() = none());
    def_collective(comm, "alltoallv", &prep_alltoallv, docs::kAlltoallv, arg("sendbuf").none(), arg("recvbuf").none(),
                   arg("sendcounts").none(), arg("recvcounts").none(), arg("sdispls").none() = none(),
                   arg("rdispls").none() = none(), nb::kw_only(), arg("stream").none() = none());
    def_collective(comm, "gather", &prep_gather, docs::kGather, arg("sendbuf").none(), arg("recvbuf").none() = none(),
                   arg("root") = 0, nb::kw_only(), arg("stream").none() = none());
    def_collective(comm, "gatherv", &prep_gatherv, docs::kGatherv, arg("sendbuf").none(),
                   arg("recvbuf").none() = none(), arg("recvcounts").none() = none(), arg("displs").none() = none(),
                   arg("root") = 0, nb::kw_only(), arg("stream").none() = none());
    def_collective(comm, "scatter", &prep_scatter, docs::kScatter, arg("sendbuf").none(), arg("recvbuf").none(),
                   arg("root") = 0, nb::kw_only(), arg("stream").none() = none());
    def_collective(comm, "scatterv", &prep_scatterv, docs::kScatterv, arg("sendbuf").none(), arg("recvbuf").none(),
                   arg("sendcounts").none() = none(), arg("displs").none() = none(), arg("root") = 0, nb::kw_only(),
                   arg("stream").none() = none());
    def_collective(comm, "barrier", &prep_barrier, docs::kBarrier, nb::kw_only(), arg("stream").none() = none());

    m.def(
        "has_cuda", [] { return chorus_has_cuda() != 0; },
        "Whether Chorus was built with CUDA (device arrays work where a GPU is present).");
    m.def(
        "setting",
        [](const std::string& name) {
            const char* value = nullptr;
            const chorus_result_t rc = chorus_setting(name.c_str(), &value);
            if (rc != CHORUS_SUCCESS) raise_chorus(rc, chorus_comm_last_error(nullptr));
            return std::string(value);
        },
        nb::arg("name"), "The value a communicator created now would use for the CHORUS_* setting `name`.");
    m.def("_mapped_bytes", &mapped_bytes, nb::arg("nbytes"),
          "A uint8 NumPy array of nbytes (at least 1) in mapped memory (chorus_mem_alloc); see mapped_empty.");
    m.def("_shutdown", &shutdown, "Close every communicator, then finalize MPI if this module initialized it.");
    m.def("_initialized_mpi", &initialized_mpi, "Whether this module called MPI_Init_thread.");
    m.def("_mpi_world", &mpi_world, nb::arg("root_info"),
          "(rank, size, local rank, local size, rank 0's root_info) of MPI_COMM_WORLD, initializing MPI if needed. "
          "Collective over MPI_COMM_WORLD.");
}
