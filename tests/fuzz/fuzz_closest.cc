// closest's choice (lib/topo) on the real machines' XML in
// tests/topology/xml, for any step: GPUs as Slurm names them, tasks, the
// step's cores, CPUs per task, the distribution, GPUs per task.  A choice
// or an Error, never a crash; a choice gives each task k distinct GPUs of
// the step and no GPU twice.  Also the topology cache's path template
// against any host name (no name may climb out of the directory).
#include <set>
#include <string>
#include <vector>

#include "db_topo.h"
#include "fuzz.hh"
#include "topo.hh"

#ifndef DB_TEST_XML_DIR
#error "DB_TEST_XML_DIR: the directory of the machines' XML"
#endif

using namespace db::topo;

namespace {

const char *const kMachines[] = {
    "32em64t-2n8c2t-pci-normalio.xml", "coral-lassen.xml", "cts1-pascal.xml", "eas-tioga.xml", "nvidiaDGX2.xml",
    "power8gpudistances.xml"};
constexpr size_t kCount = sizeof kMachines / sizeof kMachines[0];

// As C strings: up to the first NUL.
std::string cstr(std::string s) { return s.substr(0, s.find('\0')); }

const Topology &machine(size_t i) {
    static std::vector<Topology> loaded = [] {
        std::vector<Topology> v;
        for (const char *m : kMachines) v.push_back(Topology::from_xml_file(std::string(DB_TEST_XML_DIR) + "/" + m));
        return v;
    }();
    return loaded[i];
}

void choice(Take &in) {
    const Topology &t = machine(in.u8() % kCount);
    size_t ntasks = 1 + in.u8() % 16, k = 1 + in.u8() % 4;
    unsigned cpt = in.u8() % 64;
    std::string cores = cstr(in.line()), dist = cstr(in.line()), gpus = in.line();
    try {
        std::vector<std::string> ids = db::parse_gpu_list(gpus, "GPUs");
        Matched m = match_gpus(t, ids, {});
        FUZZ_CHECK(m.pci.size() == ids.size(), "matched %zu of %zu", m.pci.size(), ids.size());
        std::vector<Bitmap> cpus =
            model_task_cpus(t, parse_list(cores, "step cores"), ntasks, cpt, parse_distribution(dist.c_str()));
        FUZZ_CHECK(cpus.size() == ntasks, "%zu task CPU sets for %zu tasks", cpus.size(), ntasks);
        std::vector<Choice> c = choose(t, m.pci, cpus, k);
        FUZZ_CHECK(c.size() == ntasks, "%zu choices for %zu tasks", c.size(), ntasks);
        std::set<size_t> used;
        for (const Choice &x : c) {
            FUZZ_CHECK(x.gpus.size() == k, "a task got %zu GPUs, not %zu", x.gpus.size(), k);
            for (size_t g : x.gpus) FUZZ_CHECK(g < ids.size() && used.insert(g).second, "GPU position %zu", g);
        }
    } catch (const db::Error &) {}
}

void cache_path(Take &in) {
    std::string tmpl = cstr(in.line()), node = cstr(in.line()), host = cstr(in.rest());
    char out[256];
    if (db_topo_cache_path(tmpl.c_str(), node.c_str(), host.c_str(), out, sizeof out) != 0) return;
    std::string p(out);
    // The template's own text may say anything; what came from the names
    // must add no '/' and no ".." component.
    size_t slashes = 0, tslashes = 0;
    for (char c : p) slashes += c == '/';
    for (char c : tmpl) tslashes += c == '/';
    FUZZ_CHECK(slashes == tslashes, "a name added a '/': %s -> %s", tmpl.c_str(), out);
    if (tmpl.find("..") == std::string::npos)
        for (std::string_view c : db::split(p, '/'))
            FUZZ_CHECK(c != "..", "a name made '..': %s -> %s", tmpl.c_str(), out);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    Take in(data, size);
    if (in.u8() & 1)
        choice(in);
    else
        cache_path(in);
    return 0;
}
