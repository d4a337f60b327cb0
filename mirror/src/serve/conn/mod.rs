//! Connection limits: how many connections `mirror serve` keeps open and
//! how long one may sit without progress.
//!
//! Invariant: at most [`ConnLimits::max_connections`] accepted connections
//! are open at once, and none stays open while it stalls: a request (head
//! and form) must arrive within `header_timeout` of its first byte (of
//! accept, for a new connection); a kept-alive connection with no new
//! request is closed after `idle_timeout`; a client that takes no byte of
//! its answer for `send_timeout` is dropped. At the cap, the connection
//! quiet longest (idle or half-sent, never one being answered) is closed to
//! make room, so idle and half-sent connections can never lock real clients
//! out; only when every connection is busy do new ones wait in the listen
//! backlog. Each of these events is logged.
//!
//! The limits are enforced on the TCP stream itself (under TLS), where every
//! byte in and out is seen: [`Tracked`](stream::Tracked) records progress, a reaper task
//! checks the clocks and closes a stalled stream by failing its next read or
//! write, which ends the connection in hyper.

mod conns;
mod stream;

pub use conns::{ConnLimits, Conns, default_max_connections, spawn_reaper};
pub use stream::{ConnAddr, Listener};
