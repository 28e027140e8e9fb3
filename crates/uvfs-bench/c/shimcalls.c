/*
 * The per-call loops of `uvfs-bench preload` (issue 14's costs): the same
 * program runs on the host's tmpfs and, unchanged, under LD_PRELOAD of the
 * uvfs shim with its files under the prefix. uvfs-bench compiles it at run
 * time with `cc -O2 -pthread`.
 *
 * Usage: shimcalls SHIM ROOT DIR DUPS LSEEKS READS STATS OPENS
 *   SHIM    `-` to run as is, or the shim's file name, which must then be
 *           mapped in this process (checked in /proc/self/maps first)
 *   ROOT    a directory that exists (the shim's prefix, or the host's work
 *           directory): the process's first call is one stat of it,
 *           timed, with VmRSS and VmHWM (/proc/self/status) read before
 *           and after: under the shim, the first uvfs call, which builds
 *           the in-process uvfs
 *   DIR     the loops' directory (made with its parents), holding
 *           calls.file (1 MiB, made here) and open1.0 … open1.3
 *   DUPS    timed dup1 iterations: dup(fd) + close of the copy
 *   LSEEKS  timed lseek1 iterations: lseek(fd, 0, SEEK_SET)
 *   READS   timed read1 iterations: read 4 KiB; at end of file, lseek to 0
 *           (the lab's read1)
 *   STATS   timed stat iterations: stat(DIR/calls.file)
 *   OPENS   open1 in the main thread alone (OPENS pairs on open1.0,
 *           before any other thread exists: open1_ns), then with 4
 *           threads: each opens (O_RDWR) and closes its own file OPENS
 *           times; that figure is wall time / (4 * OPENS), from the first
 *           thread's start (after a common barrier) to the last one's end
 *           (open4_ns). open1_ns / open4_ns is what 4 threads gain.
 *
 * Each loop runs a tenth of its count (at most 10000) untimed first.
 * Output, one line: key=value pairs, times in ns per call (per iteration),
 * first_us in microseconds, *_kb in KiB, e.g.
 *   shim=1 first_us=380.2 first_rss_kb=1404 first_hwm_kb=1404 dup_ns=… …
 * Exit status 1 with a message on stderr if a call fails, 2 for bad usage.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define THREADS 4

#define PROG "shimcalls"
#include "lab.h"

/* VmRSS and VmHWM in KiB (-1 if unreadable). */
static void memory(long *rss, long *hwm) {
	*rss = *hwm = -1;
	FILE *f = fopen("/proc/self/status", "r");
	if (!f)
		return;
	char line[256];
	while (fgets(line, sizeof line, f)) {
		if (strncmp(line, "VmRSS:", 6) == 0)
			*rss = atol(line + 6);
		else if (strncmp(line, "VmHWM:", 6) == 0)
			*hwm = atol(line + 6);
	}
	fclose(f);
}

static int fail(const char *what) {
	fprintf(stderr, "shimcalls: %s: %s\n", what, strerror(errno));
	return -1;
}

static int dups(int fd, long n) {
	for (long i = 0; i < n; i++) {
		int d = dup(fd);
		if (d < 0)
			return fail("dup");
		if (close(d) != 0)
			return fail("close");
	}
	return 0;
}

static int lseeks(int fd, long n) {
	for (long i = 0; i < n; i++)
		if (lseek(fd, 0, SEEK_SET) != 0)
			return fail("lseek");
	return 0;
}

static int reads(int fd, long n) {
	static char buf[4096];
	for (long i = 0; i < n; i++) {
		ssize_t r = read(fd, buf, sizeof buf);
		if (r < 0)
			return fail("read");
		if (r == 0 && lseek(fd, 0, SEEK_SET) != 0)
			return fail("lseek");
	}
	return 0;
}

static int stats(const char *path, long n) {
	struct stat st;
	for (long i = 0; i < n; i++)
		if (stat(path, &st) != 0)
			return fail("stat");
	return 0;
}

struct opener {
	char file[4096];
	long n;
	pthread_barrier_t *start;
	int failed;
	double t0, t1; /* this thread's loop, start and end */
};

static void *open1(void *arg) {
	struct opener *o = arg;
	pthread_barrier_wait(o->start);
	o->t0 = now_ns();
	for (long i = 0; i < o->n; i++) {
		int fd = open(o->file, O_RDWR);
		if (fd < 0 || close(fd) != 0) {
			fail("open1");
			o->failed = 1;
			break;
		}
	}
	o->t1 = now_ns();
	return NULL;
}

/* n pairs on DIR/open1.0 in the calling thread (the threads' loop, run
 * here); ns per pair, or a negative value on failure. */
static double open_one(const char *dir, long n) {
	pthread_barrier_t start;
	struct opener o = {.n = n, .start = &start};
	snprintf(o.file, sizeof o.file, "%s/open1.0", dir);
	int fd = open(o.file, O_CREAT | O_RDWR, 0600);
	if (fd < 0 || close(fd) != 0)
		return fail("creating open1.0");
	pthread_barrier_init(&start, NULL, 1);
	open1(&o);
	pthread_barrier_destroy(&start);
	if (o.failed)
		return -1;
	if (unlink(o.file) != 0)
		return fail("unlink of open1.0");
	return (o.t1 - o.t0) / (double)n;
}

/* OPENS pairs in each of THREADS threads; ns per pair over all of them,
 * or a negative value on failure. */
