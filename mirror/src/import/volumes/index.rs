//! What a volume set's manifest says each volume holds, looked up by tar
//! entry name.
//!
//! Invariant: built only from a manifest whose sha256 was checked; an entry
//! name from a volume is only ever looked up here, never made into a path.

use std::collections::HashMap;

use llmgw_shared::manifest::{
    Manifest, Volumes, blob_entry_name, chunk_entry_name, parity_entry_name,
};

/// Which volume a file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Which {
    /// Data volume, 1-based.
    Data(u32),
    /// Parity volume, 0-based index into `parity.shards`.
    Parity(usize),
}

impl Which {
    /// How an operator calls it: "volume 2", "parity volume 1".
    pub fn label(self) -> String {
        match self {
            Which::Data(v) => format!("volume {v}"),
            Which::Parity(j) => format!("parity volume {}", j + 1),
        }
    }
}

/// What an entry of a volume is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
    /// Piece `piece` of placement `placement`.
    Piece {
        /// Index into the manifest's `volumes.placements` (one per blob).
        placement: usize,
        /// Index into that placement's `pieces`.
        piece: usize,
    },
    /// Parity shard `j` (from 0), the only entry of parity volume `j`.
    Parity(usize),
}

pub struct VolumeIndex {
    pub volumes: Volumes,
    /// Per data volume (0-based): its pieces in tar order.
    pub per_volume: Vec<Vec<(usize, usize)>>,
    by_name: HashMap<String, Slot>,
}

impl VolumeIndex {
    /// `None` when the manifest has no volumes.
    pub fn of(m: &Manifest) -> Option<Self> {
        let volumes = m.volumes.clone()?;
        let mut per_volume = vec![Vec::new(); volumes.count as usize];
        let mut by_name = HashMap::new();
        for (p, pl) in volumes.placements.iter().enumerate() {
            for (i, piece) in pl.pieces.iter().enumerate() {
                // validate() checked the volume is within 1..=count.
                if let Some(list) = per_volume.get_mut(piece.volume as usize - 1) {
                    list.push((p, i));
                }
                let name = if pl.pieces.len() == 1 {
                    blob_entry_name(&pl.sha256)
                } else {
                    chunk_entry_name(&pl.sha256, i)
                };
                by_name.insert(
                    name,
                    Slot::Piece {
                        placement: p,
                        piece: i,
                    },
                );
            }
        }
        if let Some(par) = &volumes.parity {
            for j in 0..par.shards.len() {
                by_name.insert(parity_entry_name(j), Slot::Parity(j));
            }
        }
        Some(Self {
            volumes,
            per_volume,
            by_name,
        })
    }

    pub fn slot(&self, entry: &str) -> Option<Slot> {
        self.by_name.get(entry).copied()
    }

    pub fn count(&self) -> u32 {
        self.volumes.count
    }

    pub fn parity_count(&self) -> usize {
        self.volumes.parity.as_ref().map_or(0, |p| p.shards.len())
    }

    /// The volume an entry belongs to.
    pub fn which(&self, slot: Slot) -> Which {
        match slot {
            Slot::Piece { placement, piece } => {
                Which::Data(self.volumes.placements[placement].pieces[piece].volume)
            }
            Slot::Parity(j) => Which::Parity(j),
        }
    }

    /// The entries volume `w` holds, in order.
    pub fn expected(&self, w: Which) -> Vec<Slot> {
        match w {
            Which::Data(v) => self.per_volume[v as usize - 1]
                .iter()
                .map(|&(placement, piece)| Slot::Piece { placement, piece })
                .collect(),
            Which::Parity(j) => vec![Slot::Parity(j)],
        }
    }

    /// (sha256, size) a slot's bytes must have.
    pub fn expect(&self, slot: Slot) -> (&str, u64) {
        match slot {
            Slot::Piece { placement, piece } => {
                let p = &self.volumes.placements[placement].pieces[piece];
                (p.sha256.as_str(), p.size)
            }
            Slot::Parity(j) => {
                let par = self
                    .volumes
                    .parity
                    .as_ref()
                    .expect("parity slot of a parity set");
                (par.shards[j].as_str(), par.shard_size)
            }
        }
    }

    /// The tar entry of a slot.
    pub fn entry_name(&self, slot: Slot) -> String {
        match slot {
            Slot::Piece { placement, piece } => {
                let pl = &self.volumes.placements[placement];
                if pl.pieces.len() == 1 {
                    blob_entry_name(&pl.sha256)
                } else {
                    chunk_entry_name(&pl.sha256, piece)
                }
            }
            Slot::Parity(j) => parity_entry_name(j),
        }
    }
}
