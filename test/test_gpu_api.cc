// chorus::gpu on any machine: with no GPU (or no CUDA in the build) every
// call fails cleanly with CHORUS_ERR_CUDA; with one, the basic calls work.
// The reductions themselves are checked on a GPU by test_gpu_reducer.
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "cuda/cuda_runtime_api.h"
#include "base/error.h"

using namespace chorus;

namespace {

// Runs f and returns the chorus_result_t it threw, or CHORUS_SUCCESS.
template <typename F>
chorus_result_t code_of(F&& f) {
    try {
        f();
    } catch (const Error& e) {
        INFO(e.what());
        CHECK(std::string(e.what()).size() > 0);
        return e.code();
    }
    return CHORUS_SUCCESS;
}

}  // namespace

TEST_CASE("gpu: the build flag matches the library", "[unit][gpu]") {
#ifdef CHORUS_HAVE_CUDA
    CHECK(gpu::built_with_cuda());
#else
    CHECK_FALSE(gpu::built_with_cuda());
#endif
}

TEST_CASE("gpu: availability is decided once, with a reason when false", "[unit][gpu]") {
    std::string why1 = "unset", why2 = "unset";
    const bool a1 = gpu::available(&why1);
    const bool a2 = gpu::available(&why2);
    CHECK(a1 == a2);
    CHECK(why1 == why2);
    CHECK(gpu::available() == a1);
    if (a1) {
        CHECK(why1.empty());
    } else {
        INFO("why: " << why1);
        CHECK_FALSE(why1.empty());
        if (!gpu::built_with_cuda()) CHECK(why1.find("without CUDA") != std::string::npos);
    }
}

TEST_CASE("gpu: host memory is host memory", "[unit][gpu]") {
    int on_stack = 0;
    std::vector<double> on_heap(1000);
    void* big = std::malloc(size_t{64} << 20);
    REQUIRE(big);
    CHECK(gpu::memory_kind(&on_stack) == gpu::MemKind::Host);
    CHECK(gpu::memory_kind(on_heap.data()) == gpu::MemKind::Host);
    CHECK(gpu::memory_kind(big) == gpu::MemKind::Host);
    CHECK(gpu::memory_kind(nullptr) == gpu::MemKind::Host);
    std::free(big);
    CHECK(std::string(gpu::memory_kind_name(gpu::MemKind::Device)) == "device");
}

TEST_CASE("gpu: releasing nothing is harmless", "[unit][gpu]") {
    gpu::destroy_stream(nullptr);
    gpu::destroy_event(nullptr);
    gpu::free_device(nullptr);
    gpu::free_pinned(nullptr);
    gpu::free_managed(nullptr);
}

TEST_CASE("gpu: without a GPU every call fails with CHORUS_ERR_CUDA", "[unit][gpu]") {
    if (gpu::available()) {
        SUCCEED("a GPU is present: covered by the next test case");
        return;
    }
    std::vector<float> a(64, 1.0f), b(64, 2.0f), d(64, 0.0f);
    CHECK(code_of([&] { gpu::reduce_async(CHORUS_FLOAT32, CHORUS_SUM, d.data(), a.data(), b.data(), 64, nullptr); }) ==
          CHORUS_ERR_CUDA);
    CHECK(code_of([&] { gpu::divide_async(CHORUS_FLOAT32, d.data(), 64, 2, nullptr); }) == CHORUS_ERR_CUDA);
    CHECK(code_of([] { gpu::alloc_device(1024); }) == CHORUS_ERR_CUDA);
    CHECK(code_of([] { gpu::alloc_pinned(1024); }) == CHORUS_ERR_CUDA);
    CHECK(code_of([] { gpu::alloc_managed(1024); }) == CHORUS_ERR_CUDA);
    CHECK(code_of([] { gpu::create_stream(); }) == CHORUS_ERR_CUDA);
    CHECK(code_of([] { gpu::create_event(); }) == CHORUS_ERR_CUDA);
    CHECK(code_of([&] { gpu::copy_async(d.data(), a.data(), 64 * sizeof(float), nullptr); }) == CHORUS_ERR_CUDA);
    CHECK(code_of([] { gpu::synchronize_stream(nullptr); }) == CHORUS_ERR_CUDA);
    // The inputs are untouched: nothing ran.
    CHECK(d[0] == 0.0f);
    // Still no crash, and the same answer, after all those failures.
    CHECK_FALSE(gpu::available());
    CHECK(gpu::memory_kind(a.data()) == gpu::MemKind::Host);
}

