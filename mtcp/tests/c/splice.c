/*
 * AccelTCP's splice (NSDI '20, §4.3) from C: accepts one client on PORT, connects to the
 * backend BACKEND_IP:BACKEND_PORT, hands the pair to the NIC with mtcp_splice and waits
 * (bounded) for the callback, then prints its metadata:
 *   spliced
 *   closed client=A.B.C.D:P server=A.B.C.D:P reason=R
 * Usage: splice MTCP_CONF PORT BACKEND_IP BACKEND_PORT SECONDS. Exit 0 once the callback
 * ran, 2 on a timeout, 1 on an error.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>
#include <netinet/tcp.h>

#include <mtcp_api.h>
#include <mtcp_epoll.h>

static int calls;
static nsplice_meta_t seen;

static void on_closed(nsplice_meta_t *meta)
{
	seen = *meta;
	calls++;
}

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

#define DIE(what)                                                                \
	do {                                                                     \
		printf("error: %s: %s\n", what, strerror(errno));                \
		return 1;                                                        \
	} while (0)

int main(int argc, char **argv)
{
	if (argc != 6) {
		fprintf(stderr, "usage: %s MTCP_CONF PORT BACKEND_IP BACKEND_PORT SECONDS\n", argv[0]);
		return 1;
	}
	double end = now() + atof(argv[5]);
	if (mtcp_init(argv[1]) < 0)
		DIE("mtcp_init");
	mctx_t m = mtcp_create_context(0);
	if (!m)
		DIE("mtcp_create_context");
	int l = mtcp_socket(m, AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a;
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_port = htons(atoi(argv[2]));
	if (l < 0 || mtcp_bind(m, l, (struct sockaddr *)&a, sizeof(a)) < 0 || mtcp_listen(m, l, 16) < 0)
		DIE("listen");
	printf("listening\n");
	fflush(stdout);
	/* Blocking accept and connect, as a simple proxy would. */
	struct sockaddr_in peer;
	socklen_t plen = sizeof(peer);
	int c = mtcp_accept(m, l, (struct sockaddr *)&peer, &plen);
	if (c < 0)
		DIE("mtcp_accept");
	int one = 1, v = 0;
	socklen_t vlen = sizeof(v);
	if (mtcp_setsockopt(m, c, IPPROTO_TCP, TCP_TEARDOWN_OFFLOAD, &one, sizeof(one)) < 0 ||
	    mtcp_getsockopt(m, c, IPPROTO_TCP, TCP_TEARDOWN_OFFLOAD, &v, &vlen) < 0 || v != 1)
		DIE("TCP_TEARDOWN_OFFLOAD");
	if (mtcp_setsockopt(m, c, IPPROTO_TCP, TCP_TEARDOWN_OFFLOAD, NULL, sizeof(one)) == 0 ||
	    errno != EFAULT)
		DIE("TCP_TEARDOWN_OFFLOAD from a NULL pointer");
	int zero = 0;
	mtcp_setsockopt(m, c, IPPROTO_TCP, TCP_TEARDOWN_OFFLOAD, &zero, sizeof(zero));
	int b = mtcp_socket(m, AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in be;
	memset(&be, 0, sizeof(be));
	be.sin_family = AF_INET;
	be.sin_port = htons(atoi(argv[4]));
	inet_pton(AF_INET, argv[3], &be.sin_addr);
	if (b < 0 || mtcp_connect(m, b, (struct sockaddr *)&be, sizeof(be)) < 0)
		DIE("mtcp_connect");
	if (mtcp_splice(m, c, c, on_closed) == 0 || errno != EINVAL)
		DIE("splicing a socket with itself was accepted");
	if (mtcp_splice(m, c, b, NULL) == 0 || errno != EFAULT)
		DIE("splicing without a callback was accepted");
	if (mtcp_splice(m, c, b, on_closed) < 0)
		DIE("mtcp_splice");
	printf("spliced\n");
	fflush(stdout);
	/* The spliced descriptors are no longer the application's. */
	char buf[8];
	if (mtcp_read(m, c, buf, sizeof(buf)) != -1 || errno != EBADF)
		DIE("read from a spliced socket");
	int ep = mtcp_epoll_create(m, 4);
	while (calls == 0 && now() < end) {
		struct mtcp_epoll_event ev[1];
		mtcp_epoll_wait(m, ep, ev, 1, 100);
	}
	if (calls == 0) {
		printf("timeout: no splice callback\n");
		return 2;
	}
	char ca[INET_ADDRSTRLEN], sa[INET_ADDRSTRLEN];
	struct in_addr ci = {.s_addr = seen.ip_addr}, si = {.s_addr = seen.dst_addr};
	inet_ntop(AF_INET, &ci, ca, sizeof(ca));
	inet_ntop(AF_INET, &si, sa, sizeof(sa));
	printf("closed client=%s:%d server=%s:%d reason=%d calls=%d accepted_from=%d\n", ca,
	       ntohs(seen.port), sa, ntohs(seen.dst_port), seen.close_reason, calls,
	       ntohs(peer.sin_port));
	fflush(stdout);
	mtcp_close(m, l);
	mtcp_destroy_context(m);
	mtcp_destroy();
	return 0;
}
