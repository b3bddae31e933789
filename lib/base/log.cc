#include "base/log.h"

#include <atomic>
#include <cstdio>

namespace chorus {

namespace {
std::atomic<int> g_level{static_cast<int>(LogLevel::Warn)};
const char* level_name(LogLevel level) {
    switch (level) {
        case LogLevel::Error: return "error";
        case LogLevel::Warn: return "warn";
        case LogLevel::Info: return "info";
        case LogLevel::Debug: return "debug";
    }
    return "?";
}
}  // namespace

void set_log_level(LogLevel level) { g_level.store(static_cast<int>(level)); }
LogLevel log_level() { return static_cast<LogLevel>(g_level.load(std::memory_order_relaxed)); }

void log_write(LogLevel level, int rank, const std::string& message) {
    std::fprintf(stderr, "[chorus %s rank %d] %s\n", level_name(level), rank, message.c_str());
}

}  // namespace chorus
