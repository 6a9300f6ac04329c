// Topology for --dist-bind=closest: load a node's hwloc topology (slurmd's
// cached XML or live discovery), find its GPUs and high-speed NICs, model
// where Slurm puts each task's CPUs, match Slurm's GPU numbers to PCI
// devices, and choose each task's GPUs.  Everything throws db::Error with a
// message that says what was wrong; nothing here talks to Slurm.
#pragma once

#include <hwloc.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "text.hh"

namespace db::topo {

// An hwloc bitmap with an owner.
class Bitmap {
  public:
    Bitmap();
    explicit Bitmap(hwloc_const_bitmap_t copy);
    hwloc_bitmap_t get() const { return b_.get(); }
    unsigned weight() const;
    bool empty() const { return weight() == 0; }
    // Linux cpulist form: "0-3,8".
    std::string list() const;

  private:
    struct Free {
        void operator()(hwloc_bitmap_t b) const { hwloc_bitmap_free(b); }
    };
    std::unique_ptr<hwloc_bitmap_s, Free> b_;
};

class Topology {
  public:
    // The whole machine from an XML file.  The file is read here, without
    // blocking (a FIFO or device is refused) and at most kMaxXml bytes.
    static Topology from_xml_file(const std::string &path);
    static Topology from_xml_text(const std::string &xml, const std::string &source);
    // This machine, with only the I/O detail closest needs (PCI devices
    // and the OS's own network/GPU names; no vendor libraries, no caches).
    static Topology live();
    // "pack:2 numa:2 core:4 pu:2": CPU-only shapes for tests.
    static Topology synthetic(const std::string &desc);

    hwloc_topology_t get() const { return t_.get(); }
    const std::string &source() const { return source_; }

    static constexpr size_t kMaxXml = 64u << 20;

  private:
    struct Destroy {
        void operator()(hwloc_topology_t t) const { hwloc_topology_destroy(t); }
    };
    std::unique_ptr<hwloc_topology, Destroy> t_;
    std::string source_;
};

// A whole small file, read without blocking (a FIFO or device is refused),
// at most `max` bytes; throws naming the path.
std::string read_file(const std::string &path, size_t max);

// A GPU as the topology shows it.
struct Gpu {
    hwloc_obj_t pci = nullptr;
    std::string busid;  // "0000:34:00.0"
    std::string name;   // vendor OS device (cuda0, nvml3, rsmi4), "" when known by PCI class only
};

// The topology's GPUs in PCI bus order.  Where the topology carries vendor
// OS devices (cuda, nvml, rsmi, ze), exactly the PCI devices that have one;
// otherwise (live discovery) NVIDIA and AMD display-class PCI devices.
std::vector<Gpu> gpus(const Topology &t);

// PCI bus order: domain, bus, device, function.
bool pci_before(hwloc_obj_t a, hwloc_obj_t b);

// "0000:34:00.0" for a PCI device.
std::string busid(hwloc_obj_t pci);

// Edges between two objects of the tree through their common ancestor.
unsigned pci_hops(hwloc_obj_t a, hwloc_obj_t b);

// Parse a Linux CPU list ("0-3,8,10-11"), each value <= max.
std::vector<unsigned> parse_list(std::string_view s, std::string_view what, unsigned max = 1u << 20);

// The NUMA node (OS index) holding most of `cpus`; ties go to the lowest
// index; -1 when none.
int numa_of(const Topology &t, hwloc_const_bitmap_t cpus);

// High-speed NICs (InfiniBand/RoCE with an OpenFabrics device, InfiniBand
// class, or a network interface named ib*, hsn*, hsi*) nearest `gpu`: those
// under the same PCI switch or host bridge, else those attached to the same
// CPU-side object (NUMA node); none beyond that.  Names are the OpenFabrics
// device (what NCCL_IB_HCA and UCX take) or else the interface.
std::vector<std::string> nics_near(const Topology &t, hwloc_obj_t gpu);

// Slurm's second-level task distribution (over sockets).
enum class Dist { Block, Cyclic, FCyclic };
// SLURM_DISTRIBUTION ("block", "cyclic:block", "plane", "block:fcyclic,Pack", ...);
// NULL or no second level means Slurm's default, cyclic.
Dist parse_distribution(const char *value);
const char *dist_name(Dist d);

// Where Slurm binds each of `ntasks` local tasks: the step's cores on the
// node (Slurm's core numbers = hwloc's logical core indexes), whole cores
// per task (cpus_per_task CPUs, rounded up to cores; 0 = share them out),
// laid out over packages as `d` says.
std::vector<Bitmap> model_task_cpus(const Topology &t, const std::vector<unsigned> &step_cores, size_t ntasks,
                                    unsigned cpus_per_task, Dist d);

// The NVIDIA driver's view of one GPU (/proc/driver/nvidia/gpus/BUS/information).
struct NvidiaGpu {
    std::string busid;
    long minor = -1;
    std::string uuid;
};
// Every GPU under `dir`; empty when the directory does not exist.
std::vector<NvidiaGpu> read_nvidia(const std::string &dir);

// Slurm's GPU ids (numbers, or GPU- UUIDs) to PCI objects: by bus id where
// the NVIDIA driver lists the GPUs (device minor = Slurm's number, as with
// gres.conf File=/dev/nvidia<minor>), else by order (Slurm's GPU N = the
// N-th GPU in PCI bus order).  `how` says which.
struct Matched {
    std::vector<hwloc_obj_t> pci;  // one per id
    std::string how;
};
Matched match_gpus(const Topology &t, const std::vector<std::string> &ids, const std::vector<NvidiaGpu> &nvidia);

struct Choice {
    std::vector<size_t> gpus;  // positions in the step's list, nearest first
    int numa = -1;
    std::vector<std::string> nics;
};

// Each task's k GPUs among `step` (one PCI object per position): NUMA
// locality first, then package, then PCI distance among a task's GPUs, then
// PCI bus order; no GPU twice.  Throws when tasks * k > GPUs.
std::vector<Choice> choose(const Topology &t, const std::vector<hwloc_obj_t> &step,
                           const std::vector<Bitmap> &task_cpus, size_t k);

}  // namespace db::topo
