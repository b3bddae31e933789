// chorus._c10d: the backend's constructor for chorus.torch, which registers
// it with torch.distributed. Built against the installed torch's headers
// with its pybind11, so that the Backend and Store types are torch's own.
#include <torch/csrc/utils/pybind.h>

#include "backend.h"

namespace py = pybind11;

PYBIND11_MODULE(_c10d, m) {
    m.doc() = "The torch.distributed backend 'chorus' (use chorus.torch).";
    py::module_::import("torch.distributed");

    py::class_<chorus_c10d::Backend, c10d::Backend, c10::intrusive_ptr<chorus_c10d::Backend>>(m, "Backend");

    m.def(
        "create",
        [](const c10::intrusive_ptr<c10d::Store>& store, int rank, int size, int64_t timeout_ms,
           const std::string& group_name, const std::vector<uint64_t>& global_ranks) {
            auto options = c10::make_intrusive<chorus_c10d::Backend::Options>(std::chrono::milliseconds(timeout_ms));
            options->group_name = group_name;
            options->global_ranks_in_group = global_ranks;
            return c10::make_intrusive<chorus_c10d::Backend>(store, rank, size, options);
        },
        py::arg("store"), py::arg("rank"), py::arg("size"), py::arg("timeout_ms"), py::arg("group_name"),
        py::arg("global_ranks"), py::call_guard<py::gil_scoped_release>(),
        "Create the backend of one group: collective over its ranks, through `store`.");
    m.def("has_cuda", [] {
#ifdef CHORUS_C10D_CUDA
        return chorus_has_cuda() != 0;
#else
        return false;
#endif
    });
}
