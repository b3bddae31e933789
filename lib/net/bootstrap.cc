#include "net/bootstrap.h"

#include "base/error.h"

namespace chorus::net {

std::vector<std::string> allgather_agreed(Bootstrap& boot, const std::function<std::string()>& local) {
    // Each blob: one byte (0 = success, else the chorus_result_t) and the
    // payload or the error message.
    std::string mine;
    try {
        mine = std::string(1, '\0') + local();
    } catch (const Error& e) {
        mine = std::string(1, static_cast<char>(e.code())) + e.what();
    } catch (const std::bad_alloc&) {
        mine = std::string(1, static_cast<char>(CHORUS_ERR_OUT_OF_MEMORY)) + "out of memory";
    }
    std::vector<std::string> all = boot.allgather(mine);
    chorus_result_t code = CHORUS_SUCCESS;
    std::string why;
    int failed = 0;
    for (int r = 0; r < static_cast<int>(all.size()); ++r) {
        if (all[r].empty() || all[r][0] == '\0') continue;
        if (failed == 0) code = static_cast<chorus_result_t>(all[r][0]);
        if (failed < 4) why += cat(failed ? "; " : "", "rank ", r, ": ", all[r].substr(1));
        ++failed;
    }
    if (failed > 4) why += cat("; and ", failed - 4, " more ranks");
    if (failed) fail(code, failed == 1 ? "" : cat(failed, " ranks failed: "), why);
    for (auto& blob : all) blob.erase(0, 1);
    return all;
}

}  // namespace chorus::net
