//! A private user and network namespace for this process, as `unshare -rn`
//! makes one, with its loopback up — entered in place, without a second
//! process (#47 item 3's cost: `unshare`, `bash`, `ip` and a second start
//! of llmgw cost more than the rest of a small bundle's rehearsal).
//!
//! Invariant: [`enter`] is called while the process has one thread (the
//! kernel refuses a new user namespace to a threaded process); it either
//! changes nothing (`Err(Refused)`: the caller rehearses on the host's
//! loopback and says why) or leaves the process, and every child it
//! starts, where only the namespace's own loopback answers.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// Why no namespace was entered, or why the one entered is unusable.
#[derive(Debug)]
pub enum NoNamespace {
    /// The kernel refused it; nothing changed.
    Refused(String),
    /// Entered, but its identity maps or loopback could not be set: the
    /// process cannot go back to the host's network.
    Broken(String),
}

/// Enters a new user namespace (this user as root in it) and network
/// namespace, and brings its loopback up.
pub fn enter() -> Result<(), NoNamespace> {
    // SAFETY: plain system calls without pointers; the process has one
    // thread here (see the module's invariant).
    let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
    if unsafe { libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNET) } != 0 {
        return Err(NoNamespace::Refused(format!(
            "unshare(CLONE_NEWUSER | CLONE_NEWNET): {}",
            io::Error::last_os_error()
        )));
    }
    let broken = |what: &str, e: io::Error| NoNamespace::Broken(format!("{what}: {e}"));
    // What `unshare -r` writes: no setgroups, then this user as root.
    std::fs::write("/proc/self/setgroups", "deny")
        .map_err(|e| broken("/proc/self/setgroups", e))?;
    std::fs::write("/proc/self/uid_map", format!("0 {uid} 1"))
        .map_err(|e| broken("/proc/self/uid_map", e))?;
    std::fs::write("/proc/self/gid_map", format!("0 {gid} 1"))
        .map_err(|e| broken("/proc/self/gid_map", e))?;
    loopback_up().map_err(|e| broken("bringing up the namespace's loopback (lo)", e))
}

/// `ip link set lo up`: the interface's flags read and written back with
/// `IFF_UP`.
fn loopback_up() -> io::Result<()> {
    // SAFETY: socket(2) returns a new descriptor or -1; it is owned at once.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is a fresh descriptor nothing else owns.
    let sock = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: ifreq is plain data; all zeros is a valid value.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (to, from) in req.ifr_name.iter_mut().zip(b"lo\0") {
        *to = *from as libc::c_char;
    }
    // SAFETY: both ioctls read and write the ifreq given, which outlives
    // them; SIOCGIFFLAGS fills `ifru_flags`, the field read after it.
    unsafe {
        if libc::ioctl(sock.as_raw_fd(), libc::SIOCGIFFLAGS, &mut req) != 0 {
            return Err(io::Error::last_os_error());
        }
        req.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
        if libc::ioctl(sock.as_raw_fd(), libc::SIOCSIFFLAGS, &req) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}
