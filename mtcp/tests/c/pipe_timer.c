/*
 * Pipes, timers, settings and signals of the API, against a kernel echo server at PEER:7.
 * Usage: pipe_timer MTCP_CONF PEER_IP
 * Prints each failed check; the exit status is the number of failures (0: all passed).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/ioctl.h>

#include <mtcp_api.h>
#include <mtcp_epoll.h>

#include "check.h"

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static struct sockaddr_in addr(const char *ip, int port)
{
	struct sockaddr_in a;
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_port = htons(port);
	inet_pton(AF_INET, ip, &a.sin_addr);
	return a;
}

/* Events of one epoll_wait(0), OR-ed per registration data (ids 0..7). */
static void poll_once(mctx_t m, int ep, uint32_t got[8])
{
	struct mtcp_epoll_event out[8];
	int n = mtcp_epoll_wait(m, ep, out, 8, 0);
	memset(got, 0, 8 * sizeof(uint32_t));
	for (int k = 0; k < n; k++)
		if (out[k].data.u64 < 8)
			got[out[k].data.u64] |= out[k].events;
}

/* The re-arming timer: fires 3 times, 100 ms apart, then wakes the waiting loop by
 * writing to a pipe. */
#define TIMER_MS 100
static struct {
	mctx_t m;
	int fires;
	double set_at, fired_at[3];
	int bad_args;
	int wake_fd;
} rearm;

static void on_timer(mctx_t m, int sock, int side, uint64_t events, filter_arg_t *arg)
{
	double t = now();
	if (m != rearm.m || sock != 42 || side != 0 || events != 0 || arg != NULL)
		rearm.bad_args++;
	if (rearm.fires < 3)
		rearm.fired_at[rearm.fires] = t - rearm.set_at;
	rearm.fires++;
	if (rearm.fires < 3) {
		struct timeval tv = {0, TIMER_MS * 1000};
		rearm.set_at = now();
		/* mtcp calls from a callback: the context is not locked. */
		if (mtcp_settimer(m, 42, &tv, on_timer) != 0)
			rearm.bad_args++;
	} else if (mtcp_write(m, rearm.wake_fd, "!", 1) != 1) {
		rearm.bad_args++;
	}
}

/* A timer that feeds a pipe a blocking read waits on. */
static int feed_fd;
static void feed(mctx_t m, int sock, int side, uint64_t events, filter_arg_t *arg)
{
	UNUSED(sock);
	UNUSED(side);
	UNUSED(events);
	UNUSED(arg);
	if (mtcp_write(m, feed_fd, "fed", 3) != 3)
		failures++;
}

static volatile sig_atomic_t signals_seen;
static void on_usr1(int sig)
{
	UNUSED(sig);
	signals_seen++;
}

