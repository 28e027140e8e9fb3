/*
 * What the lab's C programs share (written beside each one when it is
 * compiled): a monotonic clock in ns, a count from the command line,
 * whether a library is mapped, the warm-up share of a loop, and mkdir -p.
 * A program defines PROG, its name for messages, before including this.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static double now_ns(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

/* S as a count >= 1, or exit status 2 with a message naming WHAT. */
static long count(const char *s, const char *what) {
	char *end;
	long n = strtol(s, &end, 10);
	if (*s == '\0' || *end != '\0' || n < 1) {
		fprintf(stderr, PROG ": %s: expected a count >= 1, got '%s'\n", what, s);
		exit(2);
	}
	return n;
}

/* Whether NAME appears in /proc/self/maps (a path outside any prefix: under
 * the shim it goes to the kernel). */
static int mapped(const char *name) {
	FILE *f = fopen("/proc/self/maps", "r");
	if (!f)
		return 0;
	char *line = NULL;
	size_t cap = 0;
	int found = 0;
	while (!found && getline(&line, &cap, f) > 0)
		found = strstr(line, name) != NULL;
	free(line);
	fclose(f);
	return found;
}

/* Calls of a loop run before it is timed: a tenth, at most 10,000. */
static long warmup(long n) {
	long w = n / 10;
	return w > 10000 ? 10000 : w;
}

/* mkdir -p: DIR and its missing parents, mode 0700. */
static int mkdirs(const char *dir) {
	char p[4096];
	if (snprintf(p, sizeof p, "%s", dir) >= (int)sizeof p) {
		errno = ENAMETOOLONG;
		return -1;
	}
	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(p, 0700) != 0 && errno != EEXIST)
			return -1;
		*s = '/';
	}
	if (mkdir(p, 0700) != 0 && errno != EEXIST)
		return -1;
	return 0;
}
