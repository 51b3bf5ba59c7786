/* A stand-in for libhsa-runtime64 that records what an emitted --launcher aql submission asks of it.
 *
 * It implements only the functions the loader calls: one CPU and one GPU agent ("gfx950"), a
 * coarse-grained global region and a kernarg region on the GPU, an in-memory queue, signals, and
 * the executable API. Symbol info comes from $SUBMITGEN_FAKEHSA_SYMBOLS, which the test sets from
 * the code objects' metadata:  "NAME.kd=KERNARG,GROUP,PRIVATE;NAME2.kd=..."  (kernel object of the
 * i-th entry: 0x10000000 + 0x1000 * i). An entry written "N:NAME.kd=..." is found only in an
 * executable holding the N-th code object read (0-based, in hsa_code_object_reader_create_from_memory
 * order), as a real loader finds a symbol only in its own executable; several objects may then
 * hold symbols of the same name, each with its own kernel object.
 *
 * A doorbell store consumes every packet up to the stored index, as a packet processor would: it
 * records the 64 packet bytes and the kernarg segment the packet points at (the symbol's whole
 * kernarg segment size), resets the slot's header to INVALID, advances the read index and
 * decrements the packet's completion signal. Every call appends one JSON line to
 * $SUBMITGEN_FAKEHSA_LOG:
 *   {"call":"hsa_code_object_reader_create_from_memory","reader":H,"size":N,"hex":"..."}
 *   {"call":"hsa_memory_allocate","region":R,"size":N,"ptr":P}
 *   {"call":"hsa_queue_create","agent":A,"size":N,"type":T,"queue":Q,"ring":P,"doorbell":S}
 *   {"call":"hsa_signal_create","signal":S,"initial":V}
 *   {"call":"hsa_executable_load_agent_code_object","executable":E,"agent":A,"reader":H,"object":N}
 *   {"call":"hsa_executable_get_symbol_by_name","executable":E,"name":"k.kd","agent":A,"symbol":H,
 *    "kernel_object":K}
 *   {"call":"packet","index":I,"packet":"hex 64 bytes","kernarg_region":R,"kernarg_alloc":N,
 *    "kernarg_offset":O,"kernarg":"hex"}
 *   {"call":"doorbell","value":V}   {"call":"hsa_signal_store_relaxed","signal":S,"value":V}
 * Build: gcc -shared -fPIC -O2 -o libfakehsa.so fakehsa.c
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int hsa_status_t;
enum {
    HSA_STATUS_SUCCESS = 0, HSA_STATUS_INFO_BREAK = 1, HSA_STATUS_ERROR = 0x1000,
    HSA_STATUS_ERROR_INVALID_ARGUMENT = 0x1001, HSA_STATUS_ERROR_INVALID_SYMBOL_NAME = 0x1013,
};
typedef struct { uint64_t handle; } hsa_agent_t;
typedef struct { uint64_t handle; } hsa_region_t;
typedef struct { uint64_t handle; } hsa_signal_t;
typedef struct { uint64_t handle; } hsa_executable_t;
typedef struct { uint64_t handle; } hsa_executable_symbol_t;
typedef struct { uint64_t handle; } hsa_code_object_reader_t;
typedef struct { uint64_t handle; } hsa_loaded_code_object_t;
typedef struct {
    uint32_t type, features;
    uint64_t base_address;
    hsa_signal_t doorbell_signal;
    uint32_t size, reserved1;
    uint64_t id;
} hsa_queue_t;

enum { CPU_AGENT = 0x100, GPU_AGENT = 0x200, COARSE_REGION = 0x300, KERNARG_REGION = 0x301, GROUP_REGION = 0x302 };
enum { QUEUE_MIN_SIZE = 64, MAX_SYMBOLS = 64, MAX_ALLOCS = 4096 };

typedef struct fake_queue fake_queue;
typedef struct {
    int64_t value;
    fake_queue *queue; /* non-NULL: the doorbell of this queue */
} fake_signal;
struct fake_queue {
    hsa_queue_t q; /* first: the hsa_queue_t* handed out points here */
    uint64_t write_index, read_index;
};
typedef struct { char name[256]; uint32_t kernarg, group, private_; int object; } fake_symbol;
typedef struct { uint64_t ptr, size, region; } fake_alloc;

