/*
 * An epoll echo server written against mTCP's API only (mtcp_api.h, mtcp_epoll.h), as
 * mTCP's own examples are: non-blocking sockets, one context, edge of nothing (level
 * triggered). Usage: echo_server MTCP_CONF PORT CONNS SECONDS
 * Serves until CONNS connections have been closed by their peers (exit 0), or SECONDS have
 * passed (exit 2). Prints "listening" once the listener is registered.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>

#include <mtcp_api.h>
#include <mtcp_epoll.h>

#define MAX_FDS 4096
#define BUF 16384

struct conn {
	char buf[BUF];
	int len; /* bytes read, not yet written back */
	int off; /* of them, written already */
};

static struct conn *conns[MAX_FDS];
static volatile int stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

/* Writes what is pending; 0 when all is out, 1 when the socket is full, -1 on error. */
static int flush(mctx_t mctx, int s, struct conn *c)
{
	while (c->off < c->len) {
		ssize_t w = mtcp_write(mctx, s, c->buf + c->off, c->len - c->off);
		if (w < 0)
			return errno == EAGAIN ? 1 : -1;
		c->off += (int)w;
	}
	c->len = c->off = 0;
	return 0;
}

static void watch(mctx_t mctx, int ep, int op, int s, uint32_t events)
{
	struct mtcp_epoll_event ev;
	memset(&ev, 0, sizeof(ev));
	ev.events = events;
	ev.data.sockid = s;
	if (mtcp_epoll_ctl(mctx, ep, op, s, &ev) < 0)
		perror("mtcp_epoll_ctl");
}

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: %s MTCP_CONF PORT CONNS SECONDS\n", argv[0]);
		return 1;
	}
	int port = atoi(argv[2]), want = atoi(argv[3]);
	double limit = atof(argv[4]);
	if (mtcp_init(argv[1]) < 0) {
		fprintf(stderr, "mtcp_init failed\n");
		return 1;
	}
	mtcp_register_signal(SIGINT, on_signal);
	struct mtcp_conf conf;
	if (mtcp_getconf(&conf) < 0 || conf.num_cores != 1) {
		fprintf(stderr, "mtcp_getconf: num_cores %d\n", conf.num_cores);
		return 1;
	}
	mtcp_core_affinitize(0);
	mctx_t mctx = mtcp_create_context(0);
	if (!mctx) {
		perror("mtcp_create_context");
		return 1;
	}
	int ep = mtcp_epoll_create(mctx, MAX_FDS);
	int l = mtcp_socket(mctx, AF_INET, SOCK_STREAM, 0);
	if (ep < 0 || l < 0 || mtcp_setsock_nonblock(mctx, l) < 0) {
		perror("socket");
		return 1;
	}
	struct sockaddr_in a;
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = INADDR_ANY;
	a.sin_port = htons(port);
	if (mtcp_bind(mctx, l, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    mtcp_listen(mctx, l, 4096) < 0) {
		perror("bind/listen");
		return 1;
	}
	watch(mctx, ep, MTCP_EPOLL_CTL_ADD, l, MTCP_EPOLLIN);
	printf("listening\n");
	fflush(stdout);

	struct mtcp_epoll_event evs[64];
	int closed = 0, accepted = 0;
	long bytes = 0;
	double end = now() + limit;
	while (closed < want && !stop && now() < end) {
		int n = mtcp_epoll_wait(mctx, ep, evs, 64, 100);
		if (n < 0) {
			if (errno != EINTR)
				perror("mtcp_epoll_wait");
			break;
		}
		for (int i = 0; i < n; i++) {
			int s = evs[i].data.sockid;
			if (s == l) {
				for (;;) {
					int c = mtcp_accept(mctx, l, NULL, NULL);
					if (c < 0) {
						if (errno != EAGAIN)
							perror("mtcp_accept");
						break;
					}
					if (c >= MAX_FDS) {
						mtcp_close(mctx, c);
						continue;
					}
					accepted++;
					mtcp_setsock_nonblock(mctx, c);
					conns[c] = calloc(1, sizeof(struct conn));
					watch(mctx, ep, MTCP_EPOLL_CTL_ADD, c, MTCP_EPOLLIN);
				}
				continue;
			}
			struct conn *c = conns[s];
			if (!c)
				continue;
			int done = 0;
			if (evs[i].events & MTCP_EPOLLOUT) {
				int f = flush(mctx, s, c);
				if (f < 0)
					done = 1;
				else if (f == 0)
					watch(mctx, ep, MTCP_EPOLL_CTL_MOD, s, MTCP_EPOLLIN);
			}
			if (!done && c->len == 0 && (evs[i].events & (MTCP_EPOLLIN | MTCP_EPOLLHUP | MTCP_EPOLLERR))) {
				ssize_t r = mtcp_read(mctx, s, c->buf, BUF);
				if (r > 0) {
					bytes += r;
					c->len = (int)r;
					int f = flush(mctx, s, c);
					if (f < 0)
						done = 1;
					else if (f == 1)
						watch(mctx, ep, MTCP_EPOLL_CTL_MOD, s, MTCP_EPOLLOUT);
				} else if (r == 0 || errno != EAGAIN) {
					done = 1;
				}
			}
			if (done) {
				watch(mctx, ep, MTCP_EPOLL_CTL_DEL, s, 0);
				mtcp_close(mctx, s);
				free(c);
				conns[s] = NULL;
				closed++;
			}
		}
	}
	printf("served %d of %d connections (%d accepted), %ld bytes\n", closed, want, accepted, bytes);
	fflush(stdout);
	mtcp_close(mctx, l);
	mtcp_close(mctx, ep);
	mtcp_destroy_context(mctx);
	mtcp_destroy();
	return closed == want ? 0 : 2;
}
