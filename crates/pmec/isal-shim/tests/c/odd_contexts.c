/* An ISA-L client (linked with -lisal) that encodes where a library's per-thread state is
 * awkward: in a thread and in that thread's pthread key destructor (after its thread-locals may
 * be gone), from an atexit handler (after main's), and from a signal handler that interrupts
 * another encode of the same thread (another geometry). ISA-L keeps no state, so each prints the
 * same checksum under ISA-L and under the shim. With "crc" it computes one CRC (a function the
 * shim forwards to the system ISA-L) and prints it. */
#include <isa-l.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#define LEN 4096
static unsigned char tables[8 * 4 * 32], buf[12][LEN];
static unsigned char *data[8], *parity[4];

static unsigned checksum(unsigned char *const *p, int n, int len)
{
    unsigned s = 0;
    for (int r = 0; r < n; r++)
        for (int i = 0; i < len; i++)
            s = s * 31 + p[r][i];
    return s;
}

static void encode(const char *where)
{
    memset(buf[8], 0, 4 * LEN);
    ec_encode_data(LEN, 8, 4, tables, data, parity);
    printf("%s: %08x\n", where, checksum(parity, 4, LEN));
    fflush(stdout);
}

static void at_exit(void)
{
    encode("atexit handler");
}

static pthread_key_t key;

static void key_destructor(void *p)
{
    (void)p;
    encode("pthread key destructor");
}

static void *thread_body(void *p)
{
    (void)p;
    encode("thread");
    pthread_setspecific(key, (void *)1);
    return NULL;
}

/* The interrupted encode: 16+4 blocks of 256 KiB; the handler's: 6+3 blocks of 4 KiB. */
static unsigned char big[20][256 << 10], small[9][LEN], big_tables[16 * 4 * 32], small_tables[6 * 3 * 32];
static volatile sig_atomic_t in_handler;

static void on_alarm(int sig)
{
    (void)sig;
    unsigned char *d[6], *c[3];
    for (int i = 0; i < 6; i++)
        d[i] = small[i];
    for (int i = 0; i < 3; i++)
        c[i] = small[6 + i];
    ec_encode_data(LEN, 6, 3, small_tables, d, c);
    in_handler++;
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "crc")) {
        printf("crc32_ieee: %08x\n", crc32_ieee(0, (const unsigned char *)"pmec", 4));
        return 0;
    }
    for (int i = 0; i < 12; i++)
        for (int j = 0; j < LEN; j++)
            buf[i][j] = (unsigned char)(i * 131 + j * 7);
    for (int i = 0; i < 8; i++)
        data[i] = buf[i];
    for (int i = 0; i < 4; i++)
        parity[i] = buf[8 + i];
    unsigned char m[12 * 8];
    gf_gen_cauchy1_matrix(m, 12, 8);
    ec_init_tables(8, 4, m + 64, tables);

    pthread_key_create(&key, key_destructor);
    pthread_t t;
    pthread_create(&t, NULL, thread_body, NULL);
    pthread_join(t, NULL);
    encode("main");

    unsigned char a[64];
    for (int i = 0; i < 64; i++)
        a[i] = (unsigned char)(i * 11 + 1);
    ec_init_tables(16, 4, a, big_tables);
    ec_init_tables(6, 3, a, small_tables);
    for (int i = 0; i < 20; i++)
        for (int j = 0; j < (256 << 10); j++)
            big[i][j] = (unsigned char)(i * 7 + j * 13);
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < LEN; j++)
            small[i][j] = (unsigned char)(i * 3 + j * 5);
    unsigned char *d[16], *c[4];
    for (int i = 0; i < 16; i++)
        d[i] = big[i];
    for (int i = 0; i < 4; i++)
        c[i] = big[16 + i];
    signal(SIGALRM, on_alarm);
    struct itimerval every = {{0, 200}, {0, 200}}, off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &every, NULL);
    for (int r = 0; r < 200 || (in_handler < 20 && r < 20000); r++)
        ec_encode_data(256 << 10, 16, 4, big_tables, d, c);
    setitimer(ITIMER_REAL, &off, NULL);
    printf("interrupted encodes: %08x\n", checksum(c, 4, 256 << 10));
    unsigned char *handler_parity[3] = {small[6], small[7], small[8]};
    printf("encodes in the signal handler: %08x (%s)\n", checksum(handler_parity, 3, LEN),
           in_handler >= 20 ? "at least 20" : "fewer than 20");
    atexit(at_exit);
    return 0;
}
