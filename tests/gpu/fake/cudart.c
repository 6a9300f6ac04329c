/*
 * A fake libcudart (test code, never installed): the calls libdistbind
 * and dist-bind-check make, with CUDA's own signatures and error codes,
 * answered from the fake driver (fakegpu.h).  Built as libcudart.so.13,
 * and as libcudart.so.12 (FAKE_CUDART_MAJOR=12, which also has the
 * CUDA 12 name cudaGetDeviceProperties_v2) for a node with CUDA 12 only.
 * "Device memory" is host memory; work on a stream is whatever the fake
 * NCCL queued there.
 */
#define _GNU_SOURCE
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fakegpu.h"

#ifndef FAKE_CUDART_MAJOR
#define FAKE_CUDART_MAJOR 13
#endif

static cudaError_t from_fg(int rc) {
    switch (rc) {
    case FG_OK: return cudaSuccess;
    case FG_NO_DRIVER: return cudaErrorInsufficientDriver;
    case FG_NO_DEVICE: return cudaErrorNoDevice;
    case FG_INVALID_DEVICE: return cudaErrorInvalidDevice;
    default: return cudaErrorDevicesUnavailable;
    }
}

/* Whether `device` is an ordinal of this process. */
static cudaError_t check_device(int device) {
    int n;
    if (fg_count(&n) != FG_OK) return cudaErrorInsufficientDriver;
    if (n == 0) return cudaErrorNoDevice;
    return device >= 0 && device < n ? cudaSuccess : cudaErrorInvalidDevice;
}

cudaError_t cudaGetDeviceCount(int *count) {
    int n = 0;
    int rc = fg_count(&n);
    *count = n;
    if (rc != FG_OK) return from_fg(rc);
    return n ? cudaSuccess : cudaErrorNoDevice;
}

cudaError_t cudaSetDevice(int device) { return from_fg(fg_set_current(device)); }

cudaError_t cudaGetDevice(int *device) {
    int n;
    if (fg_count(&n) != FG_OK) return cudaErrorInsufficientDriver;
    if (n == 0) return cudaErrorNoDevice;
    *device = fg_current();
    return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int *version) {
    *version = FAKE_CUDART_MAJOR * 1000;
    return cudaSuccess;
}

cudaError_t cudaDeviceGetPCIBusId(char *pciBusId, int len, int device) {
    cudaError_t e = check_device(device);
    if (e != cudaSuccess) return e;
    if (!pciBusId || len < 13) return cudaErrorInvalidValue;
    snprintf(pciBusId, (size_t)len, "%s", fg_device(device)->bus);
    return cudaSuccess;
}

/* Only the fields whose place is the same in every CUDA since 10 (the name
 * and the uuid at offset 256): the caller's struct may be another CUDA's. */
cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device) {
    cudaError_t e = check_device(device);
    if (e != cudaSuccess) return e;
    const struct fg_dev *d = fg_device(device);
    snprintf(prop->name, sizeof prop->name, "Fake GPU %s", d->uuid_str);
    memcpy(&prop->uuid, d->uuid, sizeof d->uuid);
    return cudaSuccess;
}

#if FAKE_CUDART_MAJOR == 12
cudaError_t cudaGetDeviceProperties_v2(struct cudaDeviceProp *prop, int device);
cudaError_t cudaGetDeviceProperties_v2(struct cudaDeviceProp *prop, int device) {
    return cudaGetDeviceProperties(prop, device);
}
#endif

cudaError_t cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr, int device) {
    cudaError_t e = check_device(device);
    if (e != cudaSuccess) return e;
    if (attr != cudaDevAttrComputeMode) return cudaErrorInvalidValue;
    *value = fg_device(device)->mode;
    return cudaSuccess;
}

/* Device memory: a header that says so, then the bytes. */
struct alloc {
    unsigned magic;
    int dev;
    size_t size;
    max_align_t data[];
};
#define ALLOC_MAGIC 0xdeb1ce5u

static struct alloc *owner(const void *p) {
    if (!p) return NULL;
    struct alloc *a = (struct alloc *)((char *)p - offsetof(struct alloc, data));
    return a->magic == ALLOC_MAGIC ? a : NULL;
}

