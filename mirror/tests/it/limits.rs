//! Hostile clients against `mirror serve`: each attack is fed and its
//! outcome checked (the answer cache stays bounded, idle and half-sent
//! connections are closed and cannot lock real clients out, slow readers
//! of big files stay bounded in memory).

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use llmgw_mirror::{CACHE_MAX_BYTES as MAX_BYTES, ConnLimits};
use llmgw_shared::manifest::{Manifest, Release};

use crate::common::*;

#[test]
fn the_json_cache_ignores_query_junk_and_stays_bounded() {
    let (_d, store, _) = store_with_main_bundle();
    let srv = serve(&store);
    let state = &srv.running.as_ref().unwrap().state;
    let first = get(srv.addr, "/v1/index");
    assert_eq!(first.status, 200);
    let (len, bytes) = (state.json_cache.len(), state.json_cache.bytes());
    assert_eq!(len, 1);
    // 800 requests that differ only in a parameter no route reads: the
    // same answer, kept once.
    for n in 0..800 {
        let r = get(srv.addr, &format!("/v1/index?nocache={n}"));
        assert_eq!(r.status, 200);
        assert_eq!(r.body, first.body);
    }
    assert_eq!(state.json_cache.len(), len);
    assert_eq!(state.json_cache.bytes(), bytes);
    // Another base URL is another answer (its links differ), but the
    // cache never holds more than its cap.
    for n in 0..300 {
        let host = format!("h{n}.example");
        let r = raw(
            srv.addr,
            "GET",
            b"/v1/index",
            &[("X-Forwarded-Host", host.as_str())],
        );
        assert_eq!(r.status, 200);
        assert!(r.text().contains(&format!("http://{host}/")));
        assert!(state.json_cache.bytes() <= MAX_BYTES);
    }
    assert!(state.json_cache.len() > 1);
}

/// A store holding one release asset of `size` bytes; its download path.
fn store_with_big_asset(size: usize) -> (tempfile::TempDir, std::path::PathBuf, String) {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let body = bytes(11, size);
    let mut m = Manifest::new(vec!["amd64".into()], 1_780_000_000);
    m.releases.push(Release {
        repo: "ggml-org/llama.cpp".parse().unwrap(),
        tag: "b1".into(),
        engine: "llamacpp".into(),
        version: "b1".into(),
        builds: vec![],
        assets: vec![asset("big.zip", &body)],
        signature: None,
    });
    import(&store, &m, &[&body]);
    (
        dir,
        store,
        "/ggml-org/llama.cpp/releases/download/b1/big.zip".into(),
    )
}

fn limits(max: usize, header_ms: u64, idle_ms: u64, send_ms: u64) -> ConnLimits {
    ConnLimits {
        max_connections: max,
        header_timeout: Duration::from_millis(header_ms),
        idle_timeout: Duration::from_millis(idle_ms),
        send_timeout: Duration::from_millis(send_ms),
    }
}

/// Whether the server closed `s` within `within` (EOF or a reset).
fn closed_within(s: &mut TcpStream, within: Duration) -> bool {
    s.set_read_timeout(Some(within)).unwrap();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::TimedOut => {
                return false;
            }
            Err(_) => return true,
        }
    }
}

