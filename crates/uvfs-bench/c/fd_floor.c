/*
 * The floor of a lowest-fd table shared by two threads (issue 19,
 * docs/fd-threads.md): what dup1 + close would cost if the table did
 * nothing but the work lowest-fd semantics need. Allocation is one CAS
 * taking the lowest zero bit of one shared word (fds 0..2 stay taken),
 * the install a release store into the fd's slot, the close an exchange
 * of the slot to null and a fetch_and freeing the bit: no lock, no file,
 * no reference count. One thread, then two sharing the word and slots,
 * each pinned to its own CPU; last a ping-pong of one cache line between
 * the two CPUs (a thread writes it when it finds the other's value).
 * Not run by uvfs-bench; by hand:
 *
 *   cc -O2 -pthread crates/uvfs-bench/c/fd_floor.c -o /tmp/fd_floor
 *   /tmp/fd_floor SECONDS ROUNDS      (default 0.5 s, 5 rounds)
 */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <pthread.h>
#include <time.h>
#include <sched.h>

static _Alignas(64) _Atomic uint64_t bits;
static _Alignas(64) _Atomic(void *) slots[64];
static _Alignas(64) _Atomic long ping;
static _Atomic int stop;

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }

struct arg { int id; long n; int cpu; };

static void pin(int cpu) { cpu_set_t s; CPU_ZERO(&s); CPU_SET(cpu, &s); pthread_setaffinity_np(pthread_self(), sizeof s, &s); }

static void *worker(void *p) {
    struct arg *a = p; pin(a->cpu);
    long n = 0; void *me = &a->id;
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        for (int k = 0; k < 256; k++) {
            uint64_t w = atomic_load_explicit(&bits, memory_order_relaxed);
            int fd;
            for (;;) {
                uint64_t free = ~w & ~7ull; /* fds 0..2 stay taken */
                fd = __builtin_ctzll(free);
                if (atomic_compare_exchange_weak_explicit(&bits, &w, w | (1ull << fd), memory_order_acquire, memory_order_relaxed)) break;
            }
            atomic_store_explicit(&slots[fd], me, memory_order_release);
            atomic_exchange_explicit(&slots[fd], NULL, memory_order_acq_rel);
            atomic_fetch_and_explicit(&bits, ~(1ull << fd), memory_order_release);
        }
        n += 256;
    }
    a->n = n; return NULL;
}

static void *ponger(void *p) {
    struct arg *a = p; pin(a->cpu);
    long n = 0;
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        long v = atomic_load_explicit(&ping, memory_order_acquire);
        if ((v & 1) == a->id) { atomic_store_explicit(&ping, v + 1, memory_order_release); n++; }
    }
    a->n = n; return NULL;
}

static double run(void *(*f)(void *), int threads, double secs) {
    pthread_t t[2]; struct arg a[2];
    atomic_store(&stop, 0); atomic_store(&bits, 0); atomic_store(&ping, 0);
    for (int i = 0; i < threads; i++) { a[i].id = i; a[i].n = 0; a[i].cpu = i; pthread_create(&t[i], NULL, f, &a[i]); }
    double t0 = now();
    struct timespec s = { (time_t)secs, (long)((secs - (time_t)secs) * 1e9) }; nanosleep(&s, NULL);
    atomic_store(&stop, 1);
    long n = 0; for (int i = 0; i < threads; i++) { pthread_join(t[i], NULL); n += a[i].n; }
    return n / (now() - t0);
}

int main(int argc, char **argv) {
    double secs = argc > 1 ? atof(argv[1]) : 0.5;
    int rounds = argc > 2 ? atoi(argv[2]) : 5;
    for (int r = 0; r < rounds; r++) {
        double one = run(worker, 1, secs), two = run(worker, 2, secs), pp = run(ponger, 2, secs);
        printf("round %d: floor 1 thread %.1f M pairs/s (%.1f ns), 2 threads %.1f M pairs/s total (%.1f ns per pair per thread); ping-pong %.1f ns per one-way transfer\n",
               r + 1, one / 1e6, 1e9 / one, two / 1e6, 2e9 / two, 1e9 / pp);
    }
    return 0;
}
