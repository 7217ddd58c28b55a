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