#[test]
fn idle_half_sent_and_kept_alive_connections_are_closed() {
    let (_d, store, _) = store_with_main_bundle();
    let mut cfg = config(&store);
    cfg.limits = limits(100, 400, 800, 60_000);
    let srv = serve_with(cfg);

    // Connected, nothing sent: the request did not come within 0.4 s.
    let mut idle = TcpStream::connect(srv.addr).unwrap();
    // Half a request head, then nothing (slowloris).
    let mut half = TcpStream::connect(srv.addr).unwrap();
    half.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        .unwrap();
    // A head dripped a byte at a time, each byte well within any per-read
    // timeout, never whole.
    let mut drip = TcpStream::connect(srv.addr).unwrap();
    let t = Instant::now();
    let mut dropped = false;
    for b in b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaa" {
        if drip.write_all(&[*b]).is_err() {
            dropped = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
        if t.elapsed() > Duration::from_secs(3) {
            break;
        }
    }
    assert!(
        dropped || closed_within(&mut drip, Duration::from_secs(3)),
        "a dripped head was kept open"
    );
    assert!(closed_within(&mut idle, Duration::from_secs(3)));
    assert!(closed_within(&mut half, Duration::from_secs(3)));

    // A kept-alive connection: answered, then closed once idle 0.8 s.
    let mut ka = TcpStream::connect(srv.addr).unwrap();
    ka.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    ka.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut buf = [0u8; 1024];
    let n = ka.read(&mut buf).unwrap();
    assert!(buf[..n].starts_with(b"HTTP/1.1 200"));
    // Still open well inside the idle timeout: a second request works.
    std::thread::sleep(Duration::from_millis(200));
    ka.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let n = ka.read(&mut buf).unwrap();
    assert!(buf[..n].starts_with(b"HTTP/1.1 200"));
    assert!(closed_within(&mut ka, Duration::from_secs(3)));
    // Nothing is left open.
    let conns = &srv.running.as_ref().unwrap().conns;
    let t = Instant::now();
    while conns.open() > 0 && t.elapsed() < Duration::from_secs(3) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(conns.open(), 0);
    // And the server still answers.
    assert_eq!(get(srv.addr, "/healthz").status, 200);
}

#[test]
fn idle_connections_cannot_lock_real_clients_out() {
    let (_d, store, _) = store_with_main_bundle();
    let mut cfg = config(&store);
    // Timeouts far longer than the test: only the cap can make room.
    cfg.limits = limits(20, 60_000, 60_000, 60_000);
    let srv = serve_with(cfg);
    let mut held = Vec::new();
    for i in 0..300 {
        let mut s = TcpStream::connect_timeout(&srv.addr, Duration::from_secs(10)).unwrap();
        if i % 2 == 0 {
            let _ = s.write_all(b"GET /v1/index HTTP/1.1\r\nHost: x\r\n");
        }
        held.push(s);
    }
    let conns = &srv.running.as_ref().unwrap().conns;
    assert!(conns.open() <= 20, "{} open", conns.open());
    // A real client gets its answer while the 300 are still connected.
    for _ in 0..5 {
        let r = get(srv.addr, "/api/models/acme/tiny/revision/main");
        assert_eq!(r.status, 200);
        assert_eq!(r.json()["sha"], COMMIT);
    }
    assert!(conns.open() <= 20, "{} open", conns.open());
    drop(held);
}

#[test]
fn a_client_that_stops_reading_is_dropped() {
    let (_d, store, path) = store_with_big_asset(32 << 20);
    let mut cfg = config(&store);
    cfg.limits = limits(100, 10_000, 10_000, 500);
    let srv = serve_with(cfg);
    let mut s = TcpStream::connect(srv.addr).unwrap();
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes())
        .unwrap();
    // Never read while the socket buffers fill and the server waits.
    std::thread::sleep(Duration::from_secs(3));
    let mut got = 0usize;
    let mut buf = vec![0u8; 1 << 20];
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    loop {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => got += n,
        }
    }
    assert!(
        got < 32 << 20,
        "the whole file arrived: the stalled client was not dropped"
    );
}

/// The resident memory of this process (the server runs in it), in bytes.
fn rss() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap();
    let kb: u64 = s
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .unwrap()
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .unwrap();
    kb * 1024
}

#[test]
fn slow_readers_of_a_big_file_stay_bounded_in_memory() {
    const SIZE: usize = 64 << 20;
    const READERS: usize = 16;
    let (_d, store, path) = store_with_big_asset(SIZE);
    let srv = serve(&store);
    let before = rss();
    let readers: Vec<_> = (0..READERS)
        .map(|_| {
            let mut s = TcpStream::connect(srv.addr).unwrap();
            s.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes())
                .unwrap();
            s
        })
        .collect();
    // Each reads 64 KiB every 50 ms for 2 s: far slower than the server
    // could send, so a server that buffered ahead would hold ~1 GiB.
    let mut buf = vec![0u8; 64 << 10];
    let mut peak = before;
    for _ in 0..40 {
        for mut s in &readers {
            let _ = s.read(&mut buf);
        }
        peak = peak.max(rss());
        std::thread::sleep(Duration::from_millis(50));
    }
    let grew = peak.saturating_sub(before);
    assert!(
        grew < 128 << 20,
        "{READERS} slow readers of a {SIZE}-byte file grew the server by {grew} bytes"
    );
    drop(readers);
}