static fake_symbol symbols[MAX_SYMBOLS];
static int nsymbols = -1;
static fake_alloc allocs[MAX_ALLOCS];
static int nallocs = 0;
static uint64_t next_handle = 0x5000;

/* Which code object (reader ordinal) each reader handle and each executable holds. */
enum { MAX_OBJECTS = 64 };
static uint64_t reader_handles[MAX_OBJECTS], executable_handles[MAX_OBJECTS];
static int executable_objects[MAX_OBJECTS];
static int nreaders = 0, nexecutables = 0;

static int object_of_reader(uint64_t reader) {
    for (int i = 0; i < nreaders; i++)
        if (reader_handles[i] == reader) return i;
    return -1;
}

static int object_of_executable(uint64_t executable) {
    for (int i = 0; i < nexecutables; i++)
        if (executable_handles[i] == executable) return executable_objects[i];
    return -1;
}

#define FAKE_LOG_VARIABLE "SUBMITGEN_FAKEHSA_LOG"
#include "../fakelog.h"

static void load_symbols(void) {
    if (nsymbols >= 0) return;
    nsymbols = 0;
    const char *env = getenv("SUBMITGEN_FAKEHSA_SYMBOLS");
    if (!env) return;
    const char *p = env;
    while (*p && nsymbols < MAX_SYMBOLS) {
        const char *end = strchr(p, ';');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        const char *eq = memchr(p, '=', len);
        const char *colon = eq ? memchr(p, ':', (size_t)(eq - p)) : NULL;
        const char *name = colon ? colon + 1 : p;
        if (eq && (size_t)(eq - name) < sizeof symbols[0].name) {
            fake_symbol *s = &symbols[nsymbols];
            s->object = colon ? atoi(p) : -1;
            memcpy(s->name, name, (size_t)(eq - name));
            s->name[eq - name] = 0;
            if (sscanf(eq + 1, "%u,%u,%u", &s->kernarg, &s->group, &s->private_) == 3) nsymbols++;
        }
        p += len;
        if (*p == ';') p++;
    }
}

static uint64_t kernel_object_of(int i) { return 0x10000000u + 0x1000u * (uint64_t)i; }

static int symbol_of_kernel_object(uint64_t object) {
    load_symbols();
    for (int i = 0; i < nsymbols; i++)
        if (kernel_object_of(i) == object) return i;
    return -1;
}

static const fake_alloc *alloc_of(uint64_t ptr) {
    for (int i = 0; i < nallocs; i++)
        if (ptr >= allocs[i].ptr && ptr < allocs[i].ptr + allocs[i].size) return &allocs[i];
    return NULL;
}

hsa_status_t hsa_init(void) { return HSA_STATUS_SUCCESS; }

hsa_status_t hsa_iterate_agents(hsa_status_t (*callback)(hsa_agent_t, void *), void *data) {
    hsa_agent_t agents[2] = {{CPU_AGENT}, {GPU_AGENT}};
    for (int i = 0; i < 2; i++) {
        hsa_status_t rc = callback(agents[i], data);
        if (rc == HSA_STATUS_INFO_BREAK) return HSA_STATUS_SUCCESS;
        if (rc != HSA_STATUS_SUCCESS) return rc;
    }
    return HSA_STATUS_SUCCESS;
}

hsa_status_t hsa_agent_get_info(hsa_agent_t agent, int attribute, void *value) {
    if (agent.handle != CPU_AGENT && agent.handle != GPU_AGENT) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
    switch (attribute) {
    case 0: /* NAME: char[64] */
        memset(value, 0, 64);
        strcpy((char *)value, agent.handle == GPU_AGENT ? "gfx950" : "fake-cpu");
        return HSA_STATUS_SUCCESS;
    case 13: /* QUEUE_MIN_SIZE */
        *(uint32_t *)value = agent.handle == GPU_AGENT ? QUEUE_MIN_SIZE : 0;
        return HSA_STATUS_SUCCESS;
    case 17: /* DEVICE: CPU 0, GPU 1 */
        *(uint32_t *)value = agent.handle == GPU_AGENT ? 1 : 0;
        return HSA_STATUS_SUCCESS;
    }
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
}

