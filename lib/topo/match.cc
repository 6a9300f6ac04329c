// Slurm's GPU numbers to the topology's PCI devices.
#include <dirent.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>

#include "topo.hh"

namespace db::topo {

namespace {

std::string trim(std::string_view s) {
    size_t a = 0, b = s.size();
    while (a < b && std::isspace(static_cast<unsigned char>(s[a]))) a++;
    while (b > a && std::isspace(static_cast<unsigned char>(s[b - 1]))) b--;
    return std::string(s.substr(a, b - a));
}

std::string lower(std::string s) {
    for (char &c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

}  // namespace

std::vector<NvidiaGpu> read_nvidia(const std::string &dir) {
    DIR *d = opendir(dir.c_str());
    if (!d) {
        if (errno == ENOENT || errno == ENOTDIR) return {};
        char buf[128];
        throw Error(dir + ": " + strerror_r(errno, buf, sizeof buf));
    }
    std::vector<std::string> entries;
    while (struct dirent *e = readdir(d))
        if (e->d_name[0] != '.') entries.emplace_back(e->d_name);
    closedir(d);
    std::sort(entries.begin(), entries.end());

    std::vector<NvidiaGpu> out;
    for (const std::string &name : entries) {
        const std::string path = dir + "/" + name + "/information";
        const std::string text = read_file(path, 65536);
        NvidiaGpu g;
        g.busid = lower(name);
        for (std::string_view line : split(text, '\n')) {
            const size_t colon = line.find(':');
            if (colon == std::string_view::npos) continue;
            const std::string key = trim(line.substr(0, colon)), value = trim(line.substr(colon + 1));
            if (key == "Device Minor") {
                uint64_t m;
                if (!parse_uint(value, 1u << 20, m))
                    throw Error(path + ": " + quoted("Device Minor", value) + ": expected a number");
                g.minor = static_cast<long>(m);
            } else if (key == "GPU UUID") {
                g.uuid = value;
            } else if (key == "Bus Location") {
                g.busid = lower(value);
            }
        }
        if (g.minor < 0) throw Error(path + ": no \"Device Minor\" line");
        out.push_back(std::move(g));
    }
    return out;
}

Matched match_gpus(const Topology &t, const std::vector<std::string> &ids, const std::vector<NvidiaGpu> &nvidia) {
    Matched m;
    if (!nvidia.empty()) {
        m.how = "GPUs matched by PCI bus id (NVIDIA device minors)";
        for (const std::string &id : ids) {
            const NvidiaGpu *hit = nullptr;
            uint64_t minor = 0;
            const bool by_minor = parse_uint(id, 999999, minor);
            for (const NvidiaGpu &g : nvidia)
                if (by_minor ? g.minor == static_cast<long>(minor) : (!g.uuid.empty() && g.uuid == id)) hit = &g;
            if (!hit)
                throw Error("Slurm's GPU " + id + " is not one of the NVIDIA driver's GPUs (" +
                            std::to_string(nvidia.size()) + " listed)");
            hwloc_obj_t p = hwloc_get_pcidev_by_busidstring(t.get(), hit->busid.c_str());
            if (!p) throw Error("GPU " + id + " (PCI " + hit->busid + ") is not in the topology");
            m.pci.push_back(p);
        }
    } else {
        m.how = "GPUs matched by PCI bus order";
        const std::vector<Gpu> all = gpus(t);
        if (all.empty()) throw Error("the topology shows no GPUs");
        for (const std::string &id : ids) {
            uint64_t n;
            if (!parse_uint(id, 999999, n))
                throw Error("GPU \"" + id +
                            "\" is not a number, and without the NVIDIA driver's GPU list it cannot be matched");
            if (n >= all.size())
                throw Error("Slurm's GPU " + id + ", but the topology shows only " + std::to_string(all.size()) +
                            " GPUs");
            m.pci.push_back(all[n].pci);
        }
    }
    for (size_t i = 0; i < m.pci.size(); i++)
        for (size_t j = i + 1; j < m.pci.size(); j++)
            if (m.pci[i] == m.pci[j])
                throw Error("GPUs " + ids[i] + " and " + ids[j] + " are the same device (PCI " + busid(m.pci[i]) + ")");
    return m;
}

}  // namespace db::topo
