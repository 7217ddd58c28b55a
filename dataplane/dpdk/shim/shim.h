/*
 * nicemu-dpdk C shim: DPDK's static-inline functions and macros exposed as real functions
 * (and enum constants) so that bindgen can bind them. Every function is a one-line forwarder;
 * semantics are exactly those of the wrapped DPDK call.
 */
#ifndef NICEMU_DPDK_SHIM_H
#define NICEMU_DPDK_SHIM_H

#include <stdint.h>

#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_lcore.h>
#include <rte_cycles.h>
#include <rte_errno.h>

/* Values of function-like macros that bindgen cannot evaluate (all fit in 32 bits). */
enum shim_consts {
	SHIM_ETH_RSS_IP = RTE_ETH_RSS_IP,
	SHIM_ETH_RSS_TCP = RTE_ETH_RSS_TCP,
	SHIM_ETH_RSS_UDP = RTE_ETH_RSS_UDP,
	SHIM_LCORE_ID_ANY = (int)LCORE_ID_ANY,
};

/* Value of the per-thread rte_errno. */
int shim_rte_errno(void);
/* rte_lcore_id(): this thread's lcore id, or LCORE_ID_ANY for unregistered threads. */
unsigned int shim_lcore_id(void);
/* rte_rdtsc(). */
uint64_t shim_rdtsc(void);

/* rte_eth_rx_burst() / rte_eth_tx_burst(). */
uint16_t shim_eth_rx_burst(uint16_t port_id, uint16_t queue_id, struct rte_mbuf **rx_pkts,
			   uint16_t nb_pkts);
uint16_t shim_eth_tx_burst(uint16_t port_id, uint16_t queue_id, struct rte_mbuf **tx_pkts,
			   uint16_t nb_pkts);

/* rte_pktmbuf_* inline helpers. */
struct rte_mbuf *shim_pktmbuf_alloc(struct rte_mempool *mp);
void shim_pktmbuf_free(struct rte_mbuf *m);
char *shim_pktmbuf_prepend(struct rte_mbuf *m, uint16_t len);
char *shim_pktmbuf_adj(struct rte_mbuf *m, uint16_t len);
char *shim_pktmbuf_append(struct rte_mbuf *m, uint16_t len);
int shim_pktmbuf_trim(struct rte_mbuf *m, uint16_t len);
void *shim_pktmbuf_mtod(struct rte_mbuf *m);
uint16_t shim_pktmbuf_headroom(const struct rte_mbuf *m);
uint16_t shim_pktmbuf_tailroom(const struct rte_mbuf *m);
uint16_t shim_pktmbuf_data_room_size(struct rte_mempool *mp);
/* 1 when `m` is one segment whose data no other mbuf shares (safe to hand out as &mut). */
int shim_pktmbuf_is_exclusive(const struct rte_mbuf *m);

#endif
