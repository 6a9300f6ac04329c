// srun's side of what it tells the nodes (lib/plan/srun_args.cc,
// devices.cc, layout.cc): any command line, environment or layout gives an
// answer or one message, never a crash; and what srun writes, the nodes
// read back as meant (the writer and the reader of each word agree).
// Input: a byte choosing the case, then
//   even: srun's TaskPlugin on the first line, srun's options and program
//         one a line up to an empty line (argv[0] "srun" before them), then
//         srun's environment, NAME=VALUE one a line;
//   odd:  a layout: the node count, then per node its task count (0 makes
//         a layout that is not one), then bytes that shuffle the ranks; the
//         case byte's 0x02 bit puts one rank twice.
#include <algorithm>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "db_core.h"
#include "env_index.hh"
#include "fuzz.hh"
#include "plan.hh"

namespace {

void command_line(Take &in) {
    const std::string plugins = in.line();
    std::vector<std::string> args{"srun"}, env;
    for (std::string l = in.line(); in.left() && !l.empty() && args.size() < 32; l = in.line()) args.push_back(l);
    while (in.left() && env.size() < 32) env.push_back(in.line());
    std::vector<const char *> argv, envp;
    for (const std::string &a : args) argv.push_back(a.c_str());
    argv.push_back(nullptr);
    const char *export_env = nullptr;
    for (const std::string &e : env) {
        envp.push_back(e.c_str());
        if (e.rfind("SLURM_EXPORT_ENV=", 0) == 0) export_env = e.c_str() + 17;
    }
    envp.push_back(nullptr);
    const int argc = static_cast<int>(args.size());

    const int all = db_srun_exports_all(argc, argv.data(), export_env);
    FUZZ_CHECK(all == 0 || all == 1, "exports_all %d", all);
    // The same line with the variable saying NONE can only carry more.
    FUZZ_CHECK(!db_srun_exports_all(argc, argv.data(), "NONE") || all, "NONE in the environment exports all");
    const int async = db_srun_async(argc, argv.data());
    FUZZ_CHECK(async == 0 || async == 1, "async %d", async);

    char hint[512];
    std::memset(hint, 'x', sizeof hint);
    if (db_srun_hint(plugins.c_str(), argc, argv.data(), envp.data(), hint, sizeof hint) != 0) return;
    FUZZ_CHECK(std::memchr(hint, 0, sizeof hint), "hint unterminated");
    // Every node takes srun's word without an error.
    const std::string var = std::string(DB_DEVICES_HINT "=") + hint;
    const char *node_env[] = {var.c_str(), nullptr};
    db::EnvIndex index(node_env);
    db_node_input node;
    std::memset(&node, 0, sizeof node);
    node.env = node_env;
    db::NodePlan np;
    try {
        db::read_devices_hint(node, index, np);
    } catch (const db::Error &e) {
        FUZZ_CHECK(false, "the nodes refuse srun's %s: %s", var.c_str(), e.what());
    }
    // A buffer too small is -1 or still a whole word.
    char small[8];
    if (db_srun_hint(plugins.c_str(), argc, argv.data(), envp.data(), small, sizeof small) == 0)
        FUZZ_CHECK(std::strcmp(small, hint) == 0, "short buffer %s against %s", small, hint);
}

void layout(Take &in, uint8_t which) {
    const uint32_t nnodes = in.u8() % 48 + 1;
    std::vector<uint16_t> tasks(nnodes);
    for (uint16_t &t : tasks) t = in.u8() % 5;
    const uint32_t ntasks = std::accumulate(tasks.begin(), tasks.end(), 0u);
    std::vector<uint32_t> ranks(ntasks);
    std::iota(ranks.begin(), ranks.end(), 0u);
    for (uint32_t i = ntasks; i > 1; i--) std::swap(ranks[i - 1], ranks[in.u8() % i]);
    const bool twice = (which & 0x02) && ntasks > 1;
    if (twice) ranks[1] = ranks[0];
    std::vector<const uint32_t *> tids(nnodes);
    for (uint32_t n = 0, at = 0; n < nnodes; at += tasks[n], n++) tids[n] = ranks.data() + at;

    char *out = nullptr, err[DB_ERRLEN] = "";
    uint32_t rank0_node = 0;
    if (db_layout_hints(nnodes, ntasks, tasks.data(), tids.data(), &out, &rank0_node, err, sizeof err) != 0) {
        FUZZ_CHECK(!out && std::strlen(err) > 0, "a failed layout without a message");
        FUZZ_CHECK(std::count(tasks.begin(), tasks.end(), 0) || twice, "a layout refused: %s", err);
        return;
    }
    FUZZ_CHECK(!std::count(tasks.begin(), tasks.end(), 0) && !twice, "a broken layout taken: %s", out);
    FUZZ_CHECK(std::strlen(out) <= DB_NODE_RANKS_MAX, "too long");
    // Each node reads back its place in the order of the nodes' lowest ranks.
    std::vector<uint32_t> lowest(nnodes);
    for (uint32_t n = 0; n < nnodes; n++) lowest[n] = *std::min_element(tids[n], tids[n] + tasks[n]);
    FUZZ_CHECK(lowest[rank0_node] == 0, "rank 0 on node %u", rank0_node);
    for (uint32_t n = 0; n < nnodes; n++) {
        const uint32_t want = static_cast<uint32_t>(
            std::count_if(lowest.begin(), lowest.end(), [&](uint32_t l) { return l < lowest[n]; }));
        try {
            const db::NodeRank got = db::parse_node_ranks(DB_NODE_RANKS_HINT, out, nnodes, n);
            FUZZ_CHECK(got.rank == want, "node %u reads %u from %s, not %u", n, got.rank, out, want);
        } catch (const db::Error &e) {
            FUZZ_CHECK(false, "node %u refuses %s: %s", n, out, e.what());
        }
    }
    std::free(out);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    Take in(data, size);
    const uint8_t which = in.u8();
    if (which & 1)
        layout(in, which);
    else
        command_line(in);
    return 0;
}
