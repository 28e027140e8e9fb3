/*
 * The loop of `uvfs-bench preload` (issue 5's benchmark): will-it-scale's
 * open1 loop, open(O_RDWR) + close of one file, as a plain C program, so
 * it can run on the host's tmpfs and, unchanged, under LD_PRELOAD of the
 * uvfs shim. uvfs-bench compiles it at run time with `cc -O2`.
 *
 * Usage: openclose SHIM DIR HOSTFILE PAIRS CLOSES FSTATS STATS
 *   SHIM      `-` to run as is, or the shim's file name, which must then
 *             be mapped in this process (checked in /proc/self/maps
 *             before anything else, so a shim that failed to load cannot
 *             send the loop's files to the host's disk)
 *   DIR       directory of the loop's file (made with its parents);
 *             the file is DIR/willitscale.file, removed at the end
 *   HOSTFILE  a file on the host (outside the shim's prefix), created if
 *             missing: fstat of a kernel fd open on it, stat of its path
 *   PAIRS     timed open+close pairs
 *   CLOSES    timed close(-1) calls (EBADF: the interposition's cost on
 *             a call about a kernel fd, and the kernel's cheapest call)
 *   FSTATS    timed fstat calls on the kernel fd
 *   STATS     timed stat calls on HOSTFILE (a path outside the prefix)
 *
 * Each loop runs a tenth of its count (at most 10000) untimed first.
 * Output, one line: key=value pairs, times in ns per call (per pair for
 * pair_ns), e.g.
 *   shim=1 pairs=100000 pair_ns=2807.1 closes=... close_ns=166.4 ...
 * Exit status 1 with a message on stderr if a call fails.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define PROG "openclose"
#include "lab.h"

static int pairs(const char *file, long n) {
	for (long i = 0; i < n; i++) {
		int fd = open(file, O_RDWR);
		if (fd < 0) {
			perror("openclose: open");
			return -1;
		}
		if (close(fd) != 0) {
			perror("openclose: close");
			return -1;
		}
	}
	return 0;
}

static int closes(long n) {
	for (long i = 0; i < n; i++) {
		if (close(-1) != -1 || errno != EBADF) {
			fprintf(stderr, "openclose: close(-1) did not fail with EBADF\n");
			return -1;
		}
	}
	return 0;
}

static int fstats(int fd, long n) {
	struct stat st;
	for (long i = 0; i < n; i++) {
		if (fstat(fd, &st) != 0) {
			perror("openclose: fstat");
			return -1;
		}
	}
	return 0;
}

static int stats(const char *path, long n) {
	struct stat st;
	for (long i = 0; i < n; i++) {
		if (stat(path, &st) != 0) {
			perror("openclose: stat");
			return -1;
		}
	}
	return 0;
}

int main(int argc, char **argv) {
	if (argc != 8) {
		fprintf(stderr, "usage: openclose SHIM DIR HOSTFILE PAIRS CLOSES FSTATS STATS\n");
		return 2;
	}
	const char *shim = argv[1], *dir = argv[2], *hostfile = argv[3];
	int loaded = strcmp(shim, "-") != 0;
	if (loaded && !mapped(shim)) {
		fprintf(stderr, "openclose: %s is not loaded (LD_PRELOAD failed?)\n", shim);
		return 3;
	}
	long np = count(argv[4], "PAIRS"), nc = count(argv[5], "CLOSES");
	long nf = count(argv[6], "FSTATS"), ns = count(argv[7], "STATS");
	char file[4096];
	if (snprintf(file, sizeof file, "%s/willitscale.file", dir) >= (int)sizeof file) {
		fprintf(stderr, "openclose: %s: path too long\n", dir);
		return 1;
	}
	if (mkdirs(dir) != 0) {
		fprintf(stderr, "openclose: mkdir -p %s: %s\n", dir, strerror(errno));
		return 1;
	}
	int fd = open(file, O_CREAT | O_RDWR, 0600);
	if (fd < 0 || close(fd) != 0) {
		fprintf(stderr, "openclose: creating %s: %s\n", file, strerror(errno));
		return 1;
	}
	int kfd = open(hostfile, O_CREAT | O_RDWR | O_CLOEXEC, 0600);
	if (kfd < 0) {
		fprintf(stderr, "openclose: opening %s: %s\n", hostfile, strerror(errno));
		return 1;
	}
	double t;

	if (pairs(file, warmup(np)) != 0)
		return 1;
	t = now_ns();
	if (pairs(file, np) != 0)
		return 1;
	double pair_ns = (now_ns() - t) / (double)np;

	if (closes(warmup(nc)) != 0)
		return 1;
	t = now_ns();
	if (closes(nc) != 0)
		return 1;
	double close_ns = (now_ns() - t) / (double)nc;

	if (fstats(kfd, warmup(nf)) != 0)
		return 1;
	t = now_ns();
	if (fstats(kfd, nf) != 0)
		return 1;
	double fstat_ns = (now_ns() - t) / (double)nf;

	if (stats(hostfile, warmup(ns)) != 0)
		return 1;
	t = now_ns();
	if (stats(hostfile, ns) != 0)
		return 1;
	double stat_ns = (now_ns() - t) / (double)ns;

	close(kfd);
	if (unlink(file) != 0) {
		fprintf(stderr, "openclose: unlink %s: %s\n", file, strerror(errno));
		return 1;
	}
	printf("shim=%d pairs=%ld pair_ns=%.3f closes=%ld close_ns=%.3f fstats=%ld fstat_ns=%.3f "
	       "stats=%ld stat_ns=%.3f\n",
	       loaded, np, pair_ns, nc, close_ns, nf, fstat_ns, ns, stat_ns);
	return 0;
}
