/*
 * The fake GPU driver shared by the fake libcudart and libnccl (test code,
 * never installed).  libfakegpu.so plays the part of the NVIDIA driver:
 * it knows the node's GPUs, which of them this process can open, what
 * CUDA_VISIBLE_DEVICES makes of them, each thread's current device, the
 * contexts a process holds (and so exclusive-process mode) and the work
 * queued on streams.  Both fakes link it, as libcudart and NCCL both talk
 * to the one driver, so a device set through one is the device the other
 * sees.
 *
 * The GPUs come from the environment (README.md in this folder):
 *   FAKEGPU_DEVICES  the node's GPUs; unset means "no driver"
 *   FAKEGPU_STATE    a folder shared by the processes of a test (locks of
 *                    exclusive-mode GPUs, NCCL's rendezvous files)
 *   FAKEGPU_NCCL     failures and delays to inject into the fake NCCL
 */
#ifndef FAKEGPU_H
#define FAKEGPU_H

#include <pthread.h>
#include <stddef.h>

#define FG_MAX_GPUS 64
#define FG_MAX_MIG 8

enum fg_mode { FG_MODE_DEFAULT = 0, FG_MODE_EXCLUSIVE = 3, FG_MODE_PROHIBITED = 2 };

/* One GPU of the node, or one MIG instance of it. */
struct fg_dev {
    char bus[16];           /* "0000:3B:00.0" */
    unsigned char uuid[16]; /* what cudaDeviceProp.uuid holds */
    char uuid_str[64];      /* "GPU-..." or "MIG-..." */
    int mode;               /* enum fg_mode */
    int gpu;                /* index of the physical GPU in the node's list */
    size_t mem;             /* bytes cudaMalloc may hand out at once, 0: any */
};

/* What the driver returns; the fakes map them to CUDA's and NCCL's codes. */
enum fg_err { FG_OK = 0, FG_NO_DRIVER, FG_NO_DEVICE, FG_INVALID_DEVICE, FG_UNAVAILABLE };

/* Devices this process sees, after device files, bus order,
 * CUDA_VISIBLE_DEVICES and MIG: FG_OK with *n set, FG_NO_DRIVER. */
int fg_count(int *n);
/* Device `ordinal` of that list, or NULL. */
const struct fg_dev *fg_device(int ordinal);
/* Every GPU of the node in bus order, whatever this process may open (for
 * the fake nvidia-smi).  n is set; NULL without a driver. */
const struct fg_dev *fg_node_gpus(int *n);

/* The calling thread's current device (0 until set). */
int fg_current(void);
/* Make `ordinal` current and give the process a context on it, as
 * cudaSetDevice does since CUDA 12: FG_UNAVAILABLE in exclusive-process
 * mode when another process holds the GPU, and in prohibited mode. */
int fg_set_current(int ordinal);
/* A context on the current device (for calls that need one). */
int fg_need_context(void);

/* Work queued on a stream (NCCL's collectives): a stream is busy until
 * every piece of work on it has ended. */
struct CUstream_st {
    unsigned magic;
    int dev;
    int pending;
};
#define FG_STREAM_MAGIC 0x57aea11u
void fg_work_begin(struct CUstream_st *s);
void fg_work_end(struct CUstream_st *s);
int fg_stream_busy(struct CUstream_st *s);
void fg_stream_wait(struct CUstream_st *s);
/* Until no work is queued on any stream of `dev` (the legacy default
 * stream's implicit synchronisation, which cudaMemcpy has). */
void fg_device_wait(int dev);
/* The default stream of `dev` (stream 0). */
struct CUstream_st *fg_default_stream(int dev);

/* FAKEGPU_STATE, created if missing. */
const char *fg_state_dir(void);
/* This host's name. */
const char *fg_host(void);
/* From FAKEGPU_NCCL ("fail-init=3,delay-init=1:2.5"): whether `key` is
 * set for `rank` (or for every rank: "key" alone, or "key=*"), and its
 * seconds (0 when none given). */
int fg_inject(const char *key, int rank, double *seconds);
/* Sleep `s` seconds, waking early when *stop becomes non-zero. */
void fg_sleep(double s, volatile int *stop);

#endif
