// Each collective's Python arguments, checked and turned into one Call of
// the C API. Sizes come from the arrays: a buffer's element count is the
// count, and what must agree between the buffers of one rank is checked
// here (ValueError), before anything is sent. The in-place forms are the C
// API's: chorus.IN_PLACE for sendbuf (or, for scatter, recvbuf) names them,
// and an omitted recvbuf where input and result have one shape.
#include "collectives.h"

namespace chorus_py {

namespace {

[[noreturn]] void size_error(const std::string& message) {
    throw nb::value_error(message.c_str());
}

std::string n_elements(size_t n) {
    return std::to_string(n) + (n == 1 ? " element" : " elements");
}

// Counts in array elements -> Chorus elements.
void scale_counts(std::vector<size_t>& v, size_t scale) {
    if (scale != 1)
        for (size_t& x : v) x *= scale;
}

void set_elem(Call& c, const Elem& e) {
    c.dtype = e.dtype;
}

// Input and Output are one type: keep_send and keep_recv say which side.
void keep_send(Call& c, Array&& in) {
    c.send_held = std::move(in.held);
}
void keep_recv(Call& c, Array&& out) {
    c.recv_held = std::move(out.held);
}

// A rank other than the root of a gather(v): it only sends `sendbuf`.
void leaf_sends(Call& c, nb::handle sendbuf, const char* fn) {
    if (is_in_place(sendbuf)) size_error(std::string(fn) + ": IN_PLACE is for the root only");
    Input in = input_array(sendbuf, "sendbuf");
    const Elem e = element_of(in.dtype, nullptr);
    set_elem(c, e);
    c.send = in.data;
    c.count = in.size * e.scale;
    keep_send(c, std::move(in));
}

// A rank other than the root of a scatter(v): it only receives `recvbuf`.
void leaf_receives(Call& c, nb::handle recvbuf, const char* fn) {
    if (is_in_place(recvbuf)) size_error(std::string(fn) + ": IN_PLACE is for the root only");
    Output out = output_array(recvbuf, "recvbuf");
    const Elem e = element_of(out.dtype, nullptr);
    set_elem(c, e);
    c.recv = out.data;
    c.count = out.size * e.scale;
    keep_recv(c, std::move(out));
}

// The count of a buffer split into one block per rank.
size_t per_rank(size_t elements, int size, const char* name) {
    if (elements % static_cast<size_t>(size))
        size_error(std::string(name) + " has " + n_elements(elements) + ", not a multiple of the " +
                   std::to_string(size) + " ranks");
    return elements / static_cast<size_t>(size);
}

// The two buffers of a collective whose input and result have one size
// (all-reduce, all-to-all, the reduce's root): recvbuf None -> in place in
// sendbuf. Sets the buffers and value; returns the element mapping and
// leaves c.count in array elements, for the caller to split and scale.
Elem same_size_pair(Call& c, nb::handle sendbuf, nb::handle recvbuf, const chorus_op_t* op, const char* fn) {
    if (recvbuf.is_none() || is_in_place(sendbuf)) {
        const bool omitted = recvbuf.is_none();
        if (omitted && is_in_place(sendbuf)) size_error(std::string(fn) + ": IN_PLACE needs recvbuf");
        Output out = output_array(omitted ? sendbuf : recvbuf, omitted ? "sendbuf (the result, in place)" : "recvbuf");
        const Elem e = element_of(out.dtype, op);
        set_elem(c, e);
        c.send = c.recv = out.data;
        c.count = out.size;
        c.value = nb::borrow(omitted ? sendbuf : recvbuf);
        keep_recv(c, std::move(out));
        return e;
    }
    Input in = input_array(sendbuf, "sendbuf");
    Output out = output_array(recvbuf, "recvbuf");
    same_dtype(in.dtype, out.dtype, "sendbuf and recvbuf");
    if (in.size != out.size)
        size_error(std::string(fn) + ": sendbuf has " + n_elements(in.size) + " but recvbuf " + n_elements(out.size));
    const Elem e = element_of(in.dtype, op);
    set_elem(c, e);
    c.send = in.data;
    c.recv = out.data;
    c.count = in.size;
    c.value = nb::borrow(recvbuf);
    keep_send(c, std::move(in));
    keep_recv(c, std::move(out));
    return e;
}

void check_root(Communicator& self, int root, const char* fn) {
    if (root < 0 || root >= self.size())
        size_error(std::string(fn) + ": root " + std::to_string(root) + " is out of range for " +
                   std::to_string(self.size()) + " ranks");
}

}  // namespace

void prep_allreduce(Communicator&, Call& c, nb::handle sendbuf, nb::handle recvbuf, nb::handle op, nb::handle stream) {
    c.coll = Coll::Allreduce;
    c.op = op_arg(op);
    c.stream = stream_arg(stream);
    c.count *= same_size_pair(c, sendbuf, recvbuf, &c.op, "allreduce").scale;
}

void prep_alltoall(Communicator& self, Call& c, nb::handle sendbuf, nb::handle recvbuf, nb::handle stream) {
    c.coll = Coll::Alltoall;
    c.stream = stream_arg(stream);
    const Elem e = same_size_pair(c, sendbuf, recvbuf, nullptr, "alltoall");
    c.count = per_rank(c.count, self.size(), recvbuf.is_none() ? "sendbuf" : "recvbuf") * e.scale;
}

void prep_broadcast(Communicator& self, Call& c, nb::handle sendbuf, nb::handle recvbuf, int root, nb::handle stream) {
    c.coll = Coll::Broadcast;
    c.root = root;
    check_root(self, root, "broadcast");
    c.stream = stream_arg(stream);
    const bool is_root = self.rank() == root;
    const bool in_place = recvbuf.is_none() || is_in_place(sendbuf);
    nb::handle buf = recvbuf.is_none() ? sendbuf : recvbuf;
    if (recvbuf.is_none() && is_in_place(sendbuf)) size_error("broadcast: IN_PLACE needs recvbuf");
    c.value = nb::borrow(buf);
    if (in_place && is_root) {
        // The root's buffer is only read: a read-only array will do.
        Input in = input_array(buf, recvbuf.is_none() ? "sendbuf" : "recvbuf");
        const Elem e = element_of(in.dtype, nullptr);
        set_elem(c, e);
        c.send = in.data;
        c.recv = in.data;
        c.count = in.size * e.scale;
        keep_send(c, std::move(in));
        return;
    }
    Output out = output_array(buf, recvbuf.is_none() ? "sendbuf (the broadcast's result)" : "recvbuf");
    const Elem e = element_of(out.dtype, nullptr);
    set_elem(c, e);
    c.recv = out.data;
    c.count = out.size * e.scale;
    if (in_place) {
        c.send = out.data;
    } else if (is_root) {
        Input in = input_array(sendbuf, "sendbuf");
        same_dtype(in.dtype, out.dtype, "sendbuf and recvbuf");
        if (in.size != out.size)
            size_error("broadcast: sendbuf has " + n_elements(in.size) + " but recvbuf " + n_elements(out.size));
        c.send = in.data;
        keep_send(c, std::move(in));
    }
    keep_recv(c, std::move(out));
}

void prep_reduce(Communicator& self, Call& c, nb::handle sendbuf, nb::handle recvbuf, nb::handle op, int root,
                 nb::handle stream) {
    c.coll = Coll::Reduce;
    c.root = root;
    c.op = op_arg(op);
    c.stream = stream_arg(stream);
    check_root(self, root, "reduce");
    if (self.rank() == root) {
        c.count *= same_size_pair(c, sendbuf, recvbuf, &c.op, "reduce").scale;
        return;
    }
    if (is_in_place(sendbuf)) size_error("reduce: IN_PLACE is for the root only");
    Input in = input_array(sendbuf, "sendbuf");
    const Elem e = element_of(in.dtype, &c.op);
    set_elem(c, e);
    c.send = in.data;
    c.count = in.size * e.scale;
    c.value = nb::borrow(recvbuf);  // not written here
    keep_send(c, std::move(in));
}

void prep_reduce_scatter(Communicator& self, Call& c, nb::handle sendbuf, nb::handle recvbuf, nb::handle op,
                         nb::handle stream) {
    c.coll = Coll::ReduceScatter;
    c.op = op_arg(op);
    c.stream = stream_arg(stream);
    const size_t n = static_cast<size_t>(self.size());
    Output out = output_array(recvbuf, "recvbuf");
    const Elem e = element_of(out.dtype, &c.op);
    set_elem(c, e);
    c.recv = out.data;
    c.value = nb::borrow(recvbuf);
    if (is_in_place(sendbuf)) {
        // The input is all the blocks, in recvbuf; the result lands at its start.
        c.send = out.data;
        c.count = per_rank(out.size, self.size(), "recvbuf (IN_PLACE: all the blocks)") * e.scale;
    } else {
        Input in = input_array(sendbuf, "sendbuf");
        same_dtype(in.dtype, out.dtype, "sendbuf and recvbuf");
        if (in.size / n != out.size || in.size % n)
            size_error("reduce_scatter: sendbuf has " + n_elements(in.size) + ", not " + std::to_string(n) +
                       " ranks times recvbuf's " + n_elements(out.size));
        c.send = in.data;
        c.count = out.size * e.scale;
        keep_send(c, std::move(in));
    }
    keep_recv(c, std::move(out));
}

void prep_reduce_scatterv(Communicator& self, Call& c, nb::handle sendbuf, nb::handle recvbuf, nb::handle recvcounts,
                          nb::handle op, nb::handle stream) {
    c.coll = Coll::ReduceScatterv;
    c.op = op_arg(op);
    c.stream = stream_arg(stream);
    c.counts = counts_arg(recvcounts, self.size(), "recvcounts");
    const size_t total = blocks_extent(c.counts, displs_arg(nb::none(), c.counts, "recvcounts"), "recvcounts");
    const size_t own = c.counts[static_cast<size_t>(self.rank())];
    Output out = output_array(recvbuf, "recvbuf");
    const Elem e = element_of(out.dtype, &c.op);
    set_elem(c, e);
    c.recv = out.data;
    c.value = nb::borrow(recvbuf);
    if (is_in_place(sendbuf)) {
        if (out.size < total)
            size_error("reduce_scatterv: recvbuf (IN_PLACE: all the blocks) has " + n_elements(out.size) +
                       "; recvcounts add up to " + std::to_string(total));
        c.send = out.data;
    } else {
        Input in = input_array(sendbuf, "sendbuf");
        same_dtype(in.dtype, out.dtype, "sendbuf and recvbuf");
        if (in.size < total)
            size_error("reduce_scatterv: sendbuf has " + n_elements(in.size) + "; recvcounts add up to " +
                       std::to_string(total));
        if (out.size < own)
            size_error("reduce_scatterv: recvbuf has " + n_elements(out.size) + "; this rank's block has " +
                       std::to_string(own));
        c.send = in.data;
        keep_send(c, std::move(in));
    }
    scale_counts(c.counts, e.scale);
    keep_recv(c, std::move(out));
}

void prep_allgather(Communicator& self, Call& c, nb::handle sendbuf, nb::handle recvbuf, nb::handle stream) {
    c.coll = Coll::Allgather;
    c.stream = stream_arg(stream);
    Output out = output_array(recvbuf, "recvbuf");
    const Elem e = element_of(out.dtype, nullptr);
    set_elem(c, e);
    const size_t count = per_rank(out.size, self.size(), "recvbuf");
    c.recv = out.data;
    c.count = count * e.scale;
    c.value = nb::borrow(recvbuf);
    if (is_in_place(sendbuf)) {
        c.send = out.data + static_cast<size_t>(self.rank()) * count * e.itemsize;
    } else {
        Input in = input_array(sendbuf, "sendbuf");
        same_dtype(in.dtype, out.dtype, "sendbuf and recvbuf");
        if (in.size != count)
            size_error("allgather: sendbuf has " + n_elements(in.size) + " but recvbuf " + n_elements(out.size) +
                       ", not " + std::to_string(self.size()) + " ranks times as many");
        c.send = in.data;
        keep_send(c, std::move(in));
    }
    keep_recv(c, std::move(out));
}

void prep_allgatherv(Communicator& self, Call& c, nb::handle sendbuf, nb::handle recvbuf, nb::handle recvcounts,
                     nb::handle displs, nb::handle stream) {
    c.coll = Coll::Allgatherv;
    c.stream = stream_arg(stream);
    c.counts = counts_arg(recvcounts, self.size(), "recvcounts");
    c.displs = displs_arg(displs, c.counts, "displs");
    const size_t r = static_cast<size_t>(self.rank());
    Output out = output_array(recvbuf, "recvbuf");
    const Elem e = element_of(out.dtype, nullptr);
    set_elem(c, e);
    const size_t extent = blocks_extent(c.counts, c.displs, "recvcounts and displs");
    if (out.size < extent)
        size_error("allgatherv: recvbuf has " + n_elements(out.size) + "; its blocks reach " + std::to_string(extent));
    c.recv = out.data;
    c.value = nb::borrow(recvbuf);
    if (is_in_place(sendbuf)) {
        c.send = out.data + c.displs[r] * e.itemsize;
        c.count = c.counts[r] * e.scale;
    } else {
        Input in = input_array(sendbuf, "sendbuf");
        same_dtype(in.dtype, out.dtype, "sendbuf and recvbuf");
        if (in.size != c.counts[r])
            size_error("allgatherv: sendbuf has " + n_elements(in.size) + " but recvcounts[" + std::to_string(r) +
                       "] is " + std::to_string(c.counts[r]));
        c.send = in.data;
        c.count = in.size * e.scale;
        keep_send(c, std::move(in));
    }
    scale_counts(c.counts, e.scale);
    scale_counts(c.displs, e.scale);
    keep_recv(c, std::move(out));
}

void prep_alltoallv(Communicator& self, Call& c, nb::handle sendbuf, nb::handle recvbuf, nb::handle sendcounts,
                    nb::handle recvcounts, nb::handle sdispls, nb::handle rdispls, nb::handle stream) {
    c.coll = Coll::Alltoallv;
    c.stream = stream_arg(stream);
    c.counts = counts_arg(recvcounts, self.size(), "recvcounts");
    c.displs = displs_arg(rdispls, c.counts, "rdispls");
    Output out = output_array(recvbuf, "recvbuf");
    const Elem e = element_of(out.dtype, nullptr);
    set_elem(c, e);
    const size_t extent = blocks_extent(c.counts, c.displs, "recvcounts and rdispls");
    if (out.size < extent)
        size_error("alltoallv: recvbuf has " + n_elements(out.size) + "; its blocks reach " + std::to_string(extent));
    c.recv = out.data;
    c.value = nb::borrow(recvbuf);
    if (is_in_place(sendbuf)) {
        c.send = out.data;  // sendcounts and sdispls are ignored
    } else {
        c.send_counts = counts_arg(sendcounts, self.size(), "sendcounts");
        c.send_displs = displs_arg(sdispls, c.send_counts, "sdispls");
        Input in = input_array(sendbuf, "sendbuf");
        same_dtype(in.dtype, out.dtype, "sendbuf and recvbuf");
        const size_t send_extent = blocks_extent(c.send_counts, c.send_displs, "sendcounts and sdispls");
        if (in.size < send_extent)
            size_error("alltoallv: sendbuf has " + n_elements(in.size) + "; its blocks reach " +
                       std::to_string(send_extent));
        c.send = in.data;
        keep_send(c, std::move(in));
        scale_counts(c.send_counts, e.scale);
        scale_counts(c.send_displs, e.scale);
    }
    scale_counts(c.counts, e.scale);
    scale_counts(c.displs, e.scale);
    keep_recv(c, std::move(out));
}

void prep_gather(Communicator& self, Call& c, nb::handle sendbuf, nb::handle recvbuf, int root, nb::handle stream) {
    c.coll = Coll::Gather;
    c.root = root;
    check_root(self, root, "gather");
    c.stream = stream_arg(stream);
    c.value = nb::borrow(recvbuf);
    if (self.rank() != root) {
        leaf_sends(c, sendbuf, "gather");
        return;
    }
    if (recvbuf.is_none()) size_error("gather: recvbuf is required on the root");
    Output out = output_array(recvbuf, "recvbuf");
    const Elem e = element_of(out.dtype, nullptr);
    set_elem(c, e);
    const size_t count = per_rank(out.size, self.size(), "recvbuf");
    c.recv = out.data;
    c.count = count * e.scale;
    if (is_in_place(sendbuf)) {
        c.send = out.data + static_cast<size_t>(root) * count * e.itemsize;
    } else {
        Input in = input_array(sendbuf, "sendbuf");
        same_dtype(in.dtype, out.dtype, "sendbuf and recvbuf");
        if (in.size != count)
            size_error("gather: sendbuf has " + n_elements(in.size) + " but recvbuf " + n_elements(out.size) +
                       ", not " + std::to_string(self.size()) + " ranks times as many");
        c.send = in.data;
        keep_send(c, std::move(in));
    }
    keep_recv(c, std::move(out));
}

void prep_gatherv(Communicator& self, Call& c, nb::handle sendbuf, nb::handle recvbuf, nb::handle recvcounts,
                  nb::handle displs, int root, nb::handle stream) {
    c.coll = Coll::Gatherv;
    c.root = root;
    check_root(self, root, "gatherv");
    c.stream = stream_arg(stream);
    c.value = nb::borrow(recvbuf);
    if (self.rank() != root) {
        leaf_sends(c, sendbuf, "gatherv");
        return;
    }
    if (recvbuf.is_none()) size_error("gatherv: recvbuf is required on the root");
    c.counts = counts_arg(recvcounts, self.size(), "recvcounts");
    c.displs = displs_arg(displs, c.counts, "displs");
    const size_t r = static_cast<size_t>(root);
    Output out = output_array(recvbuf, "recvbuf");
    const Elem e = element_of(out.dtype, nullptr);
    set_elem(c, e);
    const size_t extent = blocks_extent(c.counts, c.displs, "recvcounts and displs");
    if (out.size < extent)
        size_error("gatherv: recvbuf has " + n_elements(out.size) + "; its blocks reach " + std::to_string(extent));
    c.recv = out.data;
    if (is_in_place(sendbuf)) {
        c.send = out.data + c.displs[r] * e.itemsize;
        c.count = c.counts[r] * e.scale;
    } else {
        Input in = input_array(sendbuf, "sendbuf");
        same_dtype(in.dtype, out.dtype, "sendbuf and recvbuf");
        if (in.size != c.counts[r])
            size_error("gatherv: sendbuf has " + n_elements(in.size) + " but recvcounts[" + std::to_string(r) +
                       "] is " + std::to_string(c.counts[r]));
        c.send = in.data;
        c.count = in.size * e.scale;
        keep_send(c, std::move(in));
    }
    scale_counts(c.counts, e.scale);
    scale_counts(c.displs, e.scale);
    keep_recv(c, std::move(out));
}

void prep_scatter(Communicator& self, Call& c, nb::handle sendbuf, nb::handle recvbuf, int root, nb::handle stream) {
    c.coll = Coll::Scatter;
    c.root = root;
    check_root(self, root, "scatter");
    c.stream = stream_arg(stream);
    c.value = nb::borrow(recvbuf);
    if (self.rank() != root) {
        leaf_receives(c, recvbuf, "scatter");
        return;
    }
    if (sendbuf.is_none()) size_error("scatter: sendbuf is required on the root");
    Input in = input_array(sendbuf, "sendbuf");
    const Elem e = element_of(in.dtype, nullptr);
    set_elem(c, e);
    const size_t count = per_rank(in.size, self.size(), "sendbuf");
    c.send = in.data;
    c.count = count * e.scale;
    if (is_in_place(recvbuf)) {
        // The root's own block stays where it is: nothing is written.
        c.recv = in.data + static_cast<size_t>(root) * count * e.itemsize;
        c.value = nb::borrow(sendbuf);
    } else {
        Output out = output_array(recvbuf, "recvbuf");
        same_dtype(in.dtype, out.dtype, "sendbuf and recvbuf");
        if (out.size != count)
            size_error("scatter: recvbuf has " + n_elements(out.size) + " but sendbuf " + n_elements(in.size) +
                       ", not " + std::to_string(self.size()) + " ranks times as many");
        c.recv = out.data;
        keep_recv(c, std::move(out));
    }
    keep_send(c, std::move(in));
}

void prep_scatterv(Communicator& self, Call& c, nb::handle sendbuf, nb::handle recvbuf, nb::handle sendcounts,
                   nb::handle displs, int root, nb::handle stream) {
    c.coll = Coll::Scatterv;
    c.root = root;
    check_root(self, root, "scatterv");
    c.stream = stream_arg(stream);
    c.value = nb::borrow(recvbuf);
    if (self.rank() != root) {
        leaf_receives(c, recvbuf, "scatterv");
        return;
    }
    if (sendbuf.is_none()) size_error("scatterv: sendbuf is required on the root");
    c.counts = counts_arg(sendcounts, self.size(), "sendcounts");
    c.displs = displs_arg(displs, c.counts, "displs");
    const size_t r = static_cast<size_t>(root);
    Input in = input_array(sendbuf, "sendbuf");
    const Elem e = element_of(in.dtype, nullptr);
    set_elem(c, e);
    const size_t extent = blocks_extent(c.counts, c.displs, "sendcounts and displs");
    if (in.size < extent)
        size_error("scatterv: sendbuf has " + n_elements(in.size) + "; its blocks reach " + std::to_string(extent));
    c.send = in.data;
    if (is_in_place(recvbuf)) {
        c.recv = in.data + c.displs[r] * e.itemsize;
        c.count = c.counts[r] * e.scale;
        c.value = nb::borrow(sendbuf);
    } else {
        Output out = output_array(recvbuf, "recvbuf");
        same_dtype(in.dtype, out.dtype, "sendbuf and recvbuf");
        if (out.size != c.counts[r])
            size_error("scatterv: recvbuf has " + n_elements(out.size) + " but sendcounts[" + std::to_string(r) +
                       "] is " + std::to_string(c.counts[r]));
        c.recv = out.data;
        c.count = out.size * e.scale;
        keep_recv(c, std::move(out));
    }
    scale_counts(c.counts, e.scale);
    scale_counts(c.displs, e.scale);
    keep_send(c, std::move(in));
}

void prep_barrier(Communicator&, Call& c, nb::handle stream) {
    c.coll = Coll::Barrier;
    c.stream = stream_arg(stream);
}

}  // namespace chorus_py
