//! Unit tests of the splice offload.

use super::*;

#[test]
fn keys_spread_over_shards() {
    let mut seen = [0usize; SHARDS];
    for i in 0..4096u32 {
        let k = Key::new([10, 0, 0, 1], 40_000 + (i as u16), [10, 0, 0, 2], 80);
        seen[k.shard()] += 1;
    }
    assert!(seen.iter().all(|&n| n > 20), "{seen:?}");
}

/// A pair between client `c` (port `cp`) on side A and a server on side B, the proxy's
/// side B port `bp`.
fn pair_repr(id: u32, cp: u16, bp: u16) -> SpliceInstallRepr {
    let side = |local_ip, local_port, remote_ip, remote_port, port| SpliceSide {
        tuple: FourTuple {
            local_ip,
            local_port,
            remote_ip,
            remote_port,
        },
        local_mac: [2, 0, 0, 0, 0, 1],
        remote_mac: [2, 0, 0, 0, 0, 2],
        port,
        peer_wscale: 7,
        local_wscale: 7,
        sack_permitted: true,
        timestamps: true,
    };
    SpliceInstallRepr {
        request_id: id,
        a: side([10, 0, 0, 1], 80, [10, 0, 0, 9], cp, 0),
        b: side([10, 1, 0, 1], bp, [10, 1, 0, 9], 8080, 1),
        ..SpliceInstallRepr::default()
    }
}

fn pair_of(r: &SpliceInstallRepr) -> (Arc<Pair>, (Dir, Dir)) {
    let (ab, ba) = directions(r);
    let keys = [Key::of(&ab), Key::of(&ba)];
    (
        Arc::new(Pair::new(r, 0, keys, Arc::new(SegQueue::new()), 0)),
        (ab, ba),
    )
}

/// The presence filter holds exactly one count per key in the table through installs,
/// refusals (exists, full) and removals, so a key of no pair is ruled out without a lock
/// unless it collides, and an installed key never is.
#[test]
fn the_presence_filter_counts_exactly_the_keys_in_the_table() {
    let t = SpliceTable::new(SpliceConfig {
        max_pairs: 3,
        ..SpliceConfig::default()
    });
    let counted = |t: &SpliceTable| -> u64 {
        t.filter
            .iter()
            .map(|c| u64::from(c.load(Ordering::Relaxed)))
            .sum()
    };
    let mut pairs = Vec::new();
    for i in 0..3u16 {
        let (p, dirs) = pair_of(&pair_repr(u32::from(i), 40_000 + i, 50_000 + i));
        assert_eq!(t.insert(&p, dirs), AckStatus::Ok);
        pairs.push(p);
    }
    assert_eq!(counted(&t), 6);
    for p in &pairs {
        assert!(p.keys.iter().all(|&k| t.may_contain(k)));
    }
    // Refused: the same 4-tuples (exists), and a fourth pair (full). Counts unchanged.
    let (dup, dirs) = pair_of(&pair_repr(9, 40_000, 50_000));
    assert_ne!(t.insert(&dup, dirs), AckStatus::Ok);
    let (extra, dirs) = pair_of(&pair_repr(10, 40_100, 50_100));
    assert_eq!(t.insert(&extra, dirs), AckStatus::TableFull);
    assert_eq!(counted(&t), 6);
    // Most keys of no pair are ruled out (4,096 slots, 6 taken).
    let passed = (0..1000u16)
        .filter(|i| t.may_contain(Key::new([10, 0, 0, 9], 30_000 + i, [10, 0, 0, 1], 80)))
        .count();
    assert!(
        passed < 20,
        "{passed} of 1000 keys of no pair got past the filter"
    );
    // A pair that is not in the table removes nothing; the installed ones go.
    t.remove(&dup);
    assert_eq!(counted(&t), 6);
    for p in &pairs {
        t.remove(p);
    }
    assert_eq!(counted(&t), 0);
    assert!(t.is_empty());
    for p in &pairs {
        assert!(p.keys.iter().all(|&k| !t.may_contain(k)));
    }
}

