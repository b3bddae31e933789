// The cost model's machine constants: the cache size read from a sysfs
// tree, the cost file (read, written, stale, corrupt), and the precedence of
// settings over the file over the OS and the defaults.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <string>

#include "core/config.h"
#include "core/machine_costs.h"

using namespace chorus;

namespace {

// A temporary folder, removed with what it holds.
struct TempDir {
    std::string path;
    TempDir() {
        char tmpl[] = "/tmp/chorus-costs-XXXXXX";
        REQUIRE(mkdtemp(tmpl) != nullptr);
        path = tmpl;
    }
    ~TempDir() { REQUIRE(std::system(("rm -rf '" + path + "'").c_str()) == 0); }
    void write(const std::string& name, const std::string& text) const {
        const std::string full = path + "/" + name;
        for (size_t s = full.find('/', path.size() + 1); s != std::string::npos; s = full.find('/', s + 1))
            mkdir(full.substr(0, s).c_str(), 0755);
        std::ofstream(full) << text;
    }
};

// One cache of a fake sysfs tree: index<i>/{level,type,size}.
void cache(const TempDir& d, int index, int level, const std::string& type, const std::string& size) {
    const std::string base = "index" + std::to_string(index) + "/";
    d.write(base + "level", std::to_string(level) + "\n");
    d.write(base + "type", type + "\n");
    d.write(base + "size", size + "\n");
}

}  // namespace

TEST_CASE("the largest cache is the last level's data or unified cache", "[unit][costs]") {
    // Made in both orders: whichever order the folder lists them in.
    for (bool backwards : {false, true}) {
        TempDir d;
        for (int i = 0; i < 4; ++i) {
            const int index = backwards ? 3 - i : i;
            const char* types[] = {"Data", "Instruction", "Unified", "Unified"};
            const char* sizes[] = {"48K", "32K", "2048K", "266240K"};  // the last 260 MiB
            cache(d, index, index == 0 ? 1 : index, types[index], sizes[index]);
        }
        REQUIRE(largest_cache_bytes(d.path) == 266240ull * 1024);
        REQUIRE(cache_mib_of(largest_cache_bytes(d.path)) == 260);
    }
}

TEST_CASE("an instruction cache, a bad size or a missing tree gives no cache size", "[unit][costs]") {
    TempDir d;
    cache(d, 0, 1, "Data", "32K");
    cache(d, 1, 4, "Instruction", "64M");  // a higher level, but not data
    cache(d, 2, 3, "Unified", "lots");     // unreadable: skipped
    REQUIRE(largest_cache_bytes(d.path) == 32 * 1024);
    REQUIRE(largest_cache_bytes(d.path + "/absent") == 0);
    // Without a size, the default stands.
    REQUIRE(cache_mib_of(0) == coll::CostParams{}.cache_mib);
}

TEST_CASE("a cost file is written and read back", "[unit][costs]") {
    TempDir d;
    const std::string path = d.path + "/deep/er/cost-h.conf";
    write_cost_file(path,
                    cost_file_text({{"copy_gbs", 7.25}, {"slot_us", 0.0625}, {"cache_mib", 260}}, "h", {"a comment"}));
    const CostFile f = read_cost_file(path);
    REQUIRE(f.state == CostFile::State::Loaded);
    REQUIRE(f.host == "h");
    REQUIRE(f.values.size() == 3);
    REQUIRE(f.values.at("copy_gbs") == 7.25);
    REQUIRE(f.values.at("slot_us") == 0.0625);
}

TEST_CASE("missing, stale and corrupt cost files load nothing", "[unit][costs]") {
    TempDir d;
    REQUIRE(read_cost_file(d.path + "/none.conf").state == CostFile::State::Missing);
    REQUIRE(read_cost_file("").state == CostFile::State::Ignored);
    d.write("stale.conf", "format = 0\ncopy_gbs = 3\n");
    CostFile stale = read_cost_file(d.path + "/stale.conf");
    REQUIRE(stale.state == CostFile::State::Stale);
    REQUIRE(stale.values.empty());
    for (const char* text : {"format = 1\ncopy_gbs = fast\n", "format = 1\ncopy_gbs = -2\n", "format = 1\nwarp = 9\n",
                             "format = 1\ncopy_gbs 3\n", "copy_gbs = 3\n"}) {
        d.write("bad.conf", text);
        const CostFile bad = read_cost_file(d.path + "/bad.conf");
        INFO(text);
        REQUIRE(bad.state == CostFile::State::Corrupt);
        REQUIRE(bad.values.empty());
        REQUIRE(!bad.problem.empty());
    }
}

