/*
 * The checks of libmtcp's C tests: each failed one prints its line and expression and
 * counts in `failures`, which the program returns as its exit status.
 */
#ifndef NICEMU_MTCP_TEST_CHECK_H
#define NICEMU_MTCP_TEST_CHECK_H

#include <errno.h>
#include <stdio.h>
#include <string.h>

static int failures;

#define CHECK(cond)                                                              \
	do {                                                                     \
		if (!(cond)) {                                                   \
			printf("FAILED line %d: %s (errno %d: %s)\n", __LINE__, \
			       #cond, errno, strerror(errno));                   \
			failures++;                                              \
		}                                                                \
	} while (0)

/* The call fails with -1 and errno e. */
#define FAILS(call, e)                                                           \
	do {                                                                     \
		errno = 0;                                                       \
		long r_ = (long)(call);                                          \
		if (r_ != -1 || errno != (e)) {                                  \
			printf("FAILED line %d: %s = %ld, errno %d (%s), want -1 " \
			       "with %s\n", __LINE__, #call, r_, errno,          \
			       strerror(errno), #e);                             \
			failures++;                                              \
		}                                                                \
	} while (0)

#endif
