/* nicemu-dpdk C shim: see shim.h. */
#include "shim.h"

int shim_rte_errno(void) { return rte_errno; }

unsigned int shim_lcore_id(void) { return rte_lcore_id(); }

uint64_t shim_rdtsc(void) { return rte_rdtsc(); }

uint16_t shim_eth_rx_burst(uint16_t port_id, uint16_t queue_id, struct rte_mbuf **rx_pkts,
			   uint16_t nb_pkts)
{
	return rte_eth_rx_burst(port_id, queue_id, rx_pkts, nb_pkts);
}

uint16_t shim_eth_tx_burst(uint16_t port_id, uint16_t queue_id, struct rte_mbuf **tx_pkts,
			   uint16_t nb_pkts)
{
	return rte_eth_tx_burst(port_id, queue_id, tx_pkts, nb_pkts);
}

struct rte_mbuf *shim_pktmbuf_alloc(struct rte_mempool *mp) { return rte_pktmbuf_alloc(mp); }

void shim_pktmbuf_free(struct rte_mbuf *m) { rte_pktmbuf_free(m); }

char *shim_pktmbuf_prepend(struct rte_mbuf *m, uint16_t len) { return rte_pktmbuf_prepend(m, len); }

char *shim_pktmbuf_adj(struct rte_mbuf *m, uint16_t len) { return rte_pktmbuf_adj(m, len); }

char *shim_pktmbuf_append(struct rte_mbuf *m, uint16_t len) { return rte_pktmbuf_append(m, len); }

int shim_pktmbuf_trim(struct rte_mbuf *m, uint16_t len) { return rte_pktmbuf_trim(m, len); }

void *shim_pktmbuf_mtod(struct rte_mbuf *m) { return rte_pktmbuf_mtod(m, void *); }

uint16_t shim_pktmbuf_headroom(const struct rte_mbuf *m) { return rte_pktmbuf_headroom(m); }

uint16_t shim_pktmbuf_tailroom(const struct rte_mbuf *m) { return rte_pktmbuf_tailroom(m); }

uint16_t shim_pktmbuf_data_room_size(struct rte_mempool *mp)
{
	return rte_pktmbuf_data_room_size(mp);
}

int shim_pktmbuf_is_exclusive(const struct rte_mbuf *m)
{
	if (m->nb_segs != 1 || m->next != NULL)
		return 0;
	if (rte_mbuf_refcnt_read(m) != 1)
		return 0;
	if (RTE_MBUF_CLONED(m))
		return 0;
	if (RTE_MBUF_HAS_EXTBUF(m) && rte_mbuf_ext_refcnt_read(m->shinfo) != 1)
		return 0;
	return 1;
}
