//! The mirror store under damage and interruption.

mod damage;
mod export;
