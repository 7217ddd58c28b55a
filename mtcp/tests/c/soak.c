/*
 * A connect/transfer/close loop against an echo server, from several threads, each with
 * its own mTCP context, for a given time; written against mtcp_api.h and mtcp_epoll.h only.
 *
 *   soak <mtcp.conf> <server ip> <port> <threads> <seconds> <report every s> [conns]
 *
 * Each thread keeps `conns` (default 8) connections going at once, each of which connects,
 * sends a message of 1..65536 bytes (size and pattern from a per-thread generator), reads
 * the echo back and checks every byte, then ends: most with mtcp_close, every 16th with
 * mtcp_abort after the echo, every 7th with mtcp_close after reading only part of it (the
 * rest is discarded: a reset, as a real client that gives up). Every `report` seconds the
 * main thread prints one line: elapsed seconds, the process's resident memory (VmRSS, kB),
 * connections completed and errors so far. At the end it prints the totals and exits 0 only
 * when no error occurred and every thread completed connections.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <mtcp_api.h>
#include <mtcp_epoll.h>

#define MAX_THREADS 8
#define MAX_CONNS 64
#define MAX_MSG 65536

struct conn {
	int fd;           /* -1: free */
	uint32_t seed;    /* the message's pattern */
	int len;          /* message length */
	int sent;
	int got;
	int partial;      /* close after this many bytes back (0: read all) */
	int abort_it;
};

struct worker {
	int id;
	pthread_t th;
	uint64_t done;
	uint64_t errors;
	uint64_t bytes;
	uint32_t rng;
	struct conn c[MAX_CONNS];
};

static const char *g_conf;
static struct in_addr g_ip;
static int g_port, g_threads, g_conns = 8;
static volatile int g_stop;
static struct worker g_w[MAX_THREADS];

