// chorus_comm_create_oob: a communicator bootstrapped through an exchange
// the caller supplies (net/oob_bootstrap.h), without MPI.
#include <new>

#include "chorus.h"
#include "core/communicator.h"
#include "core/handles.h"
#include "core/validate.h"
#include "net/oob_bootstrap.h"

extern "C" chorus_result_t chorus_comm_create_oob(const chorus_oob_t* oob, chorus_comm_t* comm) {
    using chorus::api::report;
    auto invalid = [](const std::string& why) {
        return report(nullptr, CHORUS_ERR_INVALID_ARGUMENT, "chorus_comm_create_oob: " + why);
    };
    if (!comm) return invalid("comm (output) is NULL");
    *comm = nullptr;
    if (!oob) return invalid("oob is NULL");
    if (!oob->allgather) return invalid("oob->allgather is NULL");
    if (oob->size < 1) return invalid(chorus::cat("oob->size is ", oob->size, " (at least 1)"));
    if (oob->rank < 0 || oob->rank >= oob->size)
        return invalid(chorus::cat("oob->rank is ", oob->rank, ", outside [0, ", oob->size, ")"));
    try {
        chorus::net::OobBootstrap boot(*oob);
        *comm = chorus::api::add_comm(chorus::Communicator::create(boot));
        return CHORUS_SUCCESS;
    } catch (const chorus::Error& e) {
        return report(nullptr, e.code(), chorus::cat("chorus_comm_create_oob: ", e.what()));
    } catch (const std::bad_alloc&) {
        return report(nullptr, CHORUS_ERR_OUT_OF_MEMORY, "chorus_comm_create_oob: out of memory");
    } catch (const std::exception& e) {
        return report(nullptr, CHORUS_ERR_INTERNAL, chorus::cat("chorus_comm_create_oob: internal error: ", e.what()));
    } catch (...) {
        return report(nullptr, CHORUS_ERR_INTERNAL, "chorus_comm_create_oob: internal error: unknown exception");
    }
}
