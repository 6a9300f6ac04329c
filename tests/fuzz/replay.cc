// Replays inputs through one fuzz harness without libFuzzer, for `make
// check` (built with the normal compiler under ASan/UBSan): every file in
// the directories given, or in FUZZ_DIRS (the harness's checked-in corpus
// and reproducers) when none are.  A harness that finds a broken invariant
// aborts; no inputs at all is a failure too.
#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "fuzz.hh"

namespace {

void collect(const std::string &path, std::vector<std::string> &out) {
    struct stat st;
    if (stat(path.c_str(), &st) != 0) return;
    if (S_ISREG(st.st_mode)) {
        out.push_back(path);
        return;
    }
    DIR *d = opendir(path.c_str());
    if (!d) return;
    while (dirent *e = readdir(d))
        if (e->d_name[0] != '.') collect(path + "/" + e->d_name, out);
    closedir(d);
}

}  // namespace

int main(int argc, char **argv) {
    std::vector<std::string> dirs(argv + 1, argv + argc), files;
    if (dirs.empty()) {
        std::stringstream all(FUZZ_DIRS);
        for (std::string d; std::getline(all, d, ':');) dirs.push_back(d);
    }
    for (const std::string &d : dirs) collect(d, files);
    std::sort(files.begin(), files.end());
    for (const std::string &f : files) {
        std::ifstream in(f, std::ios::binary);
        std::vector<uint8_t> data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        std::fprintf(stderr, "replay %s (%zu bytes)\n", f.c_str(), data.size());
        LLVMFuzzerTestOneInput(data.data(), data.size());
    }
    std::printf("%zu inputs replayed\n", files.size());
    return files.empty() ? 1 : 0;
}
