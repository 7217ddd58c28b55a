/*
 * mtcp_epoll.h — mTCP's epoll interface (mTCP, NSDI '14), as provided by nicemu's libmtcp.
 * Values and layouts follow mTCP's public header; the text is nicemu's own.
 */
#ifndef MTCP_EPOLL_H
#define MTCP_EPOLL_H

#include "mtcp_api.h"

#ifdef __cplusplus
extern "C" {
#endif

enum mtcp_epoll_op {
	MTCP_EPOLL_CTL_ADD = 1,
	MTCP_EPOLL_CTL_DEL = 2,
	MTCP_EPOLL_CTL_MOD = 3,
};

/* Event bits (Linux's epoll values). */
enum mtcp_event_type {
	MTCP_EPOLLNONE = 0x000,
	MTCP_EPOLLIN = 0x001,
	MTCP_EPOLLPRI = 0x002,
	MTCP_EPOLLOUT = 0x004,
	MTCP_EPOLLRDNORM = 0x040,
	MTCP_EPOLLRDBAND = 0x080,
	MTCP_EPOLLWRNORM = 0x100,
	MTCP_EPOLLWRBAND = 0x200,
	MTCP_EPOLLMSG = 0x400,
	MTCP_EPOLLERR = 0x008,
	MTCP_EPOLLHUP = 0x010,
	MTCP_EPOLLRDHUP = 0x2000,
	MTCP_EPOLLONESHOT = (1 << 30),
	MTCP_EPOLLET = (1 << 31)
};

/* The registration's value, returned with each event. */
typedef union mtcp_epoll_data {
	void *ptr;
	int sockid;
	uint32_t u32;
	uint64_t u64;
} mtcp_epoll_data_t;

/* 16 bytes on x86-64 (the union is 8-aligned), unlike Linux's packed epoll_event. */
struct mtcp_epoll_event {
	uint32_t events;
	mtcp_epoll_data_t data;
};

/* size: a hint, must be positive. */
int mtcp_epoll_create(mctx_t mctx, int size);

/* flags: must be 0. */
int mtcp_epoll_create1(mctx_t mctx, int flags);

int mtcp_epoll_ctl(mctx_t mctx, int epid,
		int op, int sockid, struct mtcp_epoll_event *event);

/* Runs the stack (and, on a shared lcore, the NIC) until an event, timeout milliseconds
 * (-1: no limit, 0: one round) or a signal (-1, EINTR). */
int mtcp_epoll_wait(mctx_t mctx, int epid,
		struct mtcp_epoll_event *events, int maxevents, int timeout);

/* A static description of the event bits, for logs. */
char *EventToString(uint32_t event);

#ifdef __cplusplus
}
#endif

#endif /* MTCP_EPOLL_H */
