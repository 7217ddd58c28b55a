//! A hash index that readers search without a lock (read-copy-update): chained buckets of
//! nodes that never change once linked, read under an epoch guard (`crossbeam::epoch`), and
//! changed only by the holder of the lock of the bucket's shard.
//!
//! - **Readers** pin the epoch, load a bucket's head (acquire) and follow `next` pointers
//!   (acquire). No store, no lock: lcores that read the same buckets share their lines.
//! - **Writers** hold the shard's lock ([`RcuIndex::lock`]); a bucket belongs to exactly one
//!   shard, so its list has one writer at a time. An insert links a new node at the head
//!   (its `next` set before the release store that publishes it); a removal stores the
//!   node's successor into its predecessor's link (release) and hands the node to the epoch
//!   collector, which frees it once every reader pinned before the unlink has unpinned. A
//!   reader standing on an unlinked node still follows its `next`, which a removal never
//!   changes, so it sees every node that stayed linked.
//!
//! The only `unsafe` of the splice offload is here: dereferences of epoch pointers and their
//! frees, each with the conditions that make it sound stated beside it.
#![allow(unsafe_code)]

use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use std::sync::{Mutex, MutexGuard};

use crossbeam::epoch::{self, Atomic, Owned};

/// A linked node: never mutated while reachable, except its `next` (by the single writer).
struct Node<V> {
    hash: u64,
    value: V,
    next: Atomic<Node<V>>,
}

/// The index: `buckets.len()` chained buckets (a power of two, at least `shards`), bucket
/// `b` in shard `b % shards`.
///
/// Invariant: every node reachable from a bucket head was linked by a holder of that
/// bucket's shard lock and has not been handed to the collector; a node is in the bucket
/// its hash picks.
pub(super) struct RcuIndex<V> {
    buckets: Box<[Atomic<Node<V>>]>,
    locks: Box<[Mutex<()>]>,
    /// Bits of the hash that pick the bucket start here (the caller's other uses of the
    /// hash take other bits).
    shift: u32,
}

impl<V: Send + Sync> RcuIndex<V> {
    /// An empty index of `buckets` buckets in `shards` shards (both powers of two,
    /// `buckets >= shards`); a hash's bucket is its bits from `shift` up.
    pub(super) fn new(buckets: usize, shards: usize, shift: u32) -> Self {
        assert!(buckets.is_power_of_two() && shards.is_power_of_two() && buckets >= shards);
        RcuIndex {
            buckets: (0..buckets).map(|_| Atomic::null()).collect(),
            locks: (0..shards).map(|_| Mutex::new(())).collect(),
            shift,
        }
    }

    #[inline(always)]
    fn bucket(&self, hash: u64) -> usize {
        (hash >> self.shift) as usize & (self.buckets.len() - 1)
    }

    /// The first `f(value)` that is `Some`, over the values whose hash is `hash`, read
    /// without a lock.
    #[inline]
    pub(super) fn read<R>(&self, hash: u64, mut f: impl FnMut(&V) -> Option<R>) -> Option<R> {
        let guard = epoch::pin();
        let mut cur = self.buckets[self.bucket(hash)].load(Acquire, &guard);
        // SAFETY: `cur` was loaded under `guard`, and a node is freed only by the collector
        // after an unlink and after every guard pinned before it is dropped, so it is valid
        // while `guard` lives; nodes are never mutated except `next` (atomic).
        while let Some(n) = unsafe { cur.as_ref() } {
            if n.hash == hash {
                if let Some(r) = f(&n.value) {
                    return Some(r);
                }
            }
            cur = n.next.load(Acquire, &guard);
        }
        None
    }

    /// The writer of shard `shard`: blocks other writers of its buckets (never readers).
    pub(super) fn lock(&self, shard: usize) -> Writer<'_, V> {
        Writer {
            index: self,
            shard,
            _g: self.locks[shard].lock().unwrap_or_else(|e| e.into_inner()),
        }
    }
}

impl<V> Drop for RcuIndex<V> {
    fn drop(&mut self) {
        // SAFETY: `&mut self`: no reader or writer can reach the nodes any more, so each
        // linked node is freed once here (unlinked ones belong to the collector).
        unsafe {
            let g = epoch::unprotected();
            for b in self.buckets.iter() {
                let mut cur = b.load(Relaxed, g);
                while !cur.is_null() {
                    let next = cur.deref().next.load(Relaxed, g);
                    drop(cur.into_owned());
                    cur = next;
                }
            }
        }
    }
}

/// Exclusive writer of one shard's buckets (holds its lock).
pub(super) struct Writer<'a, V> {
    index: &'a RcuIndex<V>,
    shard: usize,
    _g: MutexGuard<'a, ()>,
}

impl<V: Send + Sync> Writer<'_, V> {
    fn head(&self, hash: u64) -> &Atomic<Node<V>> {
        let b = self.index.bucket(hash);
        assert_eq!(
            b & (self.index.locks.len() - 1),
            self.shard,
            "a bucket is written only under its own shard's lock"
        );
        &self.index.buckets[b]
    }

    /// Whether a value with hash `hash` satisfies `pred`.
    pub(super) fn any(&self, hash: u64, mut pred: impl FnMut(&V) -> bool) -> bool {
        // The bucket is this writer's (checked), so no other writer changes it meanwhile.
        let _ = self.head(hash);
        self.index.read(hash, |v| pred(v).then_some(())).is_some()
    }

    /// Links `value` (hash `hash`) at the head of its bucket; readers see it from the
    /// release store on.
    pub(super) fn insert(&mut self, hash: u64, value: V) {
        let head = self.head(hash);
        let guard = epoch::pin();
        let node = Owned::new(Node {
            hash,
            value,
            next: Atomic::null(),
        });
        node.next.store(head.load(Relaxed, &guard), Relaxed);
        head.store(node, Release);
    }

    /// Unlinks the first value with hash `hash` that satisfies `pred` and hands it to the
    /// collector (dropped once no reader can hold it); returns whether one was found.
    pub(super) fn remove(&mut self, hash: u64, mut pred: impl FnMut(&V) -> bool) -> bool {
        let mut link = self.head(hash);
        let guard = epoch::pin();
        let mut cur = link.load(Acquire, &guard);
        // SAFETY: as in `read`; besides, only this writer unlinks nodes of this bucket, so
        // every node reached here is still linked and not yet handed to the collector.
        while let Some(n) = unsafe { cur.as_ref() } {
            let next = n.next.load(Acquire, &guard);
            if n.hash == hash && pred(&n.value) {
                link.store(next, Release);
                // SAFETY: `cur` is now unreachable from the index for readers pinned from
                // here on; those pinned before keep it alive until they unpin, which is
                // what `defer_destroy` waits for. It is handed over once (the writer holds
                // the lock, and the node is no longer linked for a second removal).
                unsafe { guard.defer_destroy(cur) };
                return true;
            }
            link = &n.next;
            cur = next;
        }
        false
    }
}
