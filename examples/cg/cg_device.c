/* See cg_device.h. */
#include "cg_device.h"

#include <stdio.h>

#ifdef CG_HAVE_CUDA
#include <cuda_runtime_api.h>

int cg_device_init(int local_rank, char* why, size_t len) {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
        snprintf(why, len, "no usable GPU (%s)", e != cudaSuccess ? cudaGetErrorString(e) : "no device");
        return 0;
    }
    e = cudaSetDevice(local_rank % n);
    if (e != cudaSuccess) {
        snprintf(why, len, "cudaSetDevice(%d): %s", local_rank % n, cudaGetErrorString(e));
        return 0;
    }
    return 1;
}

void* cg_device_alloc(size_t bytes) {
    void* p = NULL;
    return cudaMalloc(&p, bytes) == cudaSuccess ? p : NULL;
}

void cg_device_free(void* p) {
    cudaFree(p);
}

int cg_device_put(void* device_dst, const void* host_src, size_t bytes) {
    return cudaMemcpy(device_dst, host_src, bytes, cudaMemcpyHostToDevice) != cudaSuccess;
}

int cg_device_get(void* host_dst, const void* device_src, size_t bytes) {
    return cudaMemcpy(host_dst, device_src, bytes, cudaMemcpyDeviceToHost) != cudaSuccess;
}

#else /* no CUDA in this build */

int cg_device_init(int local_rank, char* why, size_t len) {
    (void)local_rank;
    snprintf(why, len, "built without CUDA");
    return 0;
}

void* cg_device_alloc(size_t bytes) {
    (void)bytes;
    return NULL;
}

void cg_device_free(void* p) {
    (void)p;
}

int cg_device_put(void* device_dst, const void* host_src, size_t bytes) {
    (void)device_dst, (void)host_src, (void)bytes;
    return 1;
}

int cg_device_get(void* host_dst, const void* device_src, size_t bytes) {
    (void)host_dst, (void)device_src, (void)bytes;
    return 1;
}

#endif