hsa_status_t hsa_agent_iterate_regions(hsa_agent_t agent, hsa_status_t (*callback)(hsa_region_t, void *),
                                       void *data) {
    if (agent.handle != GPU_AGENT) return HSA_STATUS_SUCCESS;
    hsa_region_t regions[3] = {{GROUP_REGION}, {COARSE_REGION}, {KERNARG_REGION}};
    for (int i = 0; i < 3; i++) {
        hsa_status_t rc = callback(regions[i], data);
        if (rc != HSA_STATUS_SUCCESS) return rc; /* INFO_BREAK is handed back, as ROCR does */
    }
    return HSA_STATUS_SUCCESS;
}

hsa_status_t hsa_region_get_info(hsa_region_t region, int attribute, void *value) {
    switch (attribute) {
    case 0: /* SEGMENT: GLOBAL 0, GROUP 3 */
        *(uint32_t *)value = region.handle == GROUP_REGION ? 3 : 0;
        return HSA_STATUS_SUCCESS;
    case 1: /* GLOBAL_FLAGS: KERNARG 1, FINE_GRAINED 2, COARSE_GRAINED 4 */
        *(uint32_t *)value = region.handle == KERNARG_REGION ? 1 | 2 : region.handle == COARSE_REGION ? 4 : 0;
        return HSA_STATUS_SUCCESS;
    }
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
}

hsa_status_t hsa_memory_allocate(hsa_region_t region, size_t size, void **ptr) {
    if (region.handle != KERNARG_REGION && region.handle != COARSE_REGION) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
    if (nallocs >= MAX_ALLOCS || size == 0) return HSA_STATUS_ERROR;
    void *p = aligned_alloc(4096, (size + 4095) / 4096 * 4096);
    if (!p) return HSA_STATUS_ERROR;
    memset(p, 0xcd, size); /* garbage: a loader that skips bytes shows up in the recorded segment */
    allocs[nallocs++] = (fake_alloc){(uint64_t)(uintptr_t)p, size, region.handle};
    *ptr = p;
    FILE *f = log_file();
    if (f) {
        fprintf(f, "{\"call\":\"hsa_memory_allocate\",\"region\":%llu,\"size\":%zu,\"ptr\":%llu}\n",
                (unsigned long long)region.handle, size, (unsigned long long)(uintptr_t)p);
        fflush(f);
    }
    return HSA_STATUS_SUCCESS;
}

hsa_status_t hsa_signal_create(int64_t initial, uint32_t num_consumers, const hsa_agent_t *consumers,
                               hsa_signal_t *signal) {
    (void)num_consumers;
    (void)consumers;
    fake_signal *s = calloc(1, sizeof *s);
    s->value = initial;
    signal->handle = (uint64_t)(uintptr_t)s;
    FILE *f = log_file();
    if (f) {
        fprintf(f, "{\"call\":\"hsa_signal_create\",\"signal\":%llu,\"initial\":%lld}\n",
                (unsigned long long)signal->handle, (long long)initial);
        fflush(f);
    }
    return HSA_STATUS_SUCCESS;
}

hsa_status_t hsa_queue_create(hsa_agent_t agent, uint32_t size, uint32_t type, void *callback, void *data,
                              uint32_t private_segment_size, uint32_t group_segment_size, hsa_queue_t **queue) {
    (void)callback;
    (void)data;
    (void)private_segment_size;
    (void)group_segment_size;
    if (agent.handle != GPU_AGENT || size < QUEUE_MIN_SIZE || (size & (size - 1))) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
    fake_queue *q = calloc(1, sizeof *q);
    uint8_t *ring = aligned_alloc(64, (size_t)size * 64);
    memset(ring, 0, (size_t)size * 64);
    for (uint32_t i = 0; i < size; i++) ring[i * 64] = 1; /* header type INVALID */
    fake_signal *doorbell = calloc(1, sizeof *doorbell);
    doorbell->queue = q;
    q->q.type = type;
    q->q.base_address = (uint64_t)(uintptr_t)ring;
    q->q.doorbell_signal.handle = (uint64_t)(uintptr_t)doorbell;
    q->q.size = size;
    q->q.id = next_handle++;
    *queue = &q->q;
    FILE *f = log_file();
    if (f) {
        fprintf(f, "{\"call\":\"hsa_queue_create\",\"agent\":%llu,\"size\":%u,\"type\":%u,\"queue\":%llu,"
                "\"ring\":%llu,\"doorbell\":%llu}\n", (unsigned long long)agent.handle, size, type,
                (unsigned long long)(uintptr_t)q, (unsigned long long)q->q.base_address,
                (unsigned long long)q->q.doorbell_signal.handle);
        fflush(f);
    }
    return HSA_STATUS_SUCCESS;
}