TEST_CASE("gpu: with a GPU the basic calls work", "[unit][gpu]") {
    if (!gpu::available()) {
        SUCCEED("no GPU here");
        return;
    }
    void* stream = gpu::create_stream();
    void* ev = gpu::create_event();
    const size_t n = 1 << 20;
    void* dev = gpu::alloc_device(n * sizeof(float));
    void* pinned = gpu::alloc_pinned(n * sizeof(float));
    CHECK(gpu::alloc_device(0) == nullptr);
    CHECK(gpu::memory_kind(dev) == gpu::MemKind::Device);
    CHECK(gpu::memory_kind(static_cast<char*>(dev) + 100) == gpu::MemKind::Device);
    CHECK(gpu::memory_kind(pinned) == gpu::MemKind::PinnedHost);
    void* managed = gpu::alloc_managed(n * sizeof(float));
    CHECK(gpu::alloc_managed(0) == nullptr);
    CHECK(gpu::memory_kind(managed) == gpu::MemKind::Managed);
    static_cast<float*>(managed)[n - 1] = 3.0f;  // the host may write it
    gpu::reduce_async(CHORUS_FLOAT32, CHORUS_SUM, managed, managed, managed, n, stream);
    gpu::synchronize_stream(stream);
    CHECK(static_cast<float*>(managed)[n - 1] == 6.0f);
    gpu::free_managed(managed);
    std::vector<float> host(n);
    CHECK(gpu::memory_kind(host.data()) == gpu::MemKind::Host);

    float* p = static_cast<float*>(pinned);
    for (size_t i = 0; i < n; ++i) p[i] = static_cast<float>(i % 1000);
    gpu::copy_async(dev, pinned, n * sizeof(float), stream);
    gpu::reduce_async(CHORUS_FLOAT32, CHORUS_AVG, dev, dev, dev, n, stream);  // x + x
    gpu::divide_async(CHORUS_FLOAT32, dev, n, 2, stream);                     // back to x
    gpu::reduce_async(CHORUS_FLOAT32, CHORUS_MAX, dev, dev, pinned, n, stream);
    gpu::copy_async(host.data(), dev, n * sizeof(float), stream);
    gpu::record_event(ev, stream);
    gpu::synchronize_stream(stream);
    CHECK(gpu::event_done(ev));
    bool same = true;
    for (size_t i = 0; i < n; ++i) same = same && host[i] == static_cast<float>(i % 1000);
    CHECK(same);

    // A second stream waits for the first one's event.
    void* other = gpu::create_stream();
    gpu::stream_wait_event(other, ev);
    gpu::synchronize_stream(other);

    // Pairs the host reducer rejects are rejected here too, without a launch.
    CHECK(code_of([&] { gpu::reduce_async(CHORUS_FLOAT32, CHORUS_BXOR, dev, dev, dev, n, stream); }) ==
          CHORUS_ERR_UNSUPPORTED);
    CHECK(code_of([&] {
              gpu::reduce_async(static_cast<chorus_datatype_t>(99), CHORUS_SUM, dev, dev, dev, n, stream);
          }) == CHORUS_ERR_INVALID_ARGUMENT);
    CHECK(code_of([&] { gpu::divide_async(CHORUS_INT32, dev, n, 0, stream); }) == CHORUS_ERR_INVALID_ARGUMENT);
    // An absurd allocation fails cleanly and leaves the device usable.
    CHECK(code_of([] { gpu::alloc_device(size_t{1} << 60); }) == CHORUS_ERR_CUDA);
    gpu::synchronize_stream(stream);

    gpu::destroy_stream(other);
    gpu::free_pinned(pinned);
    gpu::free_device(dev);
    gpu::destroy_event(ev);
    gpu::destroy_stream(stream);
}
