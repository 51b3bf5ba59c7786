/* Shared by the stand-in runtimes (fakehip/fakehip.c, fakehsa/fakehsa.c): the JSON-lines log and
 * hex dumps. Define FAKE_LOG_VARIABLE (the environment variable naming the log file) first. */
#ifndef SUBMITGEN_FAKELOG_H
#define SUBMITGEN_FAKELOG_H
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* NULL when the variable is unset: then nothing is recorded (for timing benchmarks). */
static FILE *log_file(void) {
    static FILE *f = NULL;
    static int opened = 0;
    if (!opened) {
        const char *path = getenv(FAKE_LOG_VARIABLE);
        f = path ? fopen(path, "a") : NULL;
        opened = 1;
    }
    return f;
}

static void hex(FILE *f, const uint8_t *p, size_t n) {
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        fputc(digits[p[i] >> 4], f);
        fputc(digits[p[i] & 15], f);
    }
}

/* A JSON string (quotes included): ", \\ and control bytes escaped, other bytes (UTF-8) as they are. */
static inline void json_string(FILE *f, const char *s) {
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') {
            fputc('\\', f);
            fputc(*p, f);
        } else if (*p < 0x20 || *p == 0x7f) {
            fprintf(f, "\\u%04x", *p);
        } else {
            fputc(*p, f);
        }
    }
    fputc('"', f);
}
#endif
