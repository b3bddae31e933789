// Minimal leveled logging to stderr, prefixed with the rank.
#pragma once

#include "base/error.h"

namespace chorus {

enum class LogLevel { Error = 0, Warn = 1, Info = 2, Debug = 3 };

// Set once from Config; read by every log call.
void set_log_level(LogLevel level);
LogLevel log_level();
void log_write(LogLevel level, int rank, const std::string& message);

template <typename... Args>
void log(LogLevel level, int rank, Args&&... args) {
    if (level <= log_level()) log_write(level, rank, cat(std::forward<Args>(args)...));
}

}  // namespace chorus
