/* A stand-in for libamdhip64 (and for libcuda's module API) that records what an emitted
 * submission asks of it.
 *
 * Every call appends one JSON line to the file named by $SUBMITGEN_FAKEHIP_LOG (unset: records
 * nothing, so timing benchmarks measure only the caller):
 *   {"call":"hipModuleLoadData","module":1,"size":N,"sha256":"...","hex":"..."}  (the whole image)
 *   {"call":"hipModuleGetFunction","module":1,"function":257,"name":"gemm","found":true}
 *     (found: the name is a symbol name of that module's image, as a loader would look it up;
 *     when it is not, the call fails with hipErrorNotFound like the real runtime)
 *   {"call":"cuFuncSetAttribute","function":257,"attribute":8,"value":N}
 *   {"call":"hipModuleLaunchKernel","function":257,"grid":[x,y,z],"block":[x,y,z],"lds":N,
 *    "queue":0,"params":0,"kernarg":"hex"}
 * The image size is found the way the HIP runtime finds it: for a bare ELF, the furthest byte
 * covered by the section headers and the sections (and, for cubins, the program headers); for a clang offload bundle, its entries.
 * Build: gcc -shared -fPIC -O2 -o libfakehip.so fakehip.c
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int hipError_t;
enum { hipSuccess = 0, hipErrorInvalidValue = 1, hipErrorInvalidImage = 200, hipErrorNotFound = 500 };

#define FAKE_LOG_VARIABLE "SUBMITGEN_FAKEHIP_LOG"
#include "../fakelog.h"

static uint64_t rd64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }
static uint32_t rd32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static uint16_t rd16(const uint8_t *p) { uint16_t v; memcpy(&v, p, 2); return v; }

static size_t image_size(const uint8_t *p) {
    if (memcmp(p, "\x7f" "ELF", 4) == 0 && p[4] == 2) {
        uint64_t shoff = rd64(p + 0x28);
        uint16_t shentsize = rd16(p + 0x3a), shnum = rd16(p + 0x3c);
        uint64_t end = shoff + (uint64_t)shentsize * shnum;
        /* nvcc places the program headers last; HIP code objects never need this term */
        uint64_t phoff = rd64(p + 0x20);
        uint16_t phentsize = rd16(p + 0x36), phnum = rd16(p + 0x38);
        if (phoff + (uint64_t)phentsize * phnum > end) end = phoff + (uint64_t)phentsize * phnum;
        for (uint16_t i = 0; i < shnum; i++) {
            const uint8_t *sh = p + shoff + (uint64_t)i * shentsize;
            uint32_t type = rd32(sh + 4);
            uint64_t off = rd64(sh + 0x18), size = rd64(sh + 0x20);
            uint64_t e = off + (type == 8 /* SHT_NOBITS */ ? 0 : size);
            if (e > end) end = e;
        }
        return (size_t)end;
    }
    if (memcmp(p, "__CLANG_OFFLOAD_BUNDLE__", 24) == 0) {
        uint64_t n = rd64(p + 24), end = 0;
        const uint8_t *q = p + 32;
        for (uint64_t i = 0; i < n; i++) {
            uint64_t off = rd64(q), size = rd64(q + 8), idlen = rd64(q + 16);
            if (off + size > end) end = off + size;
            q += 24 + idlen;
        }
        return (size_t)end;
    }
    return 0;
}

static int next_module = 0;
static int next_function = 0;

/* Each loaded module's image, so that a function is looked up in its own module. */
#define MAX_MODULES 64
static uint8_t *module_image[MAX_MODULES + 1];
static size_t module_size[MAX_MODULES + 1];

/* Is `name` a NUL-terminated string of the image (a string-table entry)? */
static int has_symbol(int module, const char *name) {
    if (module < 1 || module > MAX_MODULES || !module_image[module]) return 0;
    size_t n = strlen(name), size = module_size[module];
    const uint8_t *p = module_image[module];
    for (size_t i = 1; i + n < size; i++)
        if (p[i - 1] == 0 && p[i + n] == 0 && memcmp(p + i, name, n) == 0) return 1;
    return 0;
}

hipError_t hipInit(unsigned flags) { (void)flags; return hipSuccess; }

