/*
 * Reaches echo servers through what mTCP's arp.conf and route.conf say: connects to each
 * ADDR:7 given, sends a line and reads it back. Usage: arp_conf MTCP_CONF ADDR...
 * Prints `reached ADDR` per echo; the exit status is the number of failures.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>

#include <mtcp_api.h>

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s MTCP_CONF ADDR...\n", argv[0]);
		return 100;
	}
	if (mtcp_init(argv[1]) != 0) {
		printf("mtcp_init failed\n");
		return 100;
	}
	mctx_t m = mtcp_create_context(0);
	if (!m) {
		printf("mtcp_create_context failed\n");
		return 100;
	}
	int failures = 0;
	for (int i = 2; i < argc; i++) {
		struct sockaddr_in a;
		memset(&a, 0, sizeof(a));
		a.sin_family = AF_INET;
		a.sin_port = htons(7);
		inet_pton(AF_INET, argv[i], &a.sin_addr);
		int s = mtcp_socket(m, AF_INET, SOCK_STREAM, 0);
		char msg[64], buf[64];
		int len = snprintf(msg, sizeof(msg), "hello %s\n", argv[i]);
		if (s < 0 || mtcp_connect(m, s, (struct sockaddr *)&a, sizeof(a)) != 0) {
			printf("connect %s: %s\n", argv[i], strerror(errno));
			failures++;
			if (s >= 0)
				mtcp_close(m, s);
			continue;
		}
		int got = 0;
		if (mtcp_write(m, s, msg, len) == len) {
			while (got < len) {
				ssize_t r = mtcp_read(m, s, buf + got, sizeof(buf) - got);
				if (r <= 0)
					break;
				got += r;
			}
		}
		if (got == len && memcmp(buf, msg, len) == 0) {
			printf("reached %s\n", argv[i]);
		} else {
			printf("echo from %s: %d of %d bytes\n", argv[i], got, len);
			failures++;
		}
		mtcp_close(m, s);
	}
	mtcp_destroy_context(m);
	mtcp_destroy();
	return failures;
}
