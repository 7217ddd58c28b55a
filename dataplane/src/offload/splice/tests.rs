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
