//! `llmgw mirror serve` for the end-to-end tests: started on a free
//! loopback port (the URL it prints on stdout), stopped when dropped.

use std::ffi::OsStr;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use super::llmgw;

/// Makes `cmd` (an `llmgw`) `mirror serve --listen LISTEN --store STORE`;
/// flags of the serve command may follow.
pub fn serve_args<'c>(cmd: &'c mut Command, listen: &str, store: &OsStr) -> &'c mut Command {
    cmd.args(["mirror", "serve", "--listen", listen, "--store"])
        .arg(store)
}

/// Spawns `cmd` (a `llmgw mirror serve`) with its stdout piped and reads
/// the URL it prints there once it listens.
pub fn spawn_serve(cmd: &mut Command) -> (Child, String) {
    let mut child = cmd.stdout(Stdio::piped()).spawn().unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap_or_else(|| panic!("no URL in {line:?}"))
        .to_string();
    (child, url)
}

/// `llmgw mirror serve` on a free loopback port, stopped when dropped.
pub struct Server {
    child: Child,
    pub url: String,
}

impl Server {
    pub fn start(store: &Path) -> Self {
        Self::start_with(store, Stdio::null(), "warn")
    }

    /// The same, its log (at `RUST_LOG=info`, one line per request) in
    /// the file `log`.
    pub fn start_logged(store: &Path, log: &Path) -> Self {
        let file = std::fs::File::create(log).unwrap();
        Self::start_with(store, Stdio::from(file), "info")
    }

    fn start_with(store: &Path, stderr: Stdio, level: &str) -> Self {
        let mut cmd = llmgw();
        serve_args(&mut cmd, "127.0.0.1:0", store.as_os_str());
        let (child, url) = spawn_serve(cmd.env("RUST_LOG", level).stderr(stderr));
        Self { child, url }
    }

    /// The server's process id (to read its memory in /proc).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// GETs a path with curl: (status, body).
    pub fn get(&self, path: &str) -> (u16, Vec<u8>) {
        let o = std::process::Command::new("curl")
            .args(["-s", "-o", "-", "-w", "\n%{http_code}"])
            .arg(format!("{}{path}", self.url))
            .output()
            .expect("curl (scripts/setup.sh installs it)");
        let mut body = o.stdout;
        let nl = body.iter().rposition(|b| *b == b'\n').unwrap();
        let code = String::from_utf8_lossy(&body[nl + 1..])
            .trim()
            .parse()
            .unwrap();
        body.truncate(nl);
        (code, body)
    }

    /// Polls until `path` answers with `status` (the server looks at the
    /// store every 100 ms), or fails after 10 s.
    pub fn wait_for(&self, path: &str, status: u16) -> Vec<u8> {
        for _ in 0..100 {
            let (code, body) = self.get(path);
            if code == status {
                return body;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        panic!("{path} never answered {status}: last {:?}", self.get(path));
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
