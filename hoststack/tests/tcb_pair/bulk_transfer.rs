//! Bulk transfer.

use super::*;

#[test]
fn bulk_10mb_each_way_clean() {
    let net = bulk(cfg(), cfg(), Impair::delay(MS), TEN_MB, 10);
    for i in 0..2 {
        let s = net.t[i].as_ref().unwrap().stats();
        assert_eq!(s.retransmits, 0);
        assert_eq!(s.rto_expiries, 0);
    }
}

#[test]
fn bulk_10mb_each_way_1pct_loss() {
    let imp = Impair {
        loss_ppm: 10_000,
        ..Impair::delay(MS)
    };
    let net = bulk(cfg(), cfg(), imp, TEN_MB, 11);
    let s = net.t[A].as_ref().unwrap().stats();
    assert!(s.retransmits > 0 && s.fast_retransmits > 0, "{s:?}");
    assert!(s.sack_retransmits > 0, "{s:?}");
}

#[test]
fn bulk_10mb_each_way_10pct_loss() {
    let imp = Impair {
        loss_ppm: 100_000,
        ..Impair::delay(MS)
    };
    let net = bulk(cfg(), cfg(), imp, TEN_MB, 12);
    let s = net.t[A].as_ref().unwrap().stats();
    assert!(s.retransmits > 0 && s.rto_expiries > 0, "{s:?}");
}

#[test]
fn bulk_10mb_each_way_1pct_loss_newreno_no_timestamps() {
    let mut c = cfg();
    c.sack = false;
    c.timestamps = false;
    let imp = Impair {
        loss_ppm: 10_000,
        ..Impair::delay(MS)
    };
    let net = bulk(c.clone(), c, imp, TEN_MB, 13);
    let s = net.t[A].as_ref().unwrap().stats();
    assert!(s.fast_retransmits > 0 && s.sack_retransmits == 0, "{s:?}");
}

#[test]
fn bulk_10mb_each_way_reordering() {
    let imp = Impair {
        reorder_ppm: 50_000,
        reorder_extra: 3 * MS,
        ..Impair::delay(MS)
    };
    let net = bulk(cfg(), cfg(), imp, TEN_MB, 14);
    let s = net.t[B].as_ref().unwrap().stats();
    assert!(s.ooo_segments > 0, "{s:?}");
}

#[test]
fn bulk_10mb_each_way_duplication() {
    let imp = Impair {
        dup_ppm: 50_000,
        ..Impair::delay(MS)
    };
    let net = bulk(cfg(), cfg(), imp, TEN_MB, 15);
    let s = net.t[B].as_ref().unwrap().stats();
    assert!(s.out_of_window > 0, "duplicates are old segments: {s:?}");
}

#[test]
fn bulk_with_everything_and_small_buffers() {
    let mut c = cfg();
    c.send_buffer = 20_000;
    c.recv_buffer = 30_000;
    c.window_scale = 0;
    let imp = Impair {
        loss_ppm: 20_000,
        dup_ppm: 20_000,
        reorder_ppm: 20_000,
        reorder_extra: 2 * MS,
        ..Impair::delay(MS)
    };
    let net = bulk(c.clone(), c, imp, 2 * 1024 * 1024, 16);
    for t in net.t.iter().flatten() {
        assert!(t.buffer_bytes() <= 50_000);
    }
}

#[test]
fn bulk_with_tso_payloads() {
    let mut c = cfg();
    c.max_segment_payload = 64_000;
    let mut net = Net::new(c.clone(), c, [Impair::delay(MS); 2], 17);
    net.handshake();
    let mut bulk = Bulk::new(4 * 1024 * 1024, 0);
    assert!(net.run_until(net.now + 100 * SEC, |n| bulk.app(n)));
    let mss = net.tcb(A).send_mss();
    let big = net.data_recs(A).filter(|r| r.len > mss).count();
    assert!(big > 0, "TSO-sized payloads were emitted");
    assert!(net.data_recs(A).all(|r| r.len <= 64_000));
}
