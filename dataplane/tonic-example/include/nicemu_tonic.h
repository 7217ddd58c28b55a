/*
 * nicemu Tonic module C ABI, version 1: the C view of offload-api/src/tonic_abi.rs.
 *
 * A module library exports two functions:
 *
 *   uint32_t nicemu_tonic_abi_version(void);   returns NICEMU_TONIC_ABI_VERSION
 *   const struct nicemu_tonic_module_vtable *nicemu_tonic_module(void);
 *
 * The loader refuses any version other than its own. The vtable is static, read once at
 * load. Every pointer a hook receives is valid for that call only; hooks may run concurrently
 * on different flows from several threads; they must not block, allocate memory the caller
 * frees, do I/O, read a clock, throw or keep pointers. See the Rust documentation of
 * offload_api::tonic_abi for the full contract. Reserved fields are written as zero.
 */
#ifndef NICEMU_TONIC_H
#define NICEMU_TONIC_H

#include <stddef.h>
#include <stdint.h>

#define NICEMU_TONIC_ABI_VERSION 1u
#define NICEMU_TONIC_NAME_LEN 32
#define NICEMU_TONIC_WINDOW_WORDS 4
#define NICEMU_TONIC_MAX_SACK_BLOCKS 4
#define NICEMU_TONIC_PKT_DATA_WORDS 4

enum { NICEMU_TONIC_CREDIT_WINDOW = 0, NICEMU_TONIC_CREDIT_RATE = 1, NICEMU_TONIC_CREDIT_GRANT = 2 };
enum { NICEMU_TONIC_CTX_PRIORITY_INCOMING = 0, NICEMU_TONIC_CTX_PRIORITY_PERIODIC = 1 };
enum {
    NICEMU_TONIC_PKT_ACK = 0,
    NICEMU_TONIC_PKT_SACK = 1,
    NICEMU_TONIC_PKT_NACK = 2,
    NICEMU_TONIC_PKT_CNP = 3,
    NICEMU_TONIC_PKT_GRANT = 4,
};

#define NICEMU_TONIC_FLAG_ECN_ECHO (1u << 0)
#define NICEMU_TONIC_FLAG_TRIMMED (1u << 1)
#define NICEMU_TONIC_FLAG_RCV_WND (1u << 2)
#define NICEMU_TONIC_FLAG_TS_ECHO (1u << 3)

#define NICEMU_TONIC_OUT_MARK_RTX (1u << 0)
#define NICEMU_TONIC_OUT_MARK_RTX_FRESH_ONLY (1u << 1)
#define NICEMU_TONIC_OUT_MARK_ACKED (1u << 2)
#define NICEMU_TONIC_OUT_CUM_ACK (1u << 3)
#define NICEMU_TONIC_OUT_WND_SIZE (1u << 4)
#define NICEMU_TONIC_OUT_ADD_CREDIT (1u << 5)
#define NICEMU_TONIC_OUT_RATE (1u << 6)
#define NICEMU_TONIC_OUT_RTX_TIMER_AMOUNT (1u << 7)
#define NICEMU_TONIC_OUT_RESET_RTX_TIMER (1u << 8)
#define NICEMU_TONIC_OUT_STOP_RTX_TIMER (1u << 9)

struct nicemu_tonic_seg_range {
    uint64_t start;
    uint64_t end;
};

struct nicemu_tonic_incoming_pkt {
    uint8_t pkt_type;
    uint8_t sack_cnt;
    uint16_t flags;
    uint32_t rcv_wnd;
    uint64_t cumulative_ack;
    struct nicemu_tonic_seg_range sack[NICEMU_TONIC_MAX_SACK_BLOCKS];
    uint64_t nack;
    uint32_t grant_bytes;
    uint32_t ecn_bytes;
    uint64_t ts_echo;
    uint32_t data[NICEMU_TONIC_PKT_DATA_WORDS];
};

struct nicemu_tonic_window_bits {
    uint64_t words[NICEMU_TONIC_WINDOW_WORDS];
};