TEST_CASE("settings come before the file, the file before the OS and the defaults", "[unit][costs]") {
    TempDir d;
    d.write("c.conf", "format = 1\nhost = h\ncopy_gbs = 3.5\nget_gbs = 2\ncache_mib = 100\n");
    const CostFile f = read_cost_file(d.path + "/c.conf");
    const coll::CostParams defaults;

    // The file's constants; the settings' over them.
    Config c = Config::from_strings({"CHORUS_COST_GET_GBS=4"});
    MachineCosts m = machine_costs(c, f, 64 << 20);
    REQUIRE(m.cost.copy_gbs == 3.5);
    REQUIRE(m.source.at("copy_gbs") == "file");
    REQUIRE(m.cost.get_gbs == 4);
    REQUIRE(m.source.at("get_gbs") == "setting");
    REQUIRE(m.cost.cache_mib == 100);  // the file's, not the OS's
    REQUIRE(m.cost.reduce_gbs == defaults.reduce_gbs);
    REQUIRE(m.source.at("reduce_gbs") == "default");

    // No file: the OS's cache size, the defaults for the rest.
    m = machine_costs(Config::from_strings({}), read_cost_file(d.path + "/none.conf"), 64 << 20);
    REQUIRE(m.cost.cache_mib == 64);
    REQUIRE(m.source.at("cache_mib") == "OS");
    REQUIRE(m.cost.copy_gbs == defaults.copy_gbs);
    REQUIRE(m.level == LogLevel::Info);

    // A corrupt file: the same, with a warning.
    d.write("bad.conf", "format = 1\ncopy_gbs = x\n");
    m = machine_costs(Config::from_strings({}), read_cost_file(d.path + "/bad.conf"), 0);
    REQUIRE(m.cost.copy_gbs == defaults.copy_gbs);
    REQUIRE(m.cost.cache_mib == defaults.cache_mib);
    REQUIRE(m.level == LogLevel::Warn);
    REQUIRE(m.note.find("bad.conf") != std::string::npos);
}

TEST_CASE("the constants exchanged at creation round-trip exactly", "[unit][costs]") {
    coll::CostParams a, b;
    a.copy_gbs = 1.0 / 3;
    a.slot_us = 0.123456789012345;
    a.cache_mib = 260;
    apply_machine_line(b, machine_line(a));
    for (const auto& k : machine_constants()) REQUIRE(b.*k.member == a.*k.member);
    REQUIRE_THROWS_AS(apply_machine_line(b, "copy_gbs=zero"), Error);
    REQUIRE_THROWS_AS(apply_machine_line(b, "nothing=1"), Error);
}

TEST_CASE("the cost file's place: the setting, XDG_CACHE_HOME, HOME; none ignores files", "[unit][costs]") {
    REQUIRE(cost_file_path("none").empty());
    REQUIRE(cost_file_path("/x/y.conf") == "/x/y.conf");
    const char* xdg = std::getenv("XDG_CACHE_HOME");
    const std::string saved = xdg ? xdg : "";
    setenv("XDG_CACHE_HOME", "/cache", 1);
    REQUIRE(cost_file_path("") == "/cache/chorus/cost-" + host_name() + ".conf");
    unsetenv("XDG_CACHE_HOME");
    const char* home = std::getenv("HOME");
    if (home && home[0])
        REQUIRE(cost_file_path("") == std::string(home) + "/.cache/chorus/cost-" + host_name() + ".conf");
    if (xdg) setenv("XDG_CACHE_HOME", saved.c_str(), 1);
}
