// libdistbind beside an MPI library in the same process: which of Slurm's
// PMI servers the two can share, for DIST_BIND_BOOTSTRAP=auto.
//
// Measured in the lab (lab/t_mpi):
// - PMI-1/PMI-2 serve one client per process (one PMI_FD): a second
//   PMI2_Init beside MPICH's makes Slurm's server answer "invalid pmi1
//   command received: 'init'" and the step fails, whichever starts first.
// - Over PMIx the two share the process's one PMIx client, in either order
//   with Open MPI 4.1; Open MPI 5 and later skip their own PMIx_Init when
//   PMIx is already initialised (ompi_rte_init calls it only when
//   PMIx_Initialized() is false), leave their own process name unset and
//   abort in MPI_Init, so libdistbind must not be PMIx's first client
//   there.  After MPI_Init it may: MPI's PMIx_Init has run.
// The MPI library is found through the process's global symbols: a program
// linked with libmpi has them; one that loads MPI later with RTLD_LOCAL
// (Python's extension modules) is not seen, and then mpi4py's import has
// usually run MPI_Init already.
#include <dlfcn.h>

#include <cstdlib>
#include <cstring>

#include "bootstrap/beside_mpi.hh"

namespace db::rt {

MpiSeen mpi_in_process() {
    MpiSeen m;
    using initialized_fn = int (*)(int *);
    using version_fn = int (*)(char *, int *);
    auto initialized = reinterpret_cast<initialized_fn>(dlsym(RTLD_DEFAULT, "MPI_Initialized"));
    if (!initialized) return m;
    m.present = true;
    int flag = 0;
    // MPI_Initialized and MPI_Get_library_version may be called at any
    // time, before MPI_Init too (MPI 3.0).
    if (initialized(&flag) == 0) m.initialized = flag != 0;
    if (auto version = reinterpret_cast<version_fn>(dlsym(RTLD_DEFAULT, "MPI_Get_library_version"))) {
        // MPICH's MPI_MAX_LIBRARY_VERSION_STRING is 8192, Open MPI's 256.
        std::string buf(8192, '\0');
        int len = 0;
        if (version(&buf[0], &len) == 0) {
            buf.resize(std::strlen(buf.c_str()));
            m.version = buf.substr(0, buf.find_first_of(",\n"));
        }
    }
    return m;
}

static int open_mpi_major(const std::string &version) {
    static const char kOmpi[] = "Open MPI v";
    if (version.compare(0, sizeof kOmpi - 1, kOmpi) != 0) return 0;
    return std::atoi(version.c_str() + sizeof kOmpi - 1);
}

std::string pmi_conflict(const MpiSeen &m, std::string_view pmi) {
    if (!m.present) return "";
    std::string who = m.version.empty() ? std::string("an MPI library") : m.version;
    if (pmi == "pmi2")
        return who +
               " is in this process, and PMI-2 serves one client per process: a second PMI2_Init "
               "beside MPI's makes the step fail";
    if (pmi == "pmix" && !m.initialized && open_mpi_major(m.version) >= 5)
        return who +
               " is in this process and MPI_Init has not run: Open MPI 5 and later skip their own "
               "PMIx_Init when PMIx is already up and then fail in MPI_Init";
    return "";
}

}  // namespace db::rt
