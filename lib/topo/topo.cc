#include "topo.hh"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>

namespace db::topo {

namespace {

std::string errno_text(int e) {
    char buf[128];
    // GNU strerror_r: may return a static string instead of filling buf.
    return strerror_r(e, buf, sizeof buf);
}

hwloc_topology_t new_topology() {
    hwloc_topology_t t = nullptr;
    if (hwloc_topology_init(&t) != 0) throw std::bad_alloc();
    // Slurm numbers every core of the node, also those outside slurmstepd's
    // own cgroup, so the plan needs the whole machine.
    hwloc_topology_set_flags(t, HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED);
    hwloc_topology_set_io_types_filter(t, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    hwloc_topology_set_cache_types_filter(t, HWLOC_TYPE_FILTER_KEEP_NONE);
    hwloc_topology_set_icache_types_filter(t, HWLOC_TYPE_FILTER_KEEP_NONE);
    hwloc_topology_set_type_filter(t, HWLOC_OBJ_MISC, HWLOC_TYPE_FILTER_KEEP_NONE);
    return t;
}

unsigned tree_depth(hwloc_obj_t o) {
    unsigned d = 0;
    for (; o->parent; o = o->parent) d++;
    return d;
}

// hwloc_get_common_ancestor_obj() walks by level depth, which I/O objects
// do not have (their depths are negative special values): walk parents.
hwloc_obj_t common_ancestor(hwloc_obj_t a, hwloc_obj_t b) {
    unsigned da = tree_depth(a), db = tree_depth(b);
    for (; da > db; da--) a = a->parent;
    for (; db > da; db--) b = b->parent;
    while (a != b) {
        a = a->parent;
        b = b->parent;
    }
    return a;
}

// Edges between two objects through their common ancestor.
unsigned hops(hwloc_obj_t a, hwloc_obj_t b) {
    return tree_depth(a) + tree_depth(b) - 2 * tree_depth(common_ancestor(a, b));
}

bool has_prefix_number(const char *name, std::string_view prefix) {
    if (!name || std::strncmp(name, prefix.data(), prefix.size()) != 0) return false;
    const char *p = name + prefix.size();
    if (!*p) return false;
    for (; *p; p++)
        if (*p < '0' || *p > '9') return false;
    return true;
}

// The vendor libraries' GPU devices: one per physical GPU, unlike OpenCL
// (several per card) or DRM (the BMC's VGA chip too).
bool vendor_gpu_osdev(hwloc_obj_t o) {
    if (o->type != HWLOC_OBJ_OS_DEVICE) return false;
    if (o->attr->osdev.type != HWLOC_OBJ_OSDEV_GPU && o->attr->osdev.type != HWLOC_OBJ_OSDEV_COPROC) return false;
    for (const char *p : {"cuda", "nvml", "rsmi", "ze"})
        if (has_prefix_number(o->name, p)) return true;
    return false;
}

const char *vendor_gpu_name(hwloc_obj_t pci) {
    for (hwloc_obj_t c = pci->io_first_child; c; c = c->next_sibling)
        if (vendor_gpu_osdev(c)) return c->name;
    return nullptr;
}

}  // namespace

Bitmap::Bitmap() : b_(hwloc_bitmap_alloc()) {
    if (!b_) throw std::bad_alloc();
}

Bitmap::Bitmap(hwloc_const_bitmap_t copy) : b_(hwloc_bitmap_dup(copy)) {
    if (!b_) throw std::bad_alloc();
}

unsigned Bitmap::weight() const {
    int w = hwloc_bitmap_weight(b_.get());
    return w < 0 ? 0 : static_cast<unsigned>(w);
}

std::string Bitmap::list() const {
    char *s = nullptr;
    if (hwloc_bitmap_list_asprintf(&s, b_.get()) < 0 || !s) throw std::bad_alloc();
    std::string out(s);
    free(s);
    return out;
}

std::string read_file(const std::string &path, size_t max) {
    // O_NONBLOCK and the type check keep a FIFO from stalling slurmstepd;
    // the size cap bounds what a bad file costs.
    int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) throw Error(path + ": " + errno_text(errno));
    struct stat st;
    std::string text;
    std::string fail;
    if (fstat(fd, &st) != 0) {
        fail = errno_text(errno);
    } else if (!S_ISREG(st.st_mode)) {
        fail = "not a regular file";
    } else {
        char buf[16384];
        for (;;) {
            ssize_t r = read(fd, buf, sizeof buf);
            if (r < 0 && errno == EINTR) continue;
            if (r < 0) {
                fail = errno_text(errno);
                break;
            }
            if (r == 0) break;
            text.append(buf, static_cast<size_t>(r));
            if (text.size() > max) {
                fail = "larger than " + std::to_string(max) + " bytes";
                break;
            }
        }
    }
    close(fd);
    if (!fail.empty()) throw Error(path + ": " + fail);
    return text;
}

Topology Topology::from_xml_file(const std::string &path) { return from_xml_text(read_file(path, kMaxXml), path); }

Topology Topology::from_xml_text(const std::string &xml, const std::string &source) {
    Topology out;
    out.source_ = source;
    out.t_.reset(new_topology());
    if (xml.empty()) throw Error(source + ": empty file");
    // hwloc's own exports count the terminating NUL in the size.
    if (hwloc_topology_set_xmlbuffer(out.get(), xml.c_str(), static_cast<int>(xml.size() + 1)) != 0 ||
        hwloc_topology_load(out.get()) != 0)
        throw Error(source + ": not an hwloc XML topology");
    return out;
}

Topology Topology::live() {
    Topology out;
    out.source_ = "live discovery";
    out.t_.reset(new_topology());
    // Vendor libraries (CUDA, NVML, ROCm SMI, Level Zero, OpenCL, GL) cost
    // tens to hundreds of milliseconds to load, and libpciaccess scans PCI
    // config space (and leaks): the Linux backend reads PCI ids, locality
    // and network names from sysfs, which is all closest uses.
    for (const char *c : {"cuda", "nvml", "rsmi", "levelzero", "opencl", "gl", "pci"})
        hwloc_topology_set_components(out.get(), HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, c);
    if (hwloc_topology_load(out.get()) != 0) throw Error("hwloc topology discovery failed: " + errno_text(errno));
    return out;
}

Topology Topology::synthetic(const std::string &desc) {
    Topology out;
    out.source_ = "synthetic " + desc;
    out.t_.reset(new_topology());
    if (hwloc_topology_set_synthetic(out.get(), desc.c_str()) != 0 || hwloc_topology_load(out.get()) != 0)
        throw Error("synthetic topology \"" + desc + "\" does not load");
    return out;
}

bool pci_before(hwloc_obj_t a, hwloc_obj_t b) {
    const auto &x = a->attr->pcidev, &y = b->attr->pcidev;
    if (x.domain != y.domain) return x.domain < y.domain;
    if (x.bus != y.bus) return x.bus < y.bus;
    if (x.dev != y.dev) return x.dev < y.dev;
    return x.func < y.func;
}

std::string busid(hwloc_obj_t pci) {
    char buf[32];
    snprintf(buf, sizeof buf, "%04x:%02x:%02x.%01x", pci->attr->pcidev.domain, pci->attr->pcidev.bus,
             pci->attr->pcidev.dev, pci->attr->pcidev.func);
    return buf;
}

std::vector<Gpu> gpus(const Topology &t) {
    std::vector<hwloc_obj_t> vendor, by_class;
    for (hwloc_obj_t p = hwloc_get_next_pcidev(t.get(), nullptr); p; p = hwloc_get_next_pcidev(t.get(), p)) {
        if (vendor_gpu_name(p)) vendor.push_back(p);
        const unsigned cls = p->attr->pcidev.class_id >> 8, ven = p->attr->pcidev.vendor_id;
        if (cls == 0x03 && (ven == 0x10de || ven == 0x1002)) by_class.push_back(p);
    }
    std::vector<hwloc_obj_t> &pick = vendor.empty() ? by_class : vendor;
    std::sort(pick.begin(), pick.end(), pci_before);
    std::vector<Gpu> out;
    for (hwloc_obj_t p : pick) {
        const char *n = vendor_gpu_name(p);
        out.push_back(Gpu{p, busid(p), n ? n : ""});
    }
    return out;
}

std::vector<unsigned> parse_list(std::string_view s, std::string_view what, unsigned max) {
    std::vector<unsigned> out;
    auto bad = [&](std::string_view why) -> Error { return Error(quoted(what, s) + ": " + std::string(why)); };
    if (s.empty()) throw bad("empty list");
    for (std::string_view part : split(s, ',')) {
        if (part.empty()) throw bad("empty entry");
        size_t dash = part.find('-');
        uint64_t lo, hi;
        std::string_view a = part.substr(0, dash), b = dash == std::string_view::npos ? a : part.substr(dash + 1);
        if (!parse_uint(a, max, lo) || !parse_uint(b, max, hi) || hi < lo)
            throw bad("\"" + std::string(part) + "\" is not N or N-M with N <= M <= " + std::to_string(max));
        if (out.size() + (hi - lo) > max) throw bad("too many entries");
        for (uint64_t v = lo; v <= hi; v++) out.push_back(static_cast<unsigned>(v));
    }
    std::vector<unsigned> sorted = out;
    std::sort(sorted.begin(), sorted.end());
    if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) throw bad("an entry is listed twice");
    return out;
}

