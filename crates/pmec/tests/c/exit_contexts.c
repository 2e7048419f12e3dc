/* pmec calls that fail while the calling thread's storage is being destroyed: from a pthread
 * key destructor (run after the thread's C++/Rust thread-local destructors) and from an atexit
 * handler (run after the main thread's). Each returns its error code; pmec_last_error() gives
 * a string (the message itself may be gone). Once, the message's thread-local aborted the
 * program there. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "pmec.h"

static pmec_codec *codec;
static uint8_t blocks[6][64];
static pthread_key_t key;
static int failures;

static void failing_call(const char *where) {
    uint8_t *shards[6];
    for (int i = 0; i < 6; i++) shards[i] = blocks[i];
    int three[3] = {0, 1, 2};
    int r = pmec_decode(codec, sizeof blocks[0], shards, three, 3);
    const char *msg = pmec_last_error();
    if (r != PMEC_ETOOMANY || !msg) {
        printf("%s: decode returned %d\n", where, r);
        failures++;
        return;
    }
    printf("%s: %d (%s)\n", where, r, msg);
}

static void key_destructor(void *p) {
    (void)p;
    failing_call("key destructor");
}

static void at_exit(void) {
    failing_call("atexit");
    if (failures) _exit(2);
    printf("exit contexts ok\n");
    fflush(stdout);
}

static void *thread_main(void *p) {
    (void)p;
    pthread_setspecific(key, (void *)1);
    failing_call("thread");
    return NULL;
}

int main(void) {
    if (pmec_codec_new(4, 2, PMEC_MATRIX_CAUCHY, &codec) != PMEC_OK) return 1;
    pthread_key_create(&key, key_destructor);
    pthread_t t;
    if (pthread_create(&t, NULL, thread_main, NULL)) return 1;
    pthread_join(t, NULL);
    if (failures) return 2;
    failing_call("main");
    atexit(at_exit);
    return 0;
}
