/* The state of the plugin's callbacks in this process (state.h). */
#include "state.h"

struct db_glue db_state;

db_request db_glue_effective(const struct db_glue *g) { return db_effective(&g->cfg, g->opt_given ? &g->opt : NULL); }

int db_glue_refused(const struct db_glue *g) { return !g->cfg_ok || (g->opt_given && !g->opt_ok); }
