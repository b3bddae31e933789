/* Device memory for the examples, through the CUDA runtime when the build
 * found CUDA (CG_HAVE_CUDA); without it every call reports "no GPU". Plain C
 * functions, so the Fortran example binds to them too. */
#ifndef CG_DEVICE_H
#define CG_DEVICE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 1 if a GPU is usable (and selected: device `local_rank` modulo the number
 * of devices), 0 otherwise with the reason in why[len]. */
int cg_device_init(int local_rank, char* why, size_t len);

void* cg_device_alloc(size_t bytes); /* NULL on failure */
void cg_device_free(void* p);

/* Synchronous copies; 0 on success. */
int cg_device_put(void* device_dst, const void* host_src, size_t bytes);
int cg_device_get(void* host_dst, const void* device_src, size_t bytes);

#ifdef __cplusplus
}
#endif

#endif /* CG_DEVICE_H */
