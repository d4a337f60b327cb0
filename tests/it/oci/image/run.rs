//! Running the image in the test's containerd: a container started with
//! `ctr run -d` and removed when dropped, and polling the server inside it.

use std::process::Command;

use super::bundle_kit::stdout;
use super::clients;

#[track_caller]
fn ok(o: &std::process::Output) {
    assert!(
        o.status.success(),
        "exit {:?}\n{}{}",
        o.status.code(),
        stdout(o),
        String::from_utf8_lossy(&o.stderr)
    );
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

pub fn get(base: &str, path: &str) -> (u16, Vec<u8>) {
    let a = clients::http(base, "GET", path, &[]);
    (a.status, a.body)
}

/// Polls `path` until it answers (the containerized server is starting).
pub fn wait_for(base: &str, path: &str) -> (u16, Vec<u8>) {
    for _ in 0..100 {
        let o = Command::new("curl")
            .args(["-s", "-o", "/dev/null", "-w", "%{http_code}"])
            .arg(format!("{base}{path}"))
            .output()
            .unwrap();
        if stdout(&o) != "000" {
            return get(base, path);
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    panic!("{base}{path} never answered");
}

/// A container run by `ctr run -d`, killed and removed when dropped (its
/// shim outlives containerd otherwise).
pub struct Task<'a> {
    ctd: &'a clients::Containerd,
    id: String,
    log: std::path::PathBuf,
}

impl<'a> Task<'a> {
    /// `ctr run -d FLAGS… ID ARGS…`, the task's output into the file `log`.
    pub fn run(
        ctd: &'a clients::Containerd,
        log: &std::path::Path,
        flags: &[&str],
        args: &[&str],
    ) -> Self {
        // Unique in this process too: every test of the one binary shares
        // its pid, and containerd's ids are per namespace.
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let id = format!("llmgw-image-{}-{n}", std::process::id());
        let uri = format!("file://{}", log.display());
        let mut all = vec!["run", "-d", "--log-uri", &uri];
        all.extend_from_slice(flags);
        all.push(&id);
        all.extend_from_slice(args);
        let o = ctd.ctr(&all);
        let task = Task {
            ctd,
            id: id.clone(),
            log: log.to_path_buf(),
        };
        ok(&o);
        task
    }

    pub fn pid(&self) -> u32 {
        let ls = stdout(&self.ctd.ctr(&["tasks", "ls"]));
        ls.lines()
            .find(|l| l.split_whitespace().next() == Some(self.id.as_str()))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("{} not in: {ls}", self.id))
    }

    /// What the task wrote so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Task<'_> {
    fn drop(&mut self) {
        let _ = self.ctd.ctr(&["tasks", "kill", "-s", "SIGKILL", &self.id]);
        for _ in 0..50 {
            if self
                .ctd
                .ctr(&["tasks", "delete", &self.id])
                .status
                .success()
            {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        let _ = self.ctd.ctr(&["containers", "delete", &self.id]);
    }
}
