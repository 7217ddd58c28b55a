/*
 * mtcp_api.h — the socket API of mTCP (Jeong et al., NSDI '14), as provided by nicemu's
 * libmtcp, with AccelTCP's additions (Moon et al., NSDI '20, §5.1): the
 * TCP_SETUP_OFFLOAD / TCP_TEARDOWN_OFFLOAD socket options and mtcp_splice.
 *
 * Names, constants, struct layouts and calling conventions follow mTCP's public header so
 * that mTCP programs compile unchanged; the text is nicemu's own. Calls return -1 and set
 * errno on failure, as mTCP does. See docs/c-api.md for what differs from mTCP.
 */
#ifndef MTCP_API_H
#define MTCP_API_H

#include <stdint.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/types.h>
#include <sys/time.h>

#ifndef UNUSED
#define UNUSED(x) (void)x
#endif

#ifndef INPORT_ANY
#define INPORT_ANY (uint16_t)0
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Kinds of mTCP descriptors (mTCP's values; informative here). */
enum socket_type {
	MTCP_SOCK_UNUSED,
	MTCP_SOCK_STREAM,
	MTCP_SOCK_PROXY,
	MTCP_SOCK_LISTENER,
	MTCP_SOCK_EPOLL,
	MTCP_SOCK_PIPE,
};

/* Process-wide settings: read with mtcp_getconf after mtcp_init, change with mtcp_setconf
 * before creating contexts. Buffer sizes are in bytes, timeouts in seconds. */
struct mtcp_conf {
	int num_cores;
	int max_concurrency;

	int max_num_buffers;
	int rcvbuf_size;
	int sndbuf_size;

	int tcp_timewait;
	int tcp_timeout;
};

/* One per-core mTCP context. */
typedef struct mtcp_context *mctx_t;

/* Reads the mTCP configuration file and starts the NIC (DPDK ports, NIC lcores). */
int mtcp_init(const char *config_file);

/* Stops every context and the NIC and releases DPDK. */
void mtcp_destroy();

int mtcp_getconf(struct mtcp_conf *conf);

int mtcp_setconf(const struct mtcp_conf *conf);

/* Pins the calling thread to core cpu. */
int mtcp_core_affinitize(int cpu);

/* A context for core cpu; the calling thread then runs it (NULL on failure). */
mctx_t mtcp_create_context(int cpu);

void mtcp_destroy_context(mctx_t mctx);

typedef void (*mtcp_sighandler_t)(int);

/* Installs handler for signum; a blocking call or mtcp_epoll_wait that the signal
 * interrupts returns -1 with errno EINTR. Returns the previous handler. */
mtcp_sighandler_t mtcp_register_signal(int signum, mtcp_sighandler_t handler);

/* A pipe in the context's descriptor table: bytes written (mtcp_write, mtcp_writev) to
 * pipeid[1] are read (mtcp_read, mtcp_readv) from pipeid[0]. Both ends are blocking until
 * mtcp_setsock_nonblock, can be registered with mtcp_epoll_ctl (read end: MTCP_EPOLLIN when
 * bytes wait or the write end is closed, then reads return 0; write end: MTCP_EPOLLOUT while
 * there is room, MTCP_EPOLLERR once the read end is closed, then writes fail with EPIPE) and
 * are closed with mtcp_close, each on its own. The buffer holds the context's send buffer
 * size (sndbuf). Reading the write end or writing the read end: EBADF; socket calls on an
 * end: ENOTSOCK. */
int mtcp_pipe(mctx_t mctx, int pipeid[2]);

int mtcp_getsockopt(mctx_t mctx, int sockid, int level,
		int optname, void *optval, socklen_t *optlen);

int mtcp_setsockopt(mctx_t mctx, int sockid, int level,
		int optname, const void *optval, socklen_t optlen);

int mtcp_setsock_nonblock(mctx_t mctx, int sockid);

/* As ioctl(2); FIONREAD only. */
int mtcp_socket_ioctl(mctx_t mctx, int sockid, int request, void *argp);

/* AF_INET, SOCK_STREAM only. */
int mtcp_socket(mctx_t mctx, int domain, int type, int protocol);

int mtcp_bind(mctx_t mctx, int sockid,
		const struct sockaddr *addr, socklen_t addrlen);

int mtcp_listen(mctx_t mctx, int sockid, int backlog);

int mtcp_accept(mctx_t mctx, int sockid, struct sockaddr *addr, socklen_t *addrlen);

/* mTCP picks source addresses and ports whose replies reach this core; nicemu does so by
 * itself (from the NIC's RSS key, or the device's queue steering): returns 0. */
int mtcp_init_rss(mctx_t mctx, in_addr_t saddr_base, int num_addr,
		in_addr_t daddr, in_addr_t dport);

int mtcp_connect(mctx_t mctx, int sockid,
		const struct sockaddr *addr, socklen_t addrlen);

int mtcp_close(mctx_t mctx, int sockid);

/* SHUT_RD, SHUT_WR or SHUT_RDWR. */
int mtcp_shutdown(mctx_t mctx, int sockid, int sock_how);

/* nicemu's addition: closes with a RST (as SO_LINGER with a zero timeout, then close). */
int mtcp_abort(mctx_t mctx, int sockid);

int mtcp_getsockname(mctx_t mctx, int sock, struct sockaddr *addr, socklen_t *addrlen);

int mtcp_getpeername(mctx_t mctx, int sockid, struct sockaddr *addr,
		socklen_t *addrlen);

ssize_t mtcp_read(mctx_t mctx, int sockid, char *buf, size_t len);

/* flags: 0 or MSG_PEEK. */
ssize_t mtcp_recv(mctx_t mctx, int sockid, char *buf, size_t len, int flags);

int mtcp_readv(mctx_t mctx, int sockid, const struct iovec *iov, int numIOV);

ssize_t mtcp_write(mctx_t mctx, int sockid, const char *buf, size_t len);

int mtcp_writev(mctx_t mctx, int sockid, const struct iovec *iov, int numIOV);

/* AccelTCP (NSDI '20, §4.1 and §4.2): level IPPROTO_TCP, an int value (non-zero: on).
 * TCP_SETUP_OFFLOAD on a listener: the NIC completes its handshakes with SYN cookies.
 * TCP_TEARDOWN_OFFLOAD: the NIC closes the connection after the host's close. */
#define TCP_SETUP_OFFLOAD 0x10
#define TCP_TEARDOWN_OFFLOAD 0x11

/* What the splice callback receives once a spliced pair has closed (AccelTCP §4.3).
 * Addresses and ports in network byte order. */
typedef struct nsplice_meta {
	uint32_t ip_addr;      /* the client's address (remote end of sock_from) */
	uint16_t port;         /* the client's port */
	uint32_t dst_addr;     /* the server's address (remote end of sock_to) */
	uint16_t dst_port;     /* the server's port */
	uint16_t close_reason; /* 0: both FINs; 1: RST from the client; 2: RST from the
	                        * server; 3: idle timeout */
} nsplice_meta_t;

typedef void (*callback_t)(nsplice_meta_t *meta);

/* Hands the two connected sockets to the NIC, which relays their bytes to each other; both
 * descriptors are closed for the application on success; cb runs once when the pair ends
 * (from inside a later mtcp call on this context). */
int mtcp_splice(mctx_t mctx, int sock_from, int sock_to, callback_t cb);

/* mOS's timers (mOS's mtcp_api.h; AccelTCP's epproxy calls mtcp_settimer only in code
 * that is commented out). mOS names the callback type callback_t, which AccelTCP's header,
 * above, gives to the splice callback: here it is mtcp_timer_callback_t, with mOS's
 * signature, so that mOS's callbacks are passed unchanged. */
#ifndef MTCP_FILTER_ARG_DEFINED
#define MTCP_FILTER_ARG_DEFINED
typedef struct filter_arg {
	void *arg;
	size_t len;
} filter_arg_t;
#endif

#ifndef MTCP_EVENT_T_DEFINED
#define MTCP_EVENT_T_DEFINED
typedef uint64_t event_t;
#endif

typedef void (*mtcp_timer_callback_t)(mctx_t mctx, int sock, int side,
		uint64_t events, filter_arg_t *arg);

/* A one-shot timer: cb(mctx, id, 0, 0, NULL) runs once, *timeout after this call, on the
 * thread that runs the context: inside mtcp_epoll_wait (which keeps waiting afterwards), a
 * blocking call, or any later call on the context, never while the context is locked, so
 * cb may call mtcp functions (mtcp_settimer too, to run again). -1 with EINVAL for a NULL
 * timeout or cb, a negative id or time; EBADF for a bad mctx. */
int mtcp_settimer(mctx_t mctx, int id, struct timeval *timeout, mtcp_timer_callback_t cb);

#ifdef __cplusplus
}
#endif

#endif /* MTCP_API_H */
