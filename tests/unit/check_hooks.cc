// dist-bind-check's row and verdict code, reached from the C unit test
// test_check_rows.c: each rank's row is made by the tool's own my_row()
// from the process environment, as on a real node; then, where a case asks,
// changed as CUDA or another rank would have it (gpu_count[i] >= 0: CUDA
// saw that many devices and said so; corrupt[i]: 1 a host name without its
// end, 2 a GPU status that is none, 3 a rank that is not its place; 4 a
// GPU UUID of its own, 5 one GPU UUID for all; 6 before the row is made: a
// worker a launcher re-ranked under an srun --dist-bind task, torchrun-like:
// DIST_BIND_SET opens with the agent's place, SLURM_PROCID is the agent's;
// 7 variables changed after dist-bind).
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "check.hh"

extern "C" int dbcheck_test_rows(int n, const char *const *visible, const char *const *own, const int *device,
                                 const int *gpu_count, const int *corrupt, char *gpus, char *flags, char *problems,
                                 size_t len) {
    std::vector<dbcheck::Row> rows;
    for (int i = 0; i < n; i++) {
        if (visible[i])
            setenv("CUDA_VISIBLE_DEVICES", visible[i], 1);
        else
            unsetenv("CUDA_VISIBLE_DEVICES");
        if (own[i])
            setenv("DIST_BIND_GPUS", own[i], 1);
        else
            unsetenv("DIST_BIND_GPUS");
        std::vector<std::string> env = {"RANK=" + std::to_string(i),
                                        "WORLD_SIZE=" + std::to_string(n),
                                        "LOCAL_RANK=" + std::to_string(i),
                                        "LOCAL_WORLD_SIZE=" + std::to_string(n),
                                        "NODE_RANK=0",
                                        "DIST_BIND_DEVICE=" + std::to_string(device[i])};
        const bool relaunched = corrupt && (corrupt[i] == 6 || corrupt[i] == 8);
        if (corrupt && corrupt[i] == 8) {  // one worker of agent i (its node rank) on one host
            env[2] = "LOCAL_RANK=0";
            env[3] = "LOCAL_WORLD_SIZE=1";
            env.push_back("GROUP_RANK=" + std::to_string(i));
        }
        if (relaunched) {
            env.push_back("DIST_BIND_MODE=rank");
            env.push_back("DIST_BIND_SET=5,0,9;");
            setenv("DIST_BIND_SET", "5,0,9;", 1);
            setenv("SLURM_PROCID", "5", 1);
            setenv("SLURM_LOCALID", "0", 1);
        }
        std::vector<const char *> envp;
        for (const std::string &e : env) envp.push_back(e.c_str());
        envp.push_back(nullptr);
        distbind_t *db = nullptr;
        if (distbind_create_env(&db, envp.data()) != DISTBIND_OK) return 0;
        dbcheck::Row r = dbcheck::my_row(db);
        distbind_destroy(db);
        if (relaunched)
            for (const char *name : {"DIST_BIND_SET", "SLURM_PROCID", "SLURM_LOCALID"}) unsetenv(name);
        if (gpu_count && gpu_count[i] >= 0) {
            r.gpu_count = gpu_count[i];
            r.gpu_status = gpu_count[i] ? DISTBIND_OK : DISTBIND_ERR_NO_GPU;
            dbcheck::set_gpu_lists(r, visible[i], own[i]);
        }
        if (corrupt && corrupt[i] == 1) std::memset(r.host, 'x', sizeof r.host);
        if (corrupt && corrupt[i] == 2) r.gpu_status = 99;
        if (corrupt && corrupt[i] == 3) r.rank = 7;
        if (corrupt && corrupt[i] == 4) dbcheck::put(r.uuid, sizeof r.uuid, "GPU-0000000" + std::to_string(i));
        if (corrupt && corrupt[i] == 5) dbcheck::put(r.uuid, sizeof r.uuid, "GPU-00000000");
        if (corrupt && corrupt[i] == 7) dbcheck::put(r.overwritten, sizeof r.overwritten, "LOCAL_RANK,MASTER_PORT");
        rows.push_back(r);
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
    dbcheck::put(gpus, len, g);
    dbcheck::put(flags, len, f);
    dbcheck::put(problems, len, p);
    return 1;
}
