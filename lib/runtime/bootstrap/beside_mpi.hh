// An MPI library in this process (beside_mpi.cc), for the bootstrap choice.
#pragma once

#include <string>
#include <string_view>

namespace db::rt {

// Found through the process's global symbols; version is
// MPI_Get_library_version's first part ("Open MPI v5.0.7",
// "MPICH Version:      4.2.1").
struct MpiSeen {
    bool present = false, initialized = false;
    std::string version;
};
MpiSeen mpi_in_process();
// Why auto must not take `pmi` ("pmix", "pmi2") beside that MPI; "" when it may.
std::string pmi_conflict(const MpiSeen &m, std::string_view pmi);

}  // namespace db::rt
