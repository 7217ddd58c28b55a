//! Loss recovery.

use super::*;

/// Drops the first transmission of the data segments of A with the given indexes (counted
/// in MSS units from the first data byte), once each. Returns the net after a 3 MB transfer
/// from A to B.
fn recovery_run(sack: bool, delay: u64, drops: &[u32]) -> Net {
    let mut c = cfg();
    c.sack = sack;
    let mut net = Net::new(c.clone(), c, [Impair::delay(delay); 2], 20);
    net.handshake();
    let iss1 = net.recs[0].seq + 1;
    let mss = net.tcb(A).send_mss() as u32;
    let targets: Vec<Seq> = drops.iter().map(|&k| iss1 + k * mss).collect();
    let mut done = vec![false; targets.len()];
    net.drop_fn = Some(Box::new(move |r: &Rec| {
        if r.from != A || r.len == 0 {
            return false;
        }
        for (k, t) in targets.iter().enumerate() {
            if r.seq == *t && !done[k] {
                done[k] = true;
                return true;
            }
        }
        false
    }));
    let mut bulk = Bulk::new(3 * 1024 * 1024, 0);
    assert!(net.run_until(net.now + 600 * SEC, |n| bulk.app(n)));
    net
}

#[test]
fn sack_repairs_several_losses_in_one_window() {
    // Ten losses in one window of a flow with a 100 ms RTT.
    let drops: Vec<u32> = (0..10).map(|k| 200 + 4 * k).collect();
    let with = recovery_run(true, 50 * MS, &drops);
    let without = recovery_run(false, 50 * MS, &drops);
    let s = *with.t[A].as_ref().unwrap().stats();
    let n = *without.t[A].as_ref().unwrap().stats();
    // The ten lost segments, plus at most the one RFC 6675 rule (4) rescue retransmission.
    assert!((10..=11).contains(&s.retransmits), "{s:?}");
    assert_eq!(s.fast_retransmits, 1, "one recovery episode: {s:?}");
    assert_eq!(s.rto_expiries, 0, "{s:?}");
    assert!(
        s.retransmits < n.retransmits,
        "SACK {} vs NewReno {} retransmissions",
        s.retransmits,
        n.retransmits
    );
    assert!(
        n.rto_expiries > 0,
        "NewReno needs ten RTTs here and times out: {n:?}"
    );
    // All ten holes are repaired within about one RTT of the first retransmission.
    let rx: Vec<u64> = retransmission_times(&with, A);
    assert!(rx.len() >= 10);
    assert!(
        rx[9] - rx[0] <= 110 * MS,
        "repair took {} ms",
        (rx[9] - rx[0]) / MS
    );
}

/// Times of A's retransmitted data segments.
fn retransmission_times(net: &Net, from: usize) -> Vec<u64> {
    let mut high = Seq(0);
    let mut first = true;
    let mut v = Vec::new();
    for r in net.data_recs(from) {
        let end = r.seq + r.len as u32;
        if first {
            high = end;
            first = false;
        } else if r.seq.lt(high) {
            v.push(r.t);
        } else {
            high = high.max(end);
        }
    }
    v
}

#[test]
fn newreno_partial_acks_repair_one_hole_per_rtt() {
    let drops = [300, 305, 310];
    let net = recovery_run(false, 5 * MS, &drops);
    let s = *net.t[A].as_ref().unwrap().stats();
    assert_eq!(s.fast_retransmits, 1, "{s:?}");
    assert_eq!(s.retransmits, 3, "{s:?}");
    assert_eq!(s.rto_expiries, 0, "{s:?}");
    assert_eq!(s.recoveries, 1, "{s:?}");
    // The second and third holes are resent on partial ACKs, one RTT (10 ms) apart.
    let rx = retransmission_times(&net, A);
    assert_eq!(rx.len(), 3);
    for w in rx.windows(2) {
        let gap = w[1] - w[0];
        assert!((9 * MS..=12 * MS).contains(&gap), "gap {gap}");
    }
}

#[test]
fn dup_acks_trigger_fast_retransmit_not_rto() {
    let net = recovery_run(true, 5 * MS, &[150]);
    let s = *net.t[A].as_ref().unwrap().stats();
    assert_eq!(
        (s.fast_retransmits, s.retransmits, s.rto_expiries),
        (1, 1, 0),
        "{s:?}"
    );
    assert!(s.dup_acks >= 3);
}
