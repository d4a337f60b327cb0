//! Which whole blobs a replica's bounded read-through cache keeps
//! ([`super::s3_cache`]): the bookkeeping only, no I/O, so the policy is
//! tested on its own.
//!
//! Invariant: the bytes counted (`used`) are the sizes of the blobs held
//! plus those of the fills under way, and a fill is admitted only when
//! that stays within the bound — room is made by evicting the least
//! recently used blobs held (a hit is a use). A blob chosen for eviction is
//! neither held nor admitted again until its file is gone
//! ([`Lru::evicted`]), so a new copy is never unlinked in its place. A
//! blob larger than the whole bound is never admitted.

use std::collections::{HashMap, HashSet};

use llmgw_shared::Sha256;

/// What [`Lru::admit`] decided for a blob that missed.
#[derive(Debug, PartialEq, Eq)]
pub enum Admit {
    /// Fill it, after unlinking these (least recently used first); then
    /// call [`Lru::evicted`] with them, and [`Lru::filled`] or
    /// [`Lru::failed`] for the blob.
    Fill { victims: Vec<Sha256> },
    /// A fill of it, or the unlinking of its old copy, is under way.
    Busy,
    /// Larger than the whole bound: served from the bucket, never cached.
    /// `first` is true the first time this blob is refused (to log once).
    TooLarge { first: bool },
    /// The fills under way leave no room now; served from the bucket.
    NoRoom,
}

/// The cache's contents by recency, and the room they take.
#[derive(Debug, Default)]
pub struct Lru {
    /// At most this many bytes; none: no bound.
    limit: Option<u64>,
    /// Blobs held whole: size and the tick of their last use.
    held: HashMap<Sha256, (u64, u64)>,
    /// Fills under way, with the room reserved for each.
    filling: HashMap<Sha256, u64>,
    /// Chosen for eviction, files not yet unlinked.
    evicting: HashSet<Sha256>,
    /// Blobs refused as larger than the bound, already logged.
    refused: HashSet<Sha256>,
    used: u64,
    tick: u64,
}

impl Lru {
    pub fn new(limit: Option<u64>) -> Self {
        Self {
            limit,
            ..Self::default()
        }
    }

    /// Bytes of blobs held and of fills under way.
    pub fn used(&self) -> u64 {
        self.used
    }

    /// Whether the blob is held whole.
    #[cfg(test)]
    pub fn holds(&self, sha256: &Sha256) -> bool {
        self.held.contains_key(sha256)
    }

    /// A blob found in the cache at start; call oldest first, so the order
    /// of calls is the order of use. Answers the blobs to evict to stay
    /// within the bound (the bound may have been lowered since), which are
    /// then handled like [`Admit::Fill`]'s victims.
    pub fn found(&mut self, sha256: Sha256, size: u64) -> Vec<Sha256> {
        self.tick += 1;
        if let Some((old, _)) = self.held.insert(sha256, (size, self.tick)) {
            self.used -= old;
        }
        self.used += size;
        let over = self.limit.map_or(0, |l| self.used.saturating_sub(l));
        self.choose(over)
    }

    /// A hit: the blob was used now.
    pub fn touch(&mut self, sha256: &Sha256) {
        self.tick += 1;
        if let Some((_, t)) = self.held.get_mut(sha256) {
            *t = self.tick;
        }
    }

    /// A GET of a blob that is not in the cache: whether to fill it, and
    /// what to evict first. A blob counted as held that missed is not
    /// there whole (removed by hand): its entry is dropped first.
    pub fn admit(&mut self, sha256: &Sha256, size: u64) -> Admit {
        if self.filling.contains_key(sha256) || self.evicting.contains(sha256) {
            return Admit::Busy;
        }
        if let Some((old, _)) = self.held.remove(sha256) {
            self.used -= old;
        }
        let Some(limit) = self.limit else {
            return self.reserve(sha256, size, Vec::new());
        };
        if size > limit {
            return Admit::TooLarge {
                first: self.refused.insert(sha256.clone()),
            };
        }
        let need = (self.used + size).saturating_sub(limit);
        let evictable: u64 = self.held.values().map(|(s, _)| s).sum();
        if need > evictable {
            return Admit::NoRoom;
        }
        let victims = self.choose(need);
        self.reserve(sha256, size, victims)
    }

    /// The victims' files are gone: they may be filled again.
    pub fn evicted(&mut self, victims: &[Sha256]) {
        for v in victims {
            self.evicting.remove(v);
        }
    }