int numa_of(const Topology &t, hwloc_const_bitmap_t cpus) {
    int best = -1;
    int best_w = 0;
    Bitmap both;
    for (hwloc_obj_t n = hwloc_get_next_obj_by_type(t.get(), HWLOC_OBJ_NUMANODE, nullptr); n;
         n = hwloc_get_next_obj_by_type(t.get(), HWLOC_OBJ_NUMANODE, n)) {
        hwloc_bitmap_and(both.get(), cpus, n->cpuset);
        const int w = hwloc_bitmap_weight(both.get());
        const int idx = static_cast<int>(n->os_index);
        if (w > best_w || (w == best_w && w > 0 && idx < best)) {
            best = idx;
            best_w = w;
        }
    }
    return best;
}

namespace {

// The name a job would configure for a high-speed NIC, or "" if `pci` is
// not one (plain Ethernet for management is not).
std::string hsn_name(hwloc_obj_t pci) {
    const char *fabric = nullptr, *net = nullptr;
    for (hwloc_obj_t c = pci->io_first_child; c; c = c->next_sibling) {
        if (c->type != HWLOC_OBJ_OS_DEVICE || !c->name) continue;
        if (c->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS && !fabric) fabric = c->name;
        if (c->attr->osdev.type == HWLOC_OBJ_OSDEV_NETWORK && !net) net = c->name;
    }
    if (fabric) return fabric;
    const bool ib_class = pci->attr->pcidev.class_id == 0x0c06;
    if (net &&
        (ib_class || !std::strncmp(net, "ib", 2) || !std::strncmp(net, "hsn", 3) || !std::strncmp(net, "hsi", 3)))
        return net;
    return ib_class ? busid(pci) : std::string();
}

}  // namespace

