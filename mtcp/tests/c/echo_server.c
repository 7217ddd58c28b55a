/*
 * An epoll echo server written against mTCP's API only (mtcp_api.h, mtcp_epoll.h), as
 * mTCP's own examples are: non-blocking sockets, level-triggered epoll, one thread per
 * context, each with its own listener on the same port (mTCP's epserver does the same).
 * Usage: echo_server MTCP_CONF PORT CONNS SECONDS [THREADS]
 * Serves until CONNS connections (all contexts together) have been closed by their peers
 * (exit 0), or SECONDS have passed (exit 2). Prints "listening" once every context's
 * listener is registered, and per context the connections it served.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
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

static volatile int stop;
static int want, port, nthreads;
static double limit;
static atomic_int closed_total, ready;

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

struct worker {
	int core;
	int closed, accepted;
	long bytes;
	int ok;
};

/* One context: its listener, its connections, its epoll loop. */
static void *serve(void *arg)
{
	struct worker *w = arg;
	struct conn **conns = calloc(MAX_FDS, sizeof(*conns));
	mtcp_core_affinitize(w->core);
	mctx_t mctx = mtcp_create_context(w->core);
	if (!mctx || !conns) {
		perror("mtcp_create_context");
		atomic_fetch_add(&ready, 1);
		return NULL;
	}
	int ep = mtcp_epoll_create(mctx, MAX_FDS);
	int l = mtcp_socket(mctx, AF_INET, SOCK_STREAM, 0);
	if (ep < 0 || l < 0 || mtcp_setsock_nonblock(mctx, l) < 0) {
		perror("socket");
		atomic_fetch_add(&ready, 1);
		return NULL;
	}
	struct sockaddr_in a;
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = INADDR_ANY;
	a.sin_port = htons(port);
	if (mtcp_bind(mctx, l, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    mtcp_listen(mctx, l, 4096) < 0) {
		perror("bind/listen");
		atomic_fetch_add(&ready, 1);
		return NULL;
	}
	watch(mctx, ep, MTCP_EPOLL_CTL_ADD, l, MTCP_EPOLLIN);
	w->ok = 1;
	atomic_fetch_add(&ready, 1);

	struct mtcp_epoll_event evs[64];
	double end = now() + limit;
	while (atomic_load(&closed_total) < want && !stop && now() < end) {
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
					w->accepted++;
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
			if (!done && c->len == 0 &&
			    (evs[i].events & (MTCP_EPOLLIN | MTCP_EPOLLHUP | MTCP_EPOLLERR))) {
				ssize_t r = mtcp_read(mctx, s, c->buf, BUF);
				if (r > 0) {
					w->bytes += r;
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
				w->closed++;
				atomic_fetch_add(&closed_total, 1);
			}
		}
	}
	for (int s = 0; s < MAX_FDS; s++)
		free(conns[s]);
	free(conns);
	mtcp_close(mctx, l);
	mtcp_close(mctx, ep);
	mtcp_destroy_context(mctx);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 5 && argc != 6) {
		fprintf(stderr, "usage: %s MTCP_CONF PORT CONNS SECONDS [THREADS]\n", argv[0]);
		return 1;
	}
	port = atoi(argv[2]);
	want = atoi(argv[3]);
	limit = atof(argv[4]);
	nthreads = argc == 6 ? atoi(argv[5]) : 1;
	if (nthreads < 1 || nthreads > 16)
		return 1;
	if (mtcp_init(argv[1]) < 0) {
		fprintf(stderr, "mtcp_init failed\n");
		return 1;
	}
	mtcp_register_signal(SIGINT, on_signal);
	struct mtcp_conf conf;
	if (mtcp_getconf(&conf) < 0 || conf.num_cores != nthreads) {
		fprintf(stderr, "mtcp_getconf: num_cores %d\n", conf.num_cores);
		return 1;
	}
	struct worker ws[16];
	pthread_t ts[16];
	memset(ws, 0, sizeof(ws));
	for (int k = 0; k < nthreads; k++) {
		ws[k].core = k;
		pthread_create(&ts[k], NULL, serve, &ws[k]);
	}
	while (atomic_load(&ready) < nthreads)
		usleep(1000);
	int ok = 1;
	for (int k = 0; k < nthreads; k++)
		ok &= ws[k].ok;
	if (ok) {
		printf("listening\n");
		fflush(stdout);
	}
	int closed = 0, accepted = 0;
	long bytes = 0;
	for (int k = 0; k < nthreads; k++) {
		pthread_join(ts[k], NULL);
		printf("context %d: served %d connections, %ld bytes\n", k, ws[k].closed, ws[k].bytes);
		closed += ws[k].closed;
		accepted += ws[k].accepted;
		bytes += ws[k].bytes;
	}
	printf("served %d of %d connections (%d accepted), %ld bytes\n", closed, want, accepted, bytes);
	fflush(stdout);
	/* The peer winds down first: a net_memif client (nicemu loadgen in the two-context
	 * test) can fault when its server's port goes away while it still polls its rings. */
	usleep(500000);
	mtcp_destroy();
	return ok && closed == want ? 0 : 2;
}
