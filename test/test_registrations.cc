// The registration cache of UCX RMA (net/ucx/ucx_registrations.h): a region
// registered once is found again, pieces of it too; memory that is unmapped
// and mapped again at the same address (new pages behind it) gets a new
// registration, whether an operation held the old one at the time or not.
#include <sys/mman.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <vector>

#include "net/transport.h"
#include "net/ucx/ucx_context.h"

using chorus::net::Registrations;
using chorus::net::Transport;
using chorus::net::UcxContext;

namespace {

// `bytes` mapped at `at` again (after munmap); MAP_FAILED if the address
// was taken meanwhile.
void* map_again(void* at, size_t bytes) {
    return mmap(at, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
}

}  // namespace

TEST_CASE("UCX registrations: cached across calls, dropped when their memory is unmapped", "[one_sided]") {
    auto context = UcxContext::get();
    if (!context->rma() || !context->registrations()->caching()) {
        WARN("UCX offers no RMA or no memory events here: nothing is cached");
        return;
    }
    Registrations& regs = *context->registrations();
    const size_t bytes = size_t(4) << 20;
    void* at = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(at != MAP_FAILED);
    char* base = static_cast<char*>(at);
    std::vector<char> key(Transport::kMaxKey), key2(Transport::kMaxKey);
    uint64_t id = 0, id2 = 0;
    const uint64_t made = regs.made(), dropped = regs.dropped();

    // Registered once; the region and a piece of it are found again.
    const size_t kb = regs.acquire(base, bytes, key.data(), key.size(), &id);
    REQUIRE(kb > 0);
    regs.release(id);
    CHECK(regs.made() == made + 1);
    REQUIRE(regs.acquire(base + 8192, 65536, key2.data(), key2.size(), &id2) == kb);
    CHECK(id2 == id);
    CHECK(std::memcmp(key.data(), key2.data(), kb) == 0);
    regs.release(id2);
    CHECK(regs.made() == made + 1);
    // A key that does not fit the room given: nothing is held.
    CHECK(regs.acquire(base, bytes, key2.data(), 1, &id2) == 0);

    // Unmapped and mapped again at the same address: a new registration.
    REQUIRE(munmap(at, bytes) == 0);
    void* again = map_again(at, bytes);
    if (again == MAP_FAILED) {
        WARN("the address was taken: the rest is not checked");
        return;
    }
    REQUIRE(regs.acquire(base, bytes, key.data(), key.size(), &id) > 0);
    CHECK(regs.dropped() == dropped + 1);
    CHECK(id != id2);
    CHECK(regs.made() == made + 2);

    // Unmapped while an operation holds it: the holder keeps it until it
    // releases; the next lookup makes another.
    REQUIRE(munmap(at, bytes) == 0);
    again = map_again(at, bytes);
    if (again == MAP_FAILED) {
        regs.release(id);
        WARN("the address was taken: the rest is not checked");
        return;
    }
    REQUIRE(regs.acquire(base, 4096, key2.data(), key2.size(), &id2) > 0);
    CHECK(regs.dropped() == dropped + 2);
    CHECK(id2 != id);
    CHECK(regs.made() == made + 3);
    regs.release(id);
    regs.release(id2);
    // Memory that stays mapped keeps its registration.
    uint64_t id3 = 0;
    REQUIRE(regs.acquire(base + 100, 200, key2.data(), key2.size(), &id3) > 0);
    CHECK(id3 == id2);
    regs.release(id3);
    CHECK(regs.made() == made + 3);
    munmap(again, bytes);
}
