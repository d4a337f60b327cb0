//! `bundle create --want want.json`: a mirror's miss log (`llmgw mirror
//! misses --out`) turned into what the bundle carries — each Hub file at
//! its revision, each repository whose listing was asked for, each GGUF
//! llama.cpp asked for by quantization tag, each release
//! asset of an engine, each project an environment lacked (added to that
//! environment's requirements and resolved again).
//!
//! Invariant: a want never fails the run. What a want names is planned only
//! where its upstream has it; every want that cannot be met — a path no
//! route plans from, a name its upstream does not have, an environment the
//! request does not carry — becomes a gap in the manifest naming the path
//! and why, so the operator reads which wants were not satisfied. Planned
//! wants are checked against their publishers' digests like every file.
//!
//! This module reads and sorts the list (no network); planning the wants
//! against their upstreams is `create::wants`.

mod parse;
mod sourced;

use std::path::Path;

use llmgw_shared::{WantList, shown};

use crate::error::{CreateError, ListError};

pub use parse::{Want, holds_quant, quant_globs};

/// A want-list read and sorted into what can be planned and what cannot.
#[derive(Debug, Clone, Default)]
pub struct Wants {
    /// Each plannable want, with the path it was read from (for its gap).
    pub wants: Vec<(Want, String)>,
    /// `(what, why)` of each miss no route of `bundle create` plans from.
    pub unplannable: Vec<(String, String)>,
}

impl Wants {
    /// Reads `path` (bounded) and sorts its misses; a file that is not a
    /// want-list is a usage error naming it.
    pub fn load(path: &Path) -> Result<Self, CreateError> {
        let bytes = read_bounded(path)?;
        let list = WantList::from_json_bytes(&bytes).map_err(|error| ListError::NotAWantList {
            path: path.to_path_buf(),
            error,
        })?;
        Ok(Self::of(&list))
    }

    /// Sorts the misses of `list`, each distinct path once.
    pub fn of(list: &WantList) -> Self {
        let mut out = Self::default();
        let mut seen = std::collections::HashSet::new();
        for m in &list.misses {
            if !seen.insert(m.path.as_str()) {
                continue;
            }
            let want = match &m.source {
                Some(source) => sourced::want_of_sourced(&m.path, source),
                None => parse::want_of(&m.route, &m.path),
            };
            match want {
                Ok(w) => out.wants.push((w, m.path.clone())),
                Err(why) => out.unplannable.push((what(&m.path), why)),
            }
        }
        out
    }

    /// Whether the list asks for anything at all.
    pub fn is_empty(&self) -> bool {
        self.wants.is_empty() && self.unplannable.is_empty()
    }
}

/// How a want is named in its gap: the path the node asked for, escaped.
pub fn what(path: &str) -> String {
    format!("wanted {}", shown(path))
}

fn read_bounded(path: &Path) -> Result<Vec<u8>, CreateError> {
    use std::io::Read;
    let f = std::fs::File::open(path).map_err(|e| CreateError::io(path, e))?;
    let mut bytes = Vec::new();
    f.take(llmgw_shared::MAX_WANT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| CreateError::io(path, e))?;
    if bytes.len() as u64 > llmgw_shared::MAX_WANT_BYTES {
        return Err(ListError::WantTooLarge {
            path: path.to_path_buf(),
            max: llmgw_shared::MAX_WANT_BYTES,
        }
        .into());
    }
    Ok(bytes)
}