hipError_t hipModuleLoadData(void **module, const void *image) {
    if (!module || !image) return hipErrorInvalidValue;
    size_t n = image_size((const uint8_t *)image);
    if (n == 0) return hipErrorInvalidImage;
    *module = (void *)(intptr_t)(++next_module);
    if (next_module <= MAX_MODULES && (module_image[next_module] = malloc(n)) != NULL) {
        memcpy(module_image[next_module], image, n);
        module_size[next_module] = n;
    }
    FILE *f = log_file();
    if (!f) return hipSuccess;
    fprintf(f, "{\"call\":\"hipModuleLoadData\",\"module\":%d,\"size\":%zu,\"hex\":\"", next_module, n);
    hex(f, (const uint8_t *)image, n);
    fputs("\"}\n", f);
    fflush(f);
    return hipSuccess;
}

hipError_t hipModuleGetFunction(void **function, void *module, const char *name) {
    if (!function || !name) return hipErrorInvalidValue;
    int found = has_symbol((int)(intptr_t)module, name);
    int id = ((int)(intptr_t)module << 8) | (++next_function & 0xff);
    *function = found ? (void *)(intptr_t)id : NULL;
    FILE *f = log_file();
    if (f) {
        fprintf(f, "{\"call\":\"hipModuleGetFunction\",\"module\":%d,\"function\":%d,\"name\":",
                (int)(intptr_t)module, id);
        json_string(f, name);
        fprintf(f, ",\"found\":%s}\n", found ? "true" : "false");
        fflush(f);
    }
    return found ? hipSuccess : hipErrorNotFound;
}

hipError_t hipModuleLaunchKernel(void *function, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                 unsigned by, unsigned bz, unsigned lds, void *queue, void **params,
                                 void **extra) {
    if (params && extra) return hipErrorInvalidValue;
    if (!extra || extra[0] != (void *)1 || extra[2] != (void *)2 || extra[4] != (void *)3)
        return hipErrorInvalidValue;
    const uint8_t *args = (const uint8_t *)extra[1];
    size_t size = *(const size_t *)extra[3];
    FILE *f = log_file();
    if (!f) return hipSuccess;
    fprintf(f,
            "{\"call\":\"hipModuleLaunchKernel\",\"function\":%d,\"grid\":[%u,%u,%u],\"block\":[%u,%u,%u],"
            "\"lds\":%u,\"queue\":%llu,\"kernarg\":\"",
            (int)(intptr_t)function, gx, gy, gz, bx, by, bz, lds, (unsigned long long)(uintptr_t)queue);
    hex(f, args, size);
    fputs("\"}\n", f);
    fflush(f);
    return hipSuccess;
}

hipError_t hipModuleUnload(void *module) { (void)module; return hipSuccess; }

/* The CUDA driver's module API has the same shape; only the end marker of `extra` differs
 * (CU_LAUNCH_PARAM_END is 0, HIP_LAUNCH_PARAM_END is 3). Calls are logged under the HIP names. */
static int launch(void *function, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                  unsigned lds, void *queue, void **params, void **extra, void *end) {
    if (params && extra) return hipErrorInvalidValue;
    if (!extra || extra[0] != (void *)1 || extra[2] != (void *)2 || extra[4] != end) return hipErrorInvalidValue;
    return hipModuleLaunchKernel(function, gx, gy, gz, bx, by, bz, lds, queue, NULL,
                                 (void *[]){extra[0], extra[1], extra[2], extra[3], (void *)3});
}

int cuModuleLoadData(void **module, const void *image) { return hipModuleLoadData(module, image); }
int cuModuleGetFunction(void **function, void *module, const char *name) {
    return hipModuleGetFunction(function, module, name);
}
int cuFuncSetAttribute(void *function, int attribute, int value) {
    FILE *f = log_file();
    if (f) {
        fprintf(f, "{\"call\":\"cuFuncSetAttribute\",\"function\":%d,\"attribute\":%d,\"value\":%d}\n",
                (int)(intptr_t)function, attribute, value);
        fflush(f);
    }
    return function ? hipSuccess : hipErrorInvalidValue;
}
int cuLaunchKernel(void *function, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                   unsigned lds, void *queue, void **params, void **extra) {
    return launch(function, gx, gy, gz, bx, by, bz, lds, queue, params, extra, (void *)0);
}