    /// The fill of this blob completed: it is held, used now.
    pub fn filled(&mut self, sha256: &Sha256) {
        if let Some(size) = self.filling.remove(sha256) {
            self.tick += 1;
            self.held.insert(sha256.clone(), (size, self.tick));
        }
    }

    /// The fill of this blob failed: its room is given back.
    pub fn failed(&mut self, sha256: &Sha256) {
        if let Some(size) = self.filling.remove(sha256) {
            self.used -= size;
        }
    }

    fn reserve(&mut self, sha256: &Sha256, size: u64, victims: Vec<Sha256>) -> Admit {
        self.filling.insert(sha256.clone(), size);
        self.used += size;
        Admit::Fill { victims }
    }

    /// Takes the least recently used blobs held out of the count until at
    /// least `need` bytes are freed, marking them as being evicted.
    fn choose(&mut self, need: u64) -> Vec<Sha256> {
        let mut by_age: Vec<(u64, Sha256, u64)> = self
            .held
            .iter()
            .map(|(s, (size, t))| (*t, s.clone(), *size))
            .collect();
        by_age.sort_unstable_by_key(|(t, _, _)| *t);
        let mut freed = 0;
        let mut victims = Vec::new();
        for (_, sha, size) in by_age {
            if freed >= need {
                break;
            }
            self.held.remove(&sha);
            self.used -= size;
            freed += size;
            self.evicting.insert(sha.clone());
            victims.push(sha);
        }
        victims
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sha(n: u8) -> Sha256 {
        Sha256::of(&[n])
    }

    fn fill(lru: &mut Lru, n: u8, size: u64) -> Vec<Sha256> {
        let Admit::Fill { victims } = lru.admit(&sha(n), size) else {
            panic!("blob {n} was not admitted");
        };
        lru.evicted(&victims);
        lru.filled(&sha(n));
        victims
    }

    #[test]
    fn the_least_recently_used_goes_first_and_a_hit_counts_as_a_use() {
        let mut lru = Lru::new(Some(100));
        assert!(fill(&mut lru, 1, 40).is_empty());
        assert!(fill(&mut lru, 2, 40).is_empty());
        lru.touch(&sha(1));
        // 3 needs room: 2 was used longest ago.
        assert_eq!(fill(&mut lru, 3, 40), vec![sha(2)]);
        assert!(lru.holds(&sha(1)) && lru.holds(&sha(3)) && !lru.holds(&sha(2)));
        assert_eq!(lru.used(), 80);
        // One that needs two out takes the two oldest.
        assert_eq!(fill(&mut lru, 4, 90), vec![sha(1), sha(3)]);
        assert_eq!(lru.used(), 90);
    }

    #[test]
    fn too_large_busy_and_no_room() {
        let mut lru = Lru::new(Some(100));
        assert_eq!(lru.admit(&sha(9), 101), Admit::TooLarge { first: true });
        assert_eq!(lru.admit(&sha(9), 101), Admit::TooLarge { first: false });
        assert_eq!(
            lru.admit(&sha(1), 60),
            Admit::Fill {
                victims: Vec::new()
            }
        );
        assert_eq!(lru.admit(&sha(1), 60), Admit::Busy);
        // The fill under way cannot be evicted.
        assert_eq!(lru.admit(&sha(2), 60), Admit::NoRoom);
        lru.failed(&sha(1));
        assert_eq!(lru.used(), 0);
        // Chosen for eviction and not yet unlinked: not filled again.
        fill(&mut lru, 1, 60);
        let Admit::Fill { victims } = lru.admit(&sha(2), 60) else {
            panic!()
        };
        assert_eq!(victims, vec![sha(1)]);
        assert_eq!(lru.admit(&sha(1), 60), Admit::Busy);
        lru.evicted(&victims);
        lru.filled(&sha(2));
        assert_eq!(
            lru.admit(&sha(1), 60),
            Admit::Fill {
                victims: vec![sha(2)]
            }
        );
    }

    #[test]
    fn found_at_start_oldest_first_and_trimmed_to_a_lowered_bound() {
        let mut lru = Lru::new(Some(100));
        assert!(lru.found(sha(1), 50).is_empty());
        assert!(lru.found(sha(2), 50).is_empty());
        assert_eq!(lru.found(sha(3), 30), vec![sha(1)]);
        assert_eq!(lru.used(), 80);
        let mut unbounded = Lru::new(None);
        assert!(unbounded.found(sha(1), u64::MAX / 2).is_empty());
        assert_eq!(
            unbounded.admit(&sha(2), 10),
            Admit::Fill {
                victims: Vec::new()
            }
        );
    }
}
