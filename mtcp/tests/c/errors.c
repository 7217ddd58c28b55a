/*
 * The error paths of the API, against a kernel peer: an echo server at PEER:7 and nothing
 * listening at PEER:9. Usage: errors MTCP_CONF PEER_IP
 * Prints each failed check; the exit status is the number of failures (0: all passed).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>
#include <netinet/tcp.h>
#include <sys/ioctl.h>

#include <mtcp_api.h>
#include <mtcp_epoll.h>

#include "check.h"

static struct sockaddr_in addr(const char *ip, int port)
{
	struct sockaddr_in a;
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_port = htons(port);
	inet_pton(AF_INET, ip, &a.sin_addr);
	return a;
}

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

/* Waits (bounded) for events on one socket. */
static uint32_t wait_for(mctx_t m, int ep, int s, uint32_t what)
{
	struct mtcp_epoll_event ev = {.events = what, .data.sockid = s};
	if (mtcp_epoll_ctl(m, ep, MTCP_EPOLL_CTL_ADD, s, &ev) < 0)
		return 0;
	uint32_t got = 0;
	for (int i = 0; i < 50 && !got; i++) {
		struct mtcp_epoll_event out[4];
		int n = mtcp_epoll_wait(m, ep, out, 4, 100);
		for (int k = 0; k < n; k++)
			if (out[k].data.sockid == s)
				got |= out[k].events;
	}
	mtcp_epoll_ctl(m, ep, MTCP_EPOLL_CTL_DEL, s, NULL);
	return got;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: %s MTCP_CONF PEER_IP\n", argv[0]);
		return 100;
	}
	const char *peer = argv[2];
	char buf[256];

	/* Before mtcp_init: no context. */
	FAILS(mtcp_create_context(0) == NULL ? -1 : 0, ENODEV);
	FAILS(mtcp_init(NULL), EFAULT);
	CHECK(mtcp_init(argv[1]) == 0);
	mctx_t m = mtcp_create_context(0);
	CHECK(m != NULL);
	if (!m)
		return 100;
	/* One shared lcore in the configuration: no second context. */
	CHECK(mtcp_create_context(1) == NULL);

	/* Bad descriptors and contexts. */
	FAILS(mtcp_read(m, 999, buf, sizeof(buf)), EBADF);
	FAILS(mtcp_write(m, -1, buf, 1), EBADF);
	FAILS(mtcp_close(m, 999), EBADF);
	FAILS(mtcp_socket((mctx_t)buf, AF_INET, SOCK_STREAM, 0), EBADF);
	FAILS(mtcp_setsock_nonblock(m, 4242), EBADF);

	/* Arguments. */
	FAILS(mtcp_socket(m, AF_INET6, SOCK_STREAM, 0), EAFNOSUPPORT);
	FAILS(mtcp_socket(m, AF_INET, SOCK_DGRAM, 0), EPROTONOSUPPORT);
	int s = mtcp_socket(m, AF_INET, SOCK_STREAM, 0);
	CHECK(s >= 0);
	FAILS(mtcp_read(m, s, buf, sizeof(buf)), ENOTCONN);
	struct sockaddr_in a;
	socklen_t alen = sizeof(a);
	FAILS(mtcp_getpeername(m, s, (struct sockaddr *)&a, &alen), ENOTCONN);
	FAILS(mtcp_listen(m, s, 0), EINVAL);
	int one = 1;
	FAILS(mtcp_setsockopt(m, s, SOL_SOCKET, SO_REUSEADDR, &one, 2), EINVAL);
	FAILS(mtcp_setsockopt(m, s, SOL_SOCKET, SO_REUSEADDR, NULL, 4), EFAULT);
	FAILS(mtcp_socket_ioctl(m, s, FIONBIO, &one), EINVAL);
	FAILS(mtcp_read(m, s, NULL, 10), EFAULT);
	FAILS(mtcp_pipe(m, NULL), EFAULT);

	/* A listener: AccelTCP's setup offload option, non-blocking accept. */
	struct sockaddr_in la = addr("0.0.0.0", 8080);
	CHECK(mtcp_setsockopt(m, s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) == 0);
	CHECK(mtcp_bind(m, s, (struct sockaddr *)&la, sizeof(la)) == 0);
	CHECK(mtcp_listen(m, s, 16) == 0);
	CHECK(mtcp_setsockopt(m, s, IPPROTO_TCP, TCP_SETUP_OFFLOAD, &one, sizeof(one)) == 0);
	int v = 0;
	socklen_t vlen = sizeof(v);
	CHECK(mtcp_getsockopt(m, s, IPPROTO_TCP, TCP_SETUP_OFFLOAD, &v, &vlen) == 0 && v == 1 &&
	      vlen == sizeof(int));
	CHECK(mtcp_setsock_nonblock(m, s) == 0);
	FAILS(mtcp_accept(m, s, NULL, NULL), EAGAIN);

	/* Epoll arguments and timeouts. */
	int ep = mtcp_epoll_create(m, 16);
	CHECK(ep >= 0);
	FAILS(mtcp_epoll_create(m, 0), EINVAL);
	FAILS(mtcp_epoll_create1(m, 7), EINVAL);
	struct mtcp_epoll_event ev = {.events = MTCP_EPOLLIN, .data.sockid = s};
	FAILS(mtcp_epoll_ctl(m, ep, 42, s, &ev), EINVAL);
	FAILS(mtcp_epoll_ctl(m, ep, MTCP_EPOLL_CTL_ADD, s, NULL), EFAULT);
	FAILS(mtcp_epoll_ctl(m, s, MTCP_EPOLL_CTL_ADD, s, &ev), EINVAL);
	FAILS(mtcp_epoll_ctl(m, ep, MTCP_EPOLL_CTL_MOD, s, &ev), ENOENT);
	struct mtcp_epoll_event out[4];
	FAILS(mtcp_epoll_wait(m, ep, out, 0, 0), EINVAL);
	FAILS(mtcp_epoll_wait(m, 999, out, 4, 0), EBADF);
	double t0 = now();
	CHECK(mtcp_epoll_wait(m, ep, out, 4, 50) == 0);
	CHECK(now() - t0 >= 0.045);

	/* Refused: non-blocking connect reports EINPROGRESS, then SO_ERROR; blocking fails. */
	struct sockaddr_in closed_port = addr(peer, 9);
	int c = mtcp_socket(m, AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	FAILS(mtcp_connect(m, c, (struct sockaddr *)&closed_port, sizeof(closed_port)), EINPROGRESS);
	uint32_t got = wait_for(m, ep, c, MTCP_EPOLLOUT);
	CHECK(got & (MTCP_EPOLLERR | MTCP_EPOLLHUP));
	int err = 0;
	socklen_t elen = sizeof(err);
	CHECK(mtcp_getsockopt(m, c, SOL_SOCKET, SO_ERROR, &err, &elen) == 0 && err == ECONNREFUSED);
	CHECK(mtcp_close(m, c) == 0);
	c = mtcp_socket(m, AF_INET, SOCK_STREAM, 0);
	FAILS(mtcp_connect(m, c, (struct sockaddr *)&closed_port, sizeof(closed_port)), ECONNREFUSED);
	CHECK(mtcp_close(m, c) == 0);

	/* Connected to the echo server: EAGAIN, FIONREAD, MSG_PEEK, names, readv/writev. */
	struct sockaddr_in echo = addr(peer, 7);
	c = mtcp_socket(m, AF_INET, SOCK_STREAM, 0);
	CHECK(mtcp_connect(m, c, (struct sockaddr *)&echo, sizeof(echo)) == 0);
	FAILS(mtcp_connect(m, c, (struct sockaddr *)&echo, sizeof(echo)), EISCONN);
	alen = sizeof(a);
	CHECK(mtcp_getpeername(m, c, (struct sockaddr *)&a, &alen) == 0 && a.sin_port == htons(7) &&
	      a.sin_addr.s_addr == echo.sin_addr.s_addr && alen == sizeof(a));
	alen = sizeof(a);
	CHECK(mtcp_getsockname(m, c, (struct sockaddr *)&a, &alen) == 0 && a.sin_port != 0);
	CHECK(mtcp_setsock_nonblock(m, c) == 0);
	FAILS(mtcp_read(m, c, buf, sizeof(buf)), EAGAIN);
	char hello[] = "hello", world[] = ", world";
	struct iovec wv[2] = {{hello, 5}, {world, 7}};
	CHECK(mtcp_writev(m, c, wv, 2) == 12);
	CHECK(wait_for(m, ep, c, MTCP_EPOLLIN) & MTCP_EPOLLIN);
	int avail = 0;
	for (int i = 0; i < 50 && avail < 12; i++) {
		struct mtcp_epoll_event o[1];
		mtcp_epoll_wait(m, ep, o, 1, 20);
		CHECK(mtcp_socket_ioctl(m, c, FIONREAD, &avail) == 0);
	}
	CHECK(avail == 12);
	memset(buf, 0, sizeof(buf));
	CHECK(mtcp_recv(m, c, buf, 5, MSG_PEEK) == 5 && memcmp(buf, "hello", 5) == 0);
	char p1[3], p2[20];
	struct iovec rv[2] = {{p1, 3}, {p2, 20}};
	CHECK(mtcp_readv(m, c, rv, 2) == 12 && memcmp(p1, "hel", 3) == 0 &&
	      memcmp(p2, "lo, world", 9) == 0);
	FAILS(mtcp_recv(m, c, buf, sizeof(buf), MSG_OOB), EINVAL);
	FAILS(mtcp_shutdown(m, c, 42), EINVAL);
	CHECK(mtcp_abort(m, c) == 0);
	FAILS(mtcp_read(m, c, buf, 1), EBADF);

	CHECK(mtcp_close(m, s) == 0);
	CHECK(mtcp_close(m, ep) == 0);
	mtcp_destroy_context(m);
	FAILS(mtcp_socket(m, AF_INET, SOCK_STREAM, 0), EBADF);
	mtcp_destroy();
	printf("errors: %d failed checks\n", failures);
	return failures;
}
