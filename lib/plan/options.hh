// The user's --dist-bind value and the admin's plugstack.conf arguments.
#pragma once

#include <string>
#include <string_view>

#include "db_core.h"

namespace db {

db_request parse_request(std::string_view value, std::string_view origin);
db_config parse_config(int argc, const char *const *argv);
db_config default_config();
std::string format_master_addr(const db_config &cfg, std::string_view node_name, const char *node_addr);
bool distribution_is_arbitrary(const char *dist);

}  // namespace db