/// Lookups never wait for a writer: with the lock of a key's shard held (as an install or a
/// removal on another lcore holds it), another thread still finds the key's entry at once.
#[test]
fn lookups_do_not_wait_for_a_writer_of_the_shard() {
    let t = SpliceTable::new(SpliceConfig::default());
    let (p, dirs) = pair_of(&pair_repr(1, 40_000, 50_000));
    assert_eq!(t.insert(&p, dirs), AckStatus::Ok);
    let k = p.keys[0];
    let held = t.index.lock(k.shard());
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = t.clone();
    std::thread::spawn(move || {
        let found = reader.fetch(k, |_| None).map(|e| e.pair.request_id);
        let _ = tx.send(found);
    });
    let got = rx.recv_timeout(std::time::Duration::from_secs(10));
    drop(held);
    assert_eq!(
        got,
        Ok(Some(1)),
        "the lookup waited for the shard's writer lock"
    );
}

/// A neighbour MAC one lcore resolved for an entry installed without it is what every later
/// lookup of that entry gets, without resolving again.
#[test]
fn a_resolved_mac_is_shared_by_later_lookups() {
    let t = SpliceTable::new(SpliceConfig::default());
    let mut r = pair_repr(1, 40_000, 50_000);
    r.b.remote_mac = [0; 6];
    let (p, dirs) = pair_of(&r);
    assert_eq!(t.insert(&p, dirs), AckStatus::Ok);
    // The A → B direction goes out on side B, whose neighbour MAC is unknown.
    let k = p.keys[0];
    assert_eq!(t.fetch(k, |_| None).unwrap().dir.dst_mac(), [0; 6]);
    let m = [2, 0, 0, 0, 0, 7];
    assert_eq!(t.fetch(k, |_| Some(m)).unwrap().dir.dst_mac(), m);
    let asked = std::cell::Cell::new(false);
    let e = t.fetch(k, |_| {
        asked.set(true);
        None
    });
    assert_eq!(e.unwrap().dir.dst_mac(), m);
    assert!(!asked.get(), "resolved again");
}

/// Installs and removals racing with lookups on another thread: a pair that stays is always
/// found, with its own entry; a key is never found with another pair's entry; every pair
/// installed and removed leaves nothing behind (bounded: 2,000 rounds).
#[test]
fn lookups_racing_installs_and_removals_see_only_whole_entries() {
    let t = SpliceTable::new(SpliceConfig {
        max_pairs: 64,
        ..SpliceConfig::default()
    });
    let (stay, dirs) = pair_of(&pair_repr(7, 40_000, 50_000));
    assert_eq!(t.insert(&stay, dirs), AckStatus::Ok);
    let churn: Vec<_> = (0..16u16)
        .map(|i| pair_of(&pair_repr(100 + u32::from(i), 41_000 + i, 51_000 + i)))
        .collect();
    let churn_keys: Vec<(Key, u32)> = churn
        .iter()
        .flat_map(|(p, _)| p.keys.map(|k| (k, p.request_id)))
        .collect();
    let done = Arc::new(AtomicBool::new(false));
    let reader = {
        let (t, done, stay, churn_keys) =
            (t.clone(), done.clone(), stay.clone(), churn_keys.clone());
        std::thread::spawn(move || {
            let mut rounds = 0u64;
            let most = if cfg!(miri) { 200 } else { 5_000_000 };
            while !done.load(Ordering::Acquire) && rounds < most {
                rounds += 1;
                for (i, k) in stay.keys.iter().enumerate() {
                    let e = t
                        .fetch(*k, |_| None)
                        .expect("a pair that stays is always found");
                    assert!(Arc::ptr_eq(&e.pair, &stay) && e.side.index() == i);
                }
                for &(k, id) in &churn_keys {
                    if let Some(e) = t.fetch(k, |_| None) {
                        assert_eq!(e.pair.request_id, id);
                        assert_eq!(e.pair.keys[e.side.index()], k);
                    }
                }
            }
        })
    };
    // Fewer under Miri, which checks the same interleavings for undefined behaviour.
    let rounds = if cfg!(miri) { 40 } else { 2_000 };
    for round in 0..rounds {
        let (p, dirs) = &churn[round % churn.len()];
        assert_eq!(t.insert(p, *dirs), AckStatus::Ok);
        if round % 3 == 0 {
            std::thread::yield_now();
        }
        t.remove(p);
    }
    done.store(true, Ordering::Release);
    reader.join().expect("reader");
    assert_eq!(t.len(), 1);
    for &(k, _) in &churn_keys {
        assert!(t.fetch(k, |_| None).is_none());
    }
    let counted: u32 = t.filter.iter().map(|c| c.load(Ordering::Relaxed)).sum();
    assert_eq!(counted, 2, "only the staying pair's keys are counted in");
}
