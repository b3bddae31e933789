// Errors inside Chorus are exceptions carrying a chorus_result_t and a
// message; the C API (api.cc) turns them into return values. No exception
// crosses the C boundary.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

#include "chorus.h"

namespace chorus {

class Error : public std::runtime_error {
public:
    Error(chorus_result_t code, const std::string& what) : std::runtime_error(what), code_(code) {}
    chorus_result_t code() const { return code_; }

private:
    chorus_result_t code_;
};

// Concatenate anything streamable into one string: cat("peer ", 3, " failed").
template <typename... Args>
std::string cat(Args&&... args) {
    std::ostringstream os;
    (os << ... << std::forward<Args>(args));
    return os.str();
}

template <typename... Args>
[[noreturn]] void fail(chorus_result_t code, Args&&... args) {
    throw Error(code, cat(std::forward<Args>(args)...));
}

}  // namespace chorus