std::vector<std::string> nics_near(const Topology &t, hwloc_obj_t gpu) {
    struct Cand {
        unsigned level, hops;
        hwloc_obj_t pci;
        std::string name;
    };
    std::vector<Cand> found;
    hwloc_obj_t gpu_home = hwloc_get_non_io_ancestor_obj(t.get(), gpu);
    for (hwloc_obj_t p = hwloc_get_next_pcidev(t.get(), nullptr); p; p = hwloc_get_next_pcidev(t.get(), p)) {
        std::string name = hsn_name(p);
        if (name.empty()) continue;
        hwloc_obj_t anc = common_ancestor(gpu, p);
        unsigned level;
        if (hwloc_obj_type_is_io(anc->type))
            level = 0;  // same PCI switch or host bridge
        else if (hwloc_get_non_io_ancestor_obj(t.get(), p) == gpu_home)
            level = 1;  // same NUMA node side
        else
            continue;
        found.push_back(Cand{level, hops(gpu, p), p, std::move(name)});
    }
    if (found.empty()) return {};
    const unsigned best = std::min_element(found.begin(), found.end(), [](const Cand &a, const Cand &b) {
                              return a.level < b.level;
                          })->level;
    std::vector<Cand> keep;
    for (Cand &c : found)
        if (c.level == best) keep.push_back(std::move(c));
    std::sort(keep.begin(), keep.end(), [](const Cand &a, const Cand &b) {
        if (a.hops != b.hops) return a.hops < b.hops;
        return pci_before(a.pci, b.pci);
    });
    std::vector<std::string> out;
    for (Cand &c : keep)
        if (std::find(out.begin(), out.end(), c.name) == out.end()) out.push_back(std::move(c.name));
    return out;
}

unsigned pci_hops(hwloc_obj_t a, hwloc_obj_t b) { return hops(a, b); }

}  // namespace db::topo
