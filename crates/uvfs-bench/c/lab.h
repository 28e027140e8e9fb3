/*
 * What the lab's C programs share (written beside each one when it is
 * compiled): a monotonic clock in ns, a count from the command line, and
 * whether a library is mapped. A program defines PROG, its name for
 * messages, before including this.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