uint64_t hsa_queue_add_write_index_relaxed(const hsa_queue_t *queue, uint64_t value) {
    fake_queue *q = (fake_queue *)queue;
    uint64_t old = q->write_index;
    q->write_index += value;
    return old;
}

uint64_t hsa_queue_load_read_index_scacquire(const hsa_queue_t *queue) { return ((const fake_queue *)queue)->read_index; }

/* The packet processor: consume every packet up to index `last`. */
static void process(fake_queue *q, uint64_t last) {
    FILE *f = log_file();
    while (q->read_index <= last && q->read_index < q->write_index) {
        uint8_t *slot = (uint8_t *)(uintptr_t)q->q.base_address + (q->read_index % q->q.size) * 64;
        if ((slot[0] & 0xff) == 1) {
            fprintf(stderr, "fakehsa: doorbell rung for index %llu but its header is still INVALID\n",
                    (unsigned long long)q->read_index);
            abort();
        }
        uint64_t object, kernarg, completion;
        memcpy(&object, slot + 32, 8);
        memcpy(&kernarg, slot + 40, 8);
        memcpy(&completion, slot + 56, 8);
        int sym = symbol_of_kernel_object(object);
        const fake_alloc *a = alloc_of(kernarg);
        if (f) {
            fprintf(f, "{\"call\":\"packet\",\"index\":%llu,\"packet\":\"", (unsigned long long)q->read_index);
            hex(f, slot, 64);
            fprintf(f, "\",\"kernarg_region\":%llu,\"kernarg_alloc\":%llu,\"kernarg_offset\":%llu,\"kernarg\":\"",
                    (unsigned long long)(a ? a->region : 0), (unsigned long long)(a ? a->size : 0),
                    (unsigned long long)(a ? kernarg - a->ptr : 0));
            if (a && sym >= 0) {
                uint64_t n = symbols[sym].kernarg, room = a->ptr + a->size - kernarg;
                hex(f, (const uint8_t *)(uintptr_t)kernarg, n < room ? n : room);
            }
            fprintf(f, "\"}\n");
            fflush(f);
        }
        slot[0] = 1; /* INVALID again, as the packet processor leaves it */
        slot[1] = 0;
        q->read_index++;
        if (completion) ((fake_signal *)(uintptr_t)completion)->value -= 1;
    }
}

static void store(hsa_signal_t signal, int64_t value, const char *how) {
    fake_signal *s = (fake_signal *)(uintptr_t)signal.handle;
    FILE *f = log_file();
    if (f) {
        fprintf(f, "{\"call\":\"%s\",\"signal\":%llu,\"value\":%lld}\n", s->queue ? "doorbell" : how,
                (unsigned long long)signal.handle, (long long)value);
        fflush(f);
    }
    s->value = value;
    if (s->queue) process(s->queue, (uint64_t)value);
}

void hsa_signal_store_relaxed(hsa_signal_t signal, int64_t value) { store(signal, value, "hsa_signal_store_relaxed"); }
void hsa_signal_store_screlease(hsa_signal_t signal, int64_t value) { store(signal, value, "hsa_signal_store_screlease"); }

int64_t hsa_signal_wait_scacquire(hsa_signal_t signal, int condition, int64_t compare, uint64_t timeout,
                                  int wait_state) {
    (void)timeout;
    (void)wait_state;
    fake_signal *s = (fake_signal *)(uintptr_t)signal.handle;
    int met = condition == 0 ? s->value == compare : condition == 1 ? s->value != compare
            : condition == 2 ? s->value < compare : s->value >= compare;
    if (!met) { /* nothing else will ever change it: fail instead of hanging the caller */
        fprintf(stderr, "fakehsa: wait (condition %d, %lld) on a signal at %lld that nothing will change\n",
                condition, (long long)compare, (long long)s->value);
        abort();
    }
    FILE *f = log_file();
    if (f) {
        fprintf(f, "{\"call\":\"hsa_signal_wait_scacquire\",\"signal\":%llu,\"condition\":%d,\"compare\":%lld,"
                "\"value\":%lld}\n", (unsigned long long)signal.handle, condition, (long long)compare,
                (long long)s->value);
        fflush(f);
    }
    return s->value;
}

