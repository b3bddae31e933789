// CHORUS_* settings: parsing, defaults and errors that name the variable.
#include <catch2/catch.hpp>

#include "core/config.h"

using chorus::Config;
using chorus::Error;

static chorus_result_t config_error(const std::vector<std::string>& env, std::string* message) {
    try {
        Config::from_strings(env);
    } catch (const Error& e) {
        *message = e.what();
        return e.code();
    }
    return CHORUS_SUCCESS;
}

TEST_CASE("defaults hold when nothing is set", "[unit][config]") {
    Config c = Config::from_strings({});
    REQUIRE(c.log_level == chorus::LogLevel::Warn);
    REQUIRE(c.chunk_bytes == 256 * 1024);
    REQUIRE(c.timeout_ms == 0);
    REQUIRE(c.hang_warn_s == 60);
    REQUIRE(c.forced_algo("allreduce").empty());
}

TEST_CASE("settings are parsed with size suffixes", "[unit][config]") {
    Config c = Config::from_strings({"CHORUS_LOG=debug", "CHORUS_CHUNK_BYTES=64K", "CHORUS_WINDOW=3",
                                     "CHORUS_TIMEOUT_MS=0", "CHORUS_ALGO=allreduce=ring", "OTHER=1"});
    REQUIRE(c.log_level == chorus::LogLevel::Debug);
    REQUIRE(c.chunk_bytes == 65536);
    REQUIRE(c.window == 3);
    REQUIRE(c.timeout_ms == 0);
    REQUIRE(c.forced_algo("allreduce") == "ring");
    REQUIRE(Config::from_strings({"CHORUS_CHUNK_BYTES=1M"}).chunk_bytes == (1u << 20));
    REQUIRE(Config::from_strings({"CHORUS_ALGO=allreduce=auto"}).forced_algo("allreduce").empty());
}

TEST_CASE("a bad value is an error naming the variable", "[unit][config]") {
    std::string msg;
    REQUIRE(config_error({"CHORUS_LOG=loud"}, &msg) == CHORUS_ERR_CONFIG);
    REQUIRE(msg.find("CHORUS_LOG") != std::string::npos);
    REQUIRE(config_error({"CHORUS_CHUNK_BYTES=12Q"}, &msg) == CHORUS_ERR_CONFIG);
    REQUIRE(msg.find("CHORUS_CHUNK_BYTES") != std::string::npos);
    REQUIRE(config_error({"CHORUS_CHUNK_BYTES=8"}, &msg) == CHORUS_ERR_CONFIG);
    REQUIRE(config_error({"CHORUS_WINDOW=0"}, &msg) == CHORUS_ERR_CONFIG);
    REQUIRE(msg.find("CHORUS_WINDOW") != std::string::npos);
    REQUIRE(config_error({"CHORUS_TIMEOUT_MS=-5"}, &msg) == CHORUS_ERR_CONFIG);
    REQUIRE(config_error({"CHORUS_WINDOW=99999999999999999999999"}, &msg) == CHORUS_ERR_CONFIG);
}

TEST_CASE("an unknown algorithm lists the valid ones", "[unit][config]") {
    std::string msg;
    REQUIRE(config_error({"CHORUS_ALGO=allreduce=tree"}, &msg) == CHORUS_ERR_CONFIG);
    REQUIRE(msg.find("ring") != std::string::npos);
    REQUIRE(config_error({"CHORUS_ALGO=allfoo=ring"}, &msg) == CHORUS_ERR_CONFIG);
    REQUIRE(msg.find("allreduce") != std::string::npos);
    REQUIRE(config_error({"CHORUS_ALGO=ring"}, &msg) == CHORUS_ERR_CONFIG);
}

TEST_CASE("unknown CHORUS_ variables are collected for a warning", "[unit][config]") {
    Config c = Config::from_strings({"CHORUS_CHUNKBYTES=1", "CHORUS_MPI_INTERCEPT=all"});
    REQUIRE(c.unknown == std::vector<std::string>{"CHORUS_CHUNKBYTES"});
}

TEST_CASE("config: shared memory, staging and rendezvous cost settings", "[unit][config]") {
    Config d = Config::from_strings({});
    CHECK(d.shm_eager_bytes == 8192);
    CHECK(d.shm_rendezvous);
    CHECK_FALSE(Config::from_strings({"CHORUS_SHM_RENDEZVOUS=0"}).shm_rendezvous);
    CHECK_FALSE(d.always_stage);
    Config c = Config::from_strings({"CHORUS_SHM_EAGER=0", "CHORUS_STAGING=always", "CHORUS_COST_RNDV_US=0"});
    CHECK(c.shm_eager_bytes == 0);
    CHECK(c.always_stage);
    CHECK(c.cost.rendezvous_us == 0.0);
    CHECK(Config::from_strings({"CHORUS_SHM_EAGER=256K"}).shm_eager_bytes == 256 * 1024);
    // One-sided access, and its price between hosts (0: not taken there).
    CHECK(d.one_sided == chorus::OneSidedAccess::Auto);
    CHECK(d.cost.net_rma_gbs == 0.0);
    Config k = Config::from_strings({"CHORUS_ONE_SIDED=keys", "CHORUS_COST_NET_RMA_GBS=12.5"});
    CHECK(k.one_sided == chorus::OneSidedAccess::Keys);
    CHECK(k.cost.net_rma_gbs == 12.5);
    CHECK(Config::from_strings({"CHORUS_ONE_SIDED=off"}).one_sided == chorus::OneSidedAccess::Off);
    CHECK(k.protocol_settings().find("CHORUS_ONE_SIDED=keys") != std::string::npos);
    for (const char* bad : {"CHORUS_SHM_EAGER=257K", "CHORUS_SHM_EAGER=lots", "CHORUS_SHM_RENDEZVOUS=maybe",
                            "CHORUS_STAGING=never", "CHORUS_COST_RNDV_US=-1", "CHORUS_ONE_SIDED=cma",
                            "CHORUS_COST_NET_RMA_GBS=-2"}) {
        INFO(bad);
        try {
            Config::from_strings({bad});
            FAIL("accepted");
        } catch (const chorus::Error& e) {
            CHECK(e.code() == CHORUS_ERR_CONFIG);
        }
    }
}