static double open_threads(const char *dir, long n) {
	struct opener o[THREADS];
	pthread_t t[THREADS];
	pthread_barrier_t start;
	pthread_barrier_init(&start, NULL, THREADS + 1);
	for (int i = 0; i < THREADS; i++) {
		snprintf(o[i].file, sizeof o[i].file, "%s/open1.%d", dir, i);
		o[i].n = n;
		o[i].start = &start;
		o[i].failed = 0;
		int fd = open(o[i].file, O_CREAT | O_RDWR, 0600);
		if (fd < 0 || close(fd) != 0)
			return fail("creating an open1 file");
	}
	for (int i = 0; i < THREADS; i++)
		if (pthread_create(&t[i], NULL, open1, &o[i]) != 0) {
			fprintf(stderr, "shimcalls: pthread_create failed\n");
			exit(1);
		}
	pthread_barrier_wait(&start);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	/* From the first thread's start to the last one's end (a thread may
	 * finish before this one even runs again after the barrier). */
	double t0 = o[0].t0, t1 = o[0].t1;
	for (int i = 1; i < THREADS; i++) {
		t0 = o[i].t0 < t0 ? o[i].t0 : t0;
		t1 = o[i].t1 > t1 ? o[i].t1 : t1;
	}
	double ns = (t1 - t0) / ((double)n * THREADS);
	pthread_barrier_destroy(&start);
	for (int i = 0; i < THREADS; i++) {
		if (o[i].failed)
			return -1;
		if (unlink(o[i].file) != 0)
			return fail("unlink of an open1 file");
	}
	return ns;
}

#define TIMED(call, n, out)                                                                        \
	do {                                                                                       \
		if (call(fd, warmup(n)) != 0)                                                      \
			return 1;                                                                  \
		double t_ = now_ns();                                                              \
		if (call(fd, n) != 0)                                                              \
			return 1;                                                                  \
		out = (now_ns() - t_) / (double)(n);                                               \
	} while (0)

int main(int argc, char **argv) {
	if (argc != 9) {
		fprintf(stderr,
			"usage: shimcalls SHIM ROOT DIR DUPS LSEEKS READS STATS OPENS\n");
		return 2;
	}
	const char *shim = argv[1], *root = argv[2], *dir = argv[3];
	int loaded = strcmp(shim, "-") != 0;
	if (loaded && !mapped(shim)) {
		fprintf(stderr, "shimcalls: %s is not loaded (LD_PRELOAD failed?)\n", shim);
		return 3;
	}
	long nd = count(argv[4], "DUPS"), nl = count(argv[5], "LSEEKS");
	long nr = count(argv[6], "READS"), ns = count(argv[7], "STATS");
	long no = count(argv[8], "OPENS");

	/* The first call under the prefix. */
	long rss0, hwm0, rss1, hwm1;
	memory(&rss0, &hwm0);
	struct stat st;
	double t = now_ns();
	int r = stat(root, &st);
	double first_us = (now_ns() - t) / 1e3;
	memory(&rss1, &hwm1);
	if (r != 0) {
		fprintf(stderr, "shimcalls: stat %s: %s\n", root, strerror(errno));
		return 1;
	}

	char file[4096];
	if (snprintf(file, sizeof file, "%s/calls.file", dir) >= (int)sizeof file) {
		fprintf(stderr, "shimcalls: %s: path too long\n", dir);
		return 1;
	}
	if (mkdirs(dir) != 0) {
		fprintf(stderr, "shimcalls: mkdir -p %s: %s\n", dir, strerror(errno));
		return 1;
	}
	int fd = open(file, O_CREAT | O_RDWR | O_TRUNC, 0600);
	if (fd < 0) {
		fprintf(stderr, "shimcalls: creating %s: %s\n", file, strerror(errno));
		return 1;
	}
	static char mib[1 << 20];
	memset(mib, 'x', sizeof mib);
	if (write(fd, mib, sizeof mib) != (ssize_t)sizeof mib || lseek(fd, 0, SEEK_SET) != 0) {
		fprintf(stderr, "shimcalls: filling %s: %s\n", file, strerror(errno));
		return 1;
	}

	double dup_ns, lseek_ns, read_ns, stat_ns;
	TIMED(dups, nd, dup_ns);
	TIMED(lseeks, nl, lseek_ns);
	TIMED(reads, nr, read_ns);
	if (stats(file, warmup(ns)) != 0)
		return 1;
	t = now_ns();
	if (stats(file, ns) != 0)
		return 1;
	stat_ns = (now_ns() - t) / (double)ns;
	close(fd);

	/* One thread first, while the process has no other. */
	if (open_one(dir, warmup(no) > 0 ? warmup(no) : 1) < 0)
		return 1;
	double open1_ns = open_one(dir, no);
	if (open1_ns < 0)
		return 1;
	if (open_threads(dir, warmup(no) > 0 ? warmup(no) : 1) < 0)
		return 1;
	double open4_ns = open_threads(dir, no);
	if (open4_ns < 0)
		return 1;

	if (unlink(file) != 0) {
		fprintf(stderr, "shimcalls: unlink %s: %s\n", file, strerror(errno));
		return 1;
	}
	printf("shim=%d first_us=%.3f first_rss_kb=%ld first_hwm_kb=%ld dups=%ld dup_ns=%.3f "
	       "lseeks=%ld lseek_ns=%.3f reads=%ld read_ns=%.3f stats=%ld stat_ns=%.3f opens=%ld "
	       "open1_ns=%.3f open4_ns=%.3f\n",
	       loaded, first_us, rss1 - rss0, hwm1 - hwm0, nd, dup_ns, nl, lseek_ns, nr, read_ns, ns,
	       stat_ns, no, open1_ns, open4_ns);
	return 0;
}