hsa_status_t hsa_code_object_reader_create_from_memory(const void *image, size_t size,
                                                       hsa_code_object_reader_t *reader) {
    reader->handle = next_handle++;
    if (nreaders < MAX_OBJECTS) reader_handles[nreaders++] = reader->handle;
    FILE *f = log_file();
    if (f) {
        fprintf(f, "{\"call\":\"hsa_code_object_reader_create_from_memory\",\"reader\":%llu,\"size\":%zu,\"hex\":\"",
                (unsigned long long)reader->handle, size);
        hex(f, image, size);
        fprintf(f, "\"}\n");
        fflush(f);
    }
    return HSA_STATUS_SUCCESS;
}

hsa_status_t hsa_executable_create_alt(int profile, int rounding, const char *options, hsa_executable_t *executable) {
    (void)rounding;
    (void)options;
    if (profile != 0 && profile != 1) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
    executable->handle = next_handle++;
    return HSA_STATUS_SUCCESS;
}

hsa_status_t hsa_executable_load_agent_code_object(hsa_executable_t executable, hsa_agent_t agent,
                                                   hsa_code_object_reader_t reader, const char *options,
                                                   hsa_loaded_code_object_t *loaded) {
    (void)options;
    if (agent.handle != GPU_AGENT || !executable.handle || !reader.handle) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
    if (loaded) loaded->handle = next_handle++;
    int object = object_of_reader(reader.handle);
    if (nexecutables < MAX_OBJECTS) {
        executable_handles[nexecutables] = executable.handle;
        executable_objects[nexecutables++] = object;
    }
    FILE *f = log_file();
    if (f) {
        fprintf(f, "{\"call\":\"hsa_executable_load_agent_code_object\",\"executable\":%llu,\"agent\":%llu,"
                "\"reader\":%llu,\"object\":%d}\n", (unsigned long long)executable.handle,
                (unsigned long long)agent.handle, (unsigned long long)reader.handle, object);
        fflush(f);
    }
    return HSA_STATUS_SUCCESS;
}

hsa_status_t hsa_executable_freeze(hsa_executable_t executable, const char *options) {
    (void)executable;
    (void)options;
    return HSA_STATUS_SUCCESS;
}

hsa_status_t hsa_executable_get_symbol_by_name(hsa_executable_t executable, const char *name,
                                               const hsa_agent_t *agent, hsa_executable_symbol_t *symbol) {
    load_symbols();
    if (!agent || agent->handle != GPU_AGENT) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
    int object = object_of_executable(executable.handle);
    for (int i = 0; i < nsymbols; i++) {
        if (strcmp(symbols[i].name, name) == 0 && (symbols[i].object < 0 || symbols[i].object == object)) {
            symbol->handle = 0x9000 + (uint64_t)i;
            FILE *f = log_file();
            if (f) {
                fprintf(f, "{\"call\":\"hsa_executable_get_symbol_by_name\",\"executable\":%llu,\"name\":\"%s\","
                        "\"agent\":%llu,\"symbol\":%llu,\"kernel_object\":%llu}\n",
                        (unsigned long long)executable.handle, name, (unsigned long long)agent->handle,
                        (unsigned long long)symbol->handle, (unsigned long long)kernel_object_of(i));
                fflush(f);
            }
            return HSA_STATUS_SUCCESS;
        }
    }
    return HSA_STATUS_ERROR_INVALID_SYMBOL_NAME;
}

hsa_status_t hsa_executable_symbol_get_info(hsa_executable_symbol_t symbol, int attribute, void *value) {
    load_symbols();
    int i = (int)(symbol.handle - 0x9000);
    if (i < 0 || i >= nsymbols) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
    switch (attribute) {
    case 22: *(uint64_t *)value = kernel_object_of(i); return HSA_STATUS_SUCCESS;   /* KERNEL_OBJECT */
    case 11: *(uint32_t *)value = symbols[i].kernarg; return HSA_STATUS_SUCCESS;    /* KERNARG_SEGMENT_SIZE */
    case 12: *(uint32_t *)value = 16; return HSA_STATUS_SUCCESS;                    /* KERNARG_SEGMENT_ALIGNMENT */
    case 13: *(uint32_t *)value = symbols[i].group; return HSA_STATUS_SUCCESS;      /* GROUP_SEGMENT_SIZE */
    case 14: *(uint32_t *)value = symbols[i].private_; return HSA_STATUS_SUCCESS;   /* PRIVATE_SEGMENT_SIZE */
    }
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
}
