//! The attacks of the hostile probe (issue #18), one test each, fed to the
//! real binary: what it must refuse, what it must never print, what it must
//! never hold in memory, and what nodes must never be served. Grouped by
//! kind under `tests/hostile/`; `hostile::common` sets up stores and a
//! server. Add new attacks beside their kind.

mod bundle_kit;

mod hostile {
    pub mod common;

    mod bounded;
    mod order;
    mod output;
    mod shadowing;
    mod signature;
    mod store;
}