cudaError_t cudaMalloc(void **devPtr, size_t size) {
    cudaError_t e = from_fg(fg_need_context());
    if (e != cudaSuccess) return e;
    size_t mem = fg_device(fg_current())->mem;
    if (mem && size > mem) return cudaErrorMemoryAllocation;
    struct alloc *a = malloc(sizeof *a + size);
    if (!a) return cudaErrorMemoryAllocation;
    a->magic = ALLOC_MAGIC;
    a->dev = fg_current();
    a->size = size;
    *devPtr = a->data;
    return cudaSuccess;
}

cudaError_t cudaFree(void *devPtr) {
    struct alloc *a = owner(devPtr);
    if (!devPtr) return cudaSuccess;
    if (!a) return cudaErrorInvalidValue;
    fg_device_wait(a->dev);
    a->magic = 0;
    free(a);
    return cudaSuccess;
}

/* Synchronous, as on the legacy default stream: waits for queued work. */
cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind) {
    struct alloc *d = owner(dst), *s = owner(src);
    int ok;
    switch (kind) {
    case cudaMemcpyHostToDevice: ok = d && !s && count <= d->size; break;
    case cudaMemcpyDeviceToHost: ok = s && !d && count <= s->size; break;
    case cudaMemcpyDeviceToDevice: ok = s && d && count <= s->size && count <= d->size; break;
    case cudaMemcpyHostToHost: ok = !s && !d; break;
    case cudaMemcpyDefault: ok = 1; break;
    default: return cudaErrorInvalidMemcpyDirection;
    }
    if (!ok) return cudaErrorInvalidValue;
    if (d) fg_device_wait(d->dev);
    if (s) fg_device_wait(s->dev);
    memmove(dst, src, count);
    return cudaSuccess;
}

cudaError_t cudaStreamCreate(cudaStream_t *pStream) {
    cudaError_t e = from_fg(fg_need_context());
    if (e != cudaSuccess) return e;
    struct CUstream_st *s = calloc(1, sizeof *s);
    if (!s) return cudaErrorMemoryAllocation;
    s->magic = FG_STREAM_MAGIC;
    s->dev = fg_current();
    *pStream = s;
    return cudaSuccess;
}

static struct CUstream_st *stream_of(cudaStream_t s) {
    if (!s) return fg_default_stream(fg_current());
    return s->magic == FG_STREAM_MAGIC ? s : NULL;
}

cudaError_t cudaStreamQuery(cudaStream_t stream) {
    struct CUstream_st *s = stream_of(stream);
    if (!s) return cudaErrorInvalidResourceHandle;
    return fg_stream_busy(s) ? cudaErrorNotReady : cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
    struct CUstream_st *s = stream_of(stream);
    if (!s) return cudaErrorInvalidResourceHandle;
    fg_stream_wait(s);
    return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
    if (!stream || stream->magic != FG_STREAM_MAGIC) return cudaErrorInvalidResourceHandle;
    /* CUDA lets queued work finish first. */
    fg_stream_wait(stream);
    stream->magic = 0;
    free(stream);
    return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void) {
    fg_device_wait(fg_current());
    return cudaSuccess;
}

static const struct {
    cudaError_t e;
    const char *name, *text;
} errors[] = {
    {cudaSuccess, "cudaSuccess", "no error"},
    {cudaErrorInvalidValue, "cudaErrorInvalidValue", "invalid argument"},
    {cudaErrorMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory"},
    {cudaErrorInvalidMemcpyDirection, "cudaErrorInvalidMemcpyDirection", "invalid copy direction for memcpy"},
    {cudaErrorInsufficientDriver, "cudaErrorInsufficientDriver",
     "CUDA driver version is insufficient for CUDA runtime version"},
    {cudaErrorDevicesUnavailable, "cudaErrorDevicesUnavailable", "CUDA-capable device(s) is/are busy or unavailable"},
    {cudaErrorNoDevice, "cudaErrorNoDevice", "no CUDA-capable device is detected"},
    {cudaErrorInvalidDevice, "cudaErrorInvalidDevice", "invalid device ordinal"},
    {cudaErrorInvalidResourceHandle, "cudaErrorInvalidResourceHandle", "invalid resource handle"},
    {cudaErrorNotReady, "cudaErrorNotReady", "device not ready"},
};

const char *cudaGetErrorName(cudaError_t error) {
    for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++)
        if (errors[i].e == error) return errors[i].name;
    return "cudaErrorUnknown";
}

const char *cudaGetErrorString(cudaError_t error) {
    for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++)
        if (errors[i].e == error) return errors[i].text;
    return "unknown error";
}