static void *raise_later(void *main_thread)
{
	usleep(150 * 1000);
	pthread_kill(*(pthread_t *)main_thread, SIGUSR1);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: %s MTCP_CONF PEER_IP\n", argv[0]);
		return 100;
	}
	const char *peer = argv[2];
	char buf[4096];
	struct timeval tv = {0, 1000};

	/* Before mtcp_init. */
	FAILS(mtcp_init_rss(NULL, 0, 1, 0, 0), EBADF);
	CHECK(mtcp_init(argv[1]) == 0);

	/* mtcp_setconf before mtcp_create_context: at most 6 descriptors in the context. */
	struct mtcp_conf conf;
	CHECK(mtcp_getconf(&conf) == 0);
	conf.max_concurrency = 6;
	CHECK(mtcp_setconf(&conf) == 0);
	FAILS(mtcp_setconf(NULL), EFAULT);
	mctx_t m = mtcp_create_context(0);
	CHECK(m != NULL);
	if (!m)
		return 100;
	memset(&conf, 0, sizeof(conf));
	CHECK(mtcp_getconf(&conf) == 0 && conf.max_concurrency == 6);
	int fds[8], n = 0;
	while (n < 8 && (fds[n] = mtcp_socket(m, AF_INET, SOCK_STREAM, 0)) >= 0)
		n++;
	CHECK(n == 6 && errno == EMFILE);
	int pp[2] = {-1, -1};
	FAILS(mtcp_pipe(m, pp), EMFILE);
	FAILS(mtcp_epoll_create(m, 1), EMFILE);
	CHECK(mtcp_close(m, fds[--n]) == 0);
	FAILS(mtcp_pipe(m, pp), EMFILE); /* needs two */
	while (n > 0)
		CHECK(mtcp_close(m, fds[--n]) == 0);

	/* mtcp_init_rss's arguments. */
	FAILS(mtcp_init_rss((mctx_t)buf, 0, 1, 0, 0), EBADF);
	FAILS(mtcp_init_rss(m, inet_addr("192.0.2.1"), 0, inet_addr(peer), htons(7)), EINVAL);
	FAILS(mtcp_init_rss(m, inet_addr("192.0.2.1"), -3, inet_addr(peer), htons(7)), EINVAL);
	CHECK(mtcp_init_rss(m, inet_addr("192.0.2.1"), 1, inet_addr(peer), htons(7)) == 0);

	/* Pipes: arguments, bytes, directions, socket calls. */
	FAILS(mtcp_pipe(m, NULL), EFAULT);
	FAILS(mtcp_pipe((mctx_t)buf, pp), EBADF);
	CHECK(mtcp_pipe(m, pp) == 0 && pp[0] >= 0 && pp[1] >= 0 && pp[0] != pp[1]);
	CHECK(mtcp_write(m, pp[1], "hello", 5) == 5);
	int avail = -1;
	CHECK(mtcp_socket_ioctl(m, pp[0], FIONREAD, &avail) == 0 && avail == 5);
	memset(buf, 0, sizeof(buf));
	CHECK(mtcp_read(m, pp[0], buf, sizeof(buf)) == 5 && memcmp(buf, "hello", 5) == 0);
	FAILS(mtcp_read(m, pp[1], buf, 1), EBADF);
	FAILS(mtcp_write(m, pp[0], "x", 1), EBADF);
	char a1[] = "ab", a2[] = "cde";
	struct iovec wv[2] = {{a1, 2}, {a2, 3}};
	CHECK(mtcp_writev(m, pp[1], wv, 2) == 5);
	char r1[4], r2[8];
	struct iovec rv[2] = {{r1, 4}, {r2, 8}};
	CHECK(mtcp_readv(m, pp[0], rv, 2) == 5 && memcmp(r1, "abcd", 4) == 0 && r2[0] == 'e');
	struct sockaddr_in sa = addr(peer, 7);
	FAILS(mtcp_connect(m, pp[1], (struct sockaddr *)&sa, sizeof(sa)), ENOTSOCK);
	FAILS(mtcp_bind(m, pp[0], (struct sockaddr *)&sa, sizeof(sa)), ENOTSOCK);
	FAILS(mtcp_listen(m, pp[0], 4), ENOTSOCK);
	FAILS(mtcp_accept(m, pp[0], NULL, NULL), ENOTSOCK);
	FAILS(mtcp_shutdown(m, pp[1], SHUT_WR), ENOTSOCK);
	int v = 0;
	socklen_t vlen = sizeof(v);
	FAILS(mtcp_getsockopt(m, pp[0], SOL_SOCKET, SO_ERROR, &v, &vlen), ENOTSOCK);

	/* Non-blocking ends with epoll: EAGAIN, EPOLLIN, EPOLLOUT, a full pipe. */
	CHECK(mtcp_setsock_nonblock(m, pp[0]) == 0);
	CHECK(mtcp_setsock_nonblock(m, pp[1]) == 0);
	FAILS(mtcp_read(m, pp[0], buf, sizeof(buf)), EAGAIN);
	int ep = mtcp_epoll_create(m, 4);
	CHECK(ep >= 0);
	struct mtcp_epoll_event ev;
	memset(&ev, 0, sizeof(ev));
	ev.events = MTCP_EPOLLIN;
	ev.data.u64 = 0;
	CHECK(mtcp_epoll_ctl(m, ep, MTCP_EPOLL_CTL_ADD, pp[0], &ev) == 0);
	ev.events = MTCP_EPOLLOUT;
	ev.data.u64 = 1;
	CHECK(mtcp_epoll_ctl(m, ep, MTCP_EPOLL_CTL_ADD, pp[1], &ev) == 0);
	uint32_t got[8];
	poll_once(m, ep, got);
	CHECK(got[0] == 0 && got[1] == MTCP_EPOLLOUT);
	CHECK(mtcp_write(m, pp[1], "x", 1) == 1);
	poll_once(m, ep, got);
	CHECK(got[0] == MTCP_EPOLLIN);
	long total = 1;
	ssize_t w;
	memset(buf, 'p', sizeof(buf));
	while ((w = mtcp_write(m, pp[1], buf, sizeof(buf))) > 0 && total < (1L << 24))
		total += w;
	CHECK(w == -1 && errno == EAGAIN);
	CHECK(total == conf.sndbuf_size);
	poll_once(m, ep, got);
	CHECK(got[0] == MTCP_EPOLLIN && got[1] == 0);
	CHECK(mtcp_read(m, pp[0], buf, 100) == 100);
	poll_once(m, ep, got);
	CHECK(got[1] == MTCP_EPOLLOUT);
	long drained = 100;
	ssize_t r;
	while ((r = mtcp_read(m, pp[0], buf, sizeof(buf))) > 0)
		drained += r;
	CHECK(drained == total && r == -1 && errno == EAGAIN);

	/* End of stream: closing the write end. */
	CHECK(mtcp_write(m, pp[1], "bye", 3) == 3);
	CHECK(mtcp_close(m, pp[1]) == 0);
	poll_once(m, ep, got);
	CHECK(got[0] & MTCP_EPOLLIN);
	CHECK(mtcp_read(m, pp[0], buf, sizeof(buf)) == 3);
	CHECK(mtcp_read(m, pp[0], buf, sizeof(buf)) == 0);
	poll_once(m, ep, got);
	CHECK(got[0] & MTCP_EPOLLIN);
	CHECK(mtcp_close(m, pp[0]) == 0);
	FAILS(mtcp_close(m, pp[0]), EBADF);

	/* EPIPE and EPOLLERR: the read end closed first. */
	CHECK(mtcp_pipe(m, pp) == 0);
	ev.events = MTCP_EPOLLOUT;
	ev.data.u64 = 2;
	CHECK(mtcp_epoll_ctl(m, ep, MTCP_EPOLL_CTL_ADD, pp[1], &ev) == 0);
	CHECK(mtcp_close(m, pp[0]) == 0);
	FAILS(mtcp_write(m, pp[1], "x", 1), EPIPE);
	poll_once(m, ep, got);
	CHECK(got[2] & MTCP_EPOLLERR);
	CHECK(mtcp_close(m, pp[1]) == 0);

	/* Blocking ends: a blocking read returns what a timer callback writes meanwhile. */
	CHECK(mtcp_pipe(m, pp) == 0);
	feed_fd = pp[1];
	FAILS(mtcp_settimer(m, 1, &tv, NULL), EINVAL);
	FAILS(mtcp_settimer(m, 1, NULL, feed), EINVAL);
	FAILS(mtcp_settimer((mctx_t)buf, 1, &tv, feed), EBADF);
	struct timeval neg = {-1, 0};
	FAILS(mtcp_settimer(m, 1, &neg, feed), EINVAL);
	neg.tv_sec = 0;
	neg.tv_usec = -5;
	FAILS(mtcp_settimer(m, 1, &neg, feed), EINVAL);
	struct timeval t50 = {0, 50 * 1000};
	double t0 = now();
	CHECK(mtcp_settimer(m, 7, &t50, feed) == 0);
	memset(buf, 0, sizeof(buf));
	CHECK(mtcp_read(m, pp[0], buf, sizeof(buf)) == 3 && memcmp(buf, "fed", 3) == 0);
	double dt = now() - t0;
	CHECK(dt >= 0.050 && dt < 5.0);
	CHECK(mtcp_close(m, pp[1]) == 0);
	CHECK(mtcp_read(m, pp[0], buf, sizeof(buf)) == 0); /* blocking, at end of stream */
	CHECK(mtcp_close(m, pp[0]) == 0);

	/* A timer re-arming itself from its callback 3 times, inside mtcp_epoll_wait(-1) with no
	 * traffic; its third run wakes the wait through a pipe. */
	CHECK(mtcp_pipe(m, pp) == 0);
	ev.events = MTCP_EPOLLIN;
	ev.data.u64 = 3;
	CHECK(mtcp_epoll_ctl(m, ep, MTCP_EPOLL_CTL_ADD, pp[0], &ev) == 0);
	rearm.m = m;
	rearm.wake_fd = pp[1];
	struct timeval t100 = {0, TIMER_MS * 1000};
	t0 = now();
	rearm.set_at = t0;
	CHECK(mtcp_settimer(m, 42, &t100, on_timer) == 0);
	struct mtcp_epoll_event out[4];
	int k = mtcp_epoll_wait(m, ep, out, 4, -1);
	dt = now() - t0;
	CHECK(k == 1 && out[0].data.u64 == 3 && (out[0].events & MTCP_EPOLLIN));
	CHECK(rearm.fires == 3 && rearm.bad_args == 0);
	for (int i = 0; i < 3; i++) {
		if (!(rearm.fired_at[i] >= TIMER_MS / 1000.0 && rearm.fired_at[i] < 5.0)) {
			printf("FAILED: timer run %d came %.4f s after it was set\n", i,
			       rearm.fired_at[i]);
			failures++;
		}
	}
	CHECK(dt >= 3 * TIMER_MS / 1000.0 && dt < 5.0);
	printf("timer: 3 runs in %.3f s (%.4f %.4f %.4f)\n", dt, rearm.fired_at[0],
	       rearm.fired_at[1], rearm.fired_at[2]);
	CHECK(mtcp_close(m, pp[1]) == 0);
	CHECK(mtcp_close(m, pp[0]) == 0);

	/* EINTR: a signal registered with mtcp_register_signal ends mtcp_epoll_wait(-1). */
	CHECK(mtcp_register_signal(SIGUSR1, on_usr1) != SIG_ERR);
	pthread_t self = pthread_self(), helper;
	CHECK(pthread_create(&helper, NULL, raise_later, &self) == 0);
	t0 = now();
	FAILS(mtcp_epoll_wait(m, ep, out, 4, -1), EINTR);
	dt = now() - t0;
	pthread_join(helper, NULL);
	CHECK(signals_seen == 1 && dt >= 0.1 && dt < 5.0);

	/* mtcp_shutdown: arguments, then a half-close against the echo server. */
	int s = mtcp_socket(m, AF_INET, SOCK_STREAM, 0);
	CHECK(s >= 0);
	FAILS(mtcp_shutdown(m, s, SHUT_WR), ENOTCONN);
	FAILS(mtcp_shutdown(m, s, 42), EINVAL);
	FAILS(mtcp_shutdown(m, 999, SHUT_RDWR), EBADF);
	FAILS(mtcp_shutdown((mctx_t)buf, s, SHUT_RDWR), EBADF);
	CHECK(mtcp_connect(m, s, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	CHECK(mtcp_write(m, s, "half", 4) == 4);
	CHECK(mtcp_shutdown(m, s, SHUT_WR) == 0);
	FAILS(mtcp_write(m, s, "x", 1), EPIPE);
	long back = 0;
	t0 = now();
	while (back < 4 && now() - t0 < 10) {
		r = mtcp_read(m, s, buf + back, sizeof(buf) - back);
		if (r <= 0)
			break;
		back += r;
	}
	CHECK(back == 4 && memcmp(buf, "half", 4) == 0);
	CHECK(mtcp_read(m, s, buf, sizeof(buf)) == 0); /* the server closed after our FIN */
	CHECK(mtcp_close(m, s) == 0);

	CHECK(mtcp_close(m, ep) == 0);
	mtcp_destroy_context(m);
	FAILS(mtcp_settimer(m, 1, &tv, feed), EBADF);
	FAILS(mtcp_pipe(m, pp), EBADF);
	mtcp_destroy();
	printf("pipe_timer: %d failed checks\n", failures);
	return failures;
}