static uint32_t next_rand(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

static unsigned char byte_at(uint32_t seed, int i)
{
	return (unsigned char)((seed >> (i % 24)) + (unsigned)i * 131u);
}

static void on_signal(int sig)
{
	(void)sig;
	g_stop = 1;
}

static long rss_kb(void)
{
	char line[256];
	long kb = -1;
	FILE *f = fopen("/proc/self/status", "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

/* Starts connection k of worker w; 0, or -1 when mtcp_socket/mtcp_connect failed. */
static int start(struct worker *w, mctx_t m, int ep, int k)
{
	struct conn *c = &w->c[k];
	struct sockaddr_in a;
	struct mtcp_epoll_event ev;
	int fd = mtcp_socket(m, AF_INET, SOCK_STREAM, 0);
	if (fd < 0)
		return -1;
	mtcp_setsock_nonblock(m, fd);
	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_addr = g_ip;
	a.sin_port = htons((uint16_t)g_port);
	if (mtcp_connect(m, fd, (struct sockaddr *)&a, sizeof a) < 0 && errno != EINPROGRESS) {
		mtcp_close(m, fd);
		return -1;
	}
	c->fd = fd;
	c->seed = next_rand(&w->rng);
	c->len = 1 + (int)(next_rand(&w->rng) % MAX_MSG);
	c->sent = c->got = 0;
	c->abort_it = (w->done % 16) == 15;
	c->partial = (w->done % 7) == 6 ? c->len / 2 : 0;
	ev.events = MTCP_EPOLLOUT | MTCP_EPOLLIN;
	ev.data.sockid = k;
	if (mtcp_epoll_ctl(m, ep, MTCP_EPOLL_CTL_ADD, fd, &ev) < 0) {
		mtcp_close(m, fd);
		c->fd = -1;
		return -1;
	}
	return 0;
}

static void finish(struct worker *w, mctx_t m, int ep, int k, int ok)
{
	struct conn *c = &w->c[k];
	mtcp_epoll_ctl(m, ep, MTCP_EPOLL_CTL_DEL, c->fd, NULL);
	if (ok && c->abort_it)
		mtcp_abort(m, c->fd);
	else
		mtcp_close(m, c->fd);
	c->fd = -1;
	if (ok)
		w->done++;
	else
		w->errors++;
}

/* Moves connection k on after an event; returns 1 when it ended. */
static int step(struct worker *w, mctx_t m, int ep, int k, uint32_t events)
{
	static __thread unsigned char buf[MAX_MSG];
	struct conn *c = &w->c[k];
	int i, n;

	if (events & MTCP_EPOLLERR) {
		fprintf(stderr, "thread %d: connection error (events %s)\n", w->id,
			EventToString(events));
		finish(w, m, ep, k, 0);
		return 1;
	}
	while (c->sent < c->len) {
		int chunk = c->len - c->sent;
		for (i = 0; i < chunk; i++)
			buf[i] = byte_at(c->seed, c->sent + i);
		n = mtcp_write(m, c->fd, (char *)buf, chunk);
		if (n < 0) {
			if (errno == EAGAIN)
				break;
			fprintf(stderr, "thread %d: mtcp_write: %s\n", w->id, strerror(errno));
			finish(w, m, ep, k, 0);
			return 1;
		}
		c->sent += n;
	}
	for (;;) {
		n = mtcp_read(m, c->fd, (char *)buf, sizeof buf);
		if (n < 0) {
			if (errno == EAGAIN)
				return 0;
			fprintf(stderr, "thread %d: mtcp_read: %s\n", w->id, strerror(errno));
			finish(w, m, ep, k, 0);
			return 1;
		}
		if (n == 0) {
			fprintf(stderr, "thread %d: end of stream after %d of %d bytes\n", w->id,
				c->got, c->len);
			finish(w, m, ep, k, 0);
			return 1;
		}
		for (i = 0; i < n; i++) {
			if (c->got + i >= c->sent || buf[i] != byte_at(c->seed, c->got + i)) {
				fprintf(stderr, "thread %d: byte %d of %d differs\n", w->id,
					c->got + i, c->len);
				finish(w, m, ep, k, 0);
				return 1;
			}
		}
		c->got += n;
		w->bytes += (uint64_t)n;
		if (c->got == c->len || (c->partial && c->got >= c->partial)) {
			finish(w, m, ep, k, 1);
			return 1;
		}
	}
}

static void *run(void *arg)
{
	struct worker *w = arg;
	struct mtcp_epoll_event ev[MAX_CONNS];
	mctx_t m = mtcp_create_context(w->id);
	int ep, k, n, i;

	if (!m) {
		fprintf(stderr, "thread %d: mtcp_create_context: %s\n", w->id, strerror(errno));
		w->errors++;
		return NULL;
	}
	ep = mtcp_epoll_create(m, MAX_CONNS);
	for (k = 0; k < g_conns; k++)
		w->c[k].fd = -1;
	while (!g_stop) {
		for (k = 0; k < g_conns; k++)
			if (w->c[k].fd < 0 && start(w, m, ep, k) < 0) {
				fprintf(stderr, "thread %d: connect: %s\n", w->id, strerror(errno));
				w->errors++;
			}
		n = mtcp_epoll_wait(m, ep, ev, MAX_CONNS, 100);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			fprintf(stderr, "thread %d: mtcp_epoll_wait: %s\n", w->id, strerror(errno));
			w->errors++;
			break;
		}
		for (i = 0; i < n; i++) {
			k = ev[i].data.sockid;
			if (w->c[k].fd >= 0)
				step(w, m, ep, k, ev[i].events);
		}
	}
	for (k = 0; k < g_conns; k++)
		if (w->c[k].fd >= 0)
			mtcp_close(m, w->c[k].fd);
	mtcp_close(m, ep);
	mtcp_destroy_context(m);
	return NULL;
}

static void totals(uint64_t *done, uint64_t *errors, uint64_t *bytes)
{
	int t;
	*done = *errors = *bytes = 0;
	for (t = 0; t < g_threads; t++) {
		*done += g_w[t].done;
		*errors += g_w[t].errors;
		*bytes += g_w[t].bytes;
	}
}

int main(int argc, char **argv)
{
	int seconds, every, t, idle_threads = 0;
	uint64_t done, errors, bytes;
	time_t start, last;

	if (argc < 7) {
		fprintf(stderr, "usage: %s conf ip port threads seconds report_every [conns]\n",
			argv[0]);
		return 2;
	}
	g_conf = argv[1];
	if (inet_pton(AF_INET, argv[2], &g_ip) != 1)
		return 2;
	g_port = atoi(argv[3]);
	g_threads = atoi(argv[4]);
	seconds = atoi(argv[5]);
	every = atoi(argv[6]);
	if (argc > 7)
		g_conns = atoi(argv[7]);
	if (g_threads < 1 || g_threads > MAX_THREADS || g_conns < 1 || g_conns > MAX_CONNS ||
	    every < 1)
		return 2;
	if (mtcp_init(g_conf) < 0) {
		fprintf(stderr, "mtcp_init failed\n");
		return 2;
	}
	mtcp_register_signal(SIGINT, on_signal);
	for (t = 0; t < g_threads; t++) {
		g_w[t].id = t;
		g_w[t].rng = 0x9e3779b9u * (uint32_t)(t + 1);
		pthread_create(&g_w[t].th, NULL, run, &g_w[t]);
	}
	start = last = time(NULL);
	while (!g_stop && time(NULL) - start < seconds) {
		usleep(100000);
		if (time(NULL) - last >= every) {
			last = time(NULL);
			totals(&done, &errors, &bytes);
			printf("soak: t=%ld rss_kb=%ld conns=%llu errors=%llu\n",
			       (long)(last - start), rss_kb(), (unsigned long long)done,
			       (unsigned long long)errors);
			fflush(stdout);
		}
	}
	g_stop = 1;
	for (t = 0; t < g_threads; t++) {
		pthread_join(g_w[t].th, NULL);
		if (g_w[t].done == 0)
			idle_threads++;
	}
	totals(&done, &errors, &bytes);
	mtcp_destroy();
	printf("soak: done %llu connections, %llu bytes echoed, %llu errors, %d threads idle, "
	       "rss_kb=%ld\n",
	       (unsigned long long)done, (unsigned long long)bytes, (unsigned long long)errors,
	       idle_threads, rss_kb());
	return (errors == 0 && idle_threads == 0 && done > 0) ? 0 : 1;
}
