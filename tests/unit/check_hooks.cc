// dist-bind-check's row and verdict code, reached from the C unit test
// test_check_rows.c: each rank's row is made by the tool's own my_row()
// from the process environment, as on a real node.
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "check.hh"
#include "text.hh"

extern "C" int dbcheck_test_rows(int n, const char *const *visible, const char *const *own, const int *device,
                                 char *gpus, char *flags, char *problems, size_t len) {
    std::vector<dbcheck::Row> rows;
    for (int i = 0; i < n; i++) {
        if (visible[i]) setenv("CUDA_VISIBLE_DEVICES", visible[i], 1);
        else unsetenv("CUDA_VISIBLE_DEVICES");
        if (own[i]) setenv("DIST_BIND_GPUS", own[i], 1);
        else unsetenv("DIST_BIND_GPUS");
        std::vector<std::string> env = {"RANK=" + std::to_string(i), "WORLD_SIZE=" + std::to_string(n),
                                        "LOCAL_RANK=" + std::to_string(i), "LOCAL_WORLD_SIZE=" + std::to_string(n),
                                        "NODE_RANK=0", "DIST_BIND_DEVICE=" + std::to_string(device[i])};
        std::vector<const char *> envp;
        for (const std::string &e : env) envp.push_back(e.c_str());
        envp.push_back(nullptr);
        distbind_t *db = nullptr;
        if (distbind_create_env(&db, envp.data()) != DISTBIND_OK) return 0;
        rows.push_back(dbcheck::my_row(db));
        distbind_destroy(db);
    }
    unsetenv("CUDA_VISIBLE_DEVICES");
    unsetenv("DIST_BIND_GPUS");
    dbcheck::Verdict v = dbcheck::judge(rows);
    std::string g, f, p;
    for (int i = 0; i < n; i++) {
        auto it = v.flags.find(i);
        g += (i ? ";" : "") + dbcheck::slurm_gpu(rows[static_cast<size_t>(i)]);
        f += (i ? ";" : "") + (it == v.flags.end() ? std::string("ok") : it->second);
    }
    for (const std::string &x : v.problems) p += x + "\n";
    db::copy_out(g, gpus, len);
    db::copy_out(f, flags, len);
    db::copy_out(p, problems, len);
    return 1;
}
