// srun's words to the nodes as the nodes read them (db_core.h,
// DB_WORD_PREFIX): under the carried name srun adds where its --export
// drops the plain one, else under the plain name.
#include "db_core.h"
#include "plan.hh"

namespace db {

const char *const kSrunWordsGone[9] = {
    DB_RANK0_HINT,
    DB_NODE_RANKS_HINT,
    DB_DEVICES_HINT,
    DB_SRUN_VERSION_HINT,
    DB_CARRIED(DB_RANK0_HINT),
    DB_CARRIED(DB_NODE_RANKS_HINT),
    DB_CARRIED(DB_DEVICES_HINT),
    DB_CARRIED(DB_SRUN_VERSION_HINT),
    DB_CARRIED(DB_SECRET_VAR),
};

SrunWord srun_word(const EnvIndex &env, const char *carried) {
    const char *plain = DB_PLAIN(carried);
    if (const char *v = env.get(carried)) return {carried, v};
    if (const char *v = env.get(plain)) return {plain, v};
    return {};
}

const char *step_secret(const EnvIndex &env) { return srun_word(env, DB_CARRIED(DB_SECRET_VAR)).value; }

}  // namespace db