struct nicemu_tonic_flow_view {
    uint64_t wnd_start;
    uint64_t next_new;
    uint64_t tail;
    uint64_t total_sent;
    uint64_t rtx_timer_amount;
    uint64_t rtx_deadline;
    uint64_t rate_bps;
    uint32_t wnd_size;
    uint32_t rcv_wnd;
    uint32_t window_capacity;
    uint32_t outstanding_cnt;
    uint32_t mss;
    uint8_t is_idle;
    uint8_t reserved[3];
    struct nicemu_tonic_window_bits acked;
    struct nicemu_tonic_window_bits marked_for_rtx;
    struct nicemu_tonic_window_bits rtx_cnt;
};

struct nicemu_tonic_incoming_input {
    uint64_t now;
    struct nicemu_tonic_incoming_pkt pkt;
    uint32_t newly_acked_cnt;
    uint32_t reserved;
    uint64_t old_wnd_start;
    uint64_t new_wnd_start;
    struct nicemu_tonic_flow_view flow;
};

struct nicemu_tonic_periodic_input {
    uint64_t now;
    uint8_t timeout_expired;
    uint8_t reserved[7];
    struct nicemu_tonic_flow_view flow;
};

struct nicemu_tonic_hook_output {
    uint32_t set;
    uint32_t wnd_size;
    struct nicemu_tonic_seg_range mark_rtx;
    struct nicemu_tonic_seg_range mark_acked;
    uint64_t cum_ack;
    uint32_t add_credit;
    uint32_t reserved;
    uint64_t rate_bps;
    uint64_t rtx_timer_amount;
};

struct nicemu_tonic_module_config {
    uint8_t credit_scheme;
    uint8_t ctx_priority;
    uint8_t periodic_every_visit;
    uint8_t reserved0;
    uint32_t user_ctx_bytes;
    uint32_t init_wnd_size;
    uint32_t max_burst_bytes;
    uint32_t init_credit_bytes;
    uint32_t reserved1;
    uint64_t init_rate_bps;
    uint64_t init_rtx_timer_ns;
};

struct nicemu_tonic_module_vtable {
    char name[NICEMU_TONIC_NAME_LEN]; /* UTF-8, 1..31 bytes, NUL-terminated */
    struct nicemu_tonic_module_config config;
    /* optional */
    void (*init_flow)(uint64_t now, const struct nicemu_tonic_flow_view *flow, uint64_t *ctx,
                      size_t ctx_words);
    /* required */
    void (*incoming)(const struct nicemu_tonic_incoming_input *input, uint64_t *ctx,
                     size_t ctx_words, struct nicemu_tonic_hook_output *out);
    /* required */
    void (*periodic)(const struct nicemu_tonic_periodic_input *input, uint64_t *ctx,
                     size_t ctx_words, struct nicemu_tonic_hook_output *out);
    /* optional */
    void (*merge_user_ctx)(const uint64_t *before, const uint64_t *from_incoming,
                           const uint64_t *from_periodic, uint64_t *merged, size_t ctx_words);
};

/* The layout checked on the Rust side too. */
_Static_assert(sizeof(struct nicemu_tonic_incoming_pkt) == 120, "incoming_pkt layout");
_Static_assert(sizeof(struct nicemu_tonic_flow_view) == 176, "flow_view layout");
_Static_assert(offsetof(struct nicemu_tonic_flow_view, acked) == 80, "flow_view layout");
_Static_assert(sizeof(struct nicemu_tonic_incoming_input) == 328, "incoming_input layout");
_Static_assert(offsetof(struct nicemu_tonic_incoming_input, flow) == 152, "incoming_input");
_Static_assert(sizeof(struct nicemu_tonic_periodic_input) == 192, "periodic_input layout");
_Static_assert(sizeof(struct nicemu_tonic_hook_output) == 72, "hook_output layout");
_Static_assert(sizeof(struct nicemu_tonic_module_config) == 40, "module_config layout");
_Static_assert(offsetof(struct nicemu_tonic_module_vtable, init_flow) == 72, "vtable layout");

#endif /* NICEMU_TONIC_H */
