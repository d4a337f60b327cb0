//! The clients the OCI tests drive: curl for raw requests, containerd (a
//! daemon of the test's own, in its temporary folder) and the Helm SDK's
//! Python. A missing one fails the test saying what to install.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Fails (never skips) when `tool` is not on PATH.
pub fn need(tool: &str, install: &str) {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        found,
        "{tool} is not installed: run `{install}` (scripts/setup.sh does)"
    );
}

/// The venv's Python with `helm-python-sdk` (scripts/setup.sh's `.venv`,
/// or `LLMGW_VENV`).
pub fn venv_python() -> PathBuf {
    let dir = std::env::var_os("LLMGW_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv"));
    let p = dir.join("bin/python");
    let ok = Command::new(&p)
        .args(["-c", "import helm_python"])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "{} cannot import helm_python: run scripts/setup.sh (it installs helm-python-sdk==0.2.2), \
         or set LLMGW_VENV to a venv that has it",
        p.display()
    );
    p
}

/// An HTTP answer.
pub struct Answer {
    pub status: u16,
    /// Lower-case `name: value` lines.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Answer {
    pub fn header(&self, name: &str) -> String {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    }

    fn error(&self) -> serde_json::Value {
        serde_json::from_slice::<serde_json::Value>(&self.body)
            .map(|v| v["errors"][0].clone())
            .unwrap_or_default()
    }

    /// The first OCI error's code.
    pub fn code(&self) -> String {
        self.error()["code"].as_str().unwrap_or("").to_string()
    }

    pub fn message(&self) -> String {
        self.error()["message"].as_str().unwrap_or("").to_string()
    }
}

/// One request with curl, the path sent as written (`--path-as-is`).
pub fn http(base: &str, method: &str, path: &str, headers: &[String]) -> Answer {
    need("curl", "apt-get install -y curl");
    let dir = tempfile::tempdir().unwrap();
    let (h, b) = (dir.path().join("h"), dir.path().join("b"));
    let mut c = Command::new("curl");
    c.args(["-s", "--path-as-is", "-D"])
        .arg(&h)
        .arg("-o")
        .arg(&b);
    if method == "HEAD" {
        c.arg("-I");
    } else {
        c.args(["-X", method]);
    }
    for line in headers {
        c.args(["-H", line]);
    }
    let o = c.arg(format!("{base}{path}")).output().unwrap();
    assert!(o.status.success(), "curl {method} {path}: {o:?}");
    let text = std::fs::read_to_string(&h).unwrap();
    let mut lines = text.lines();
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .unwrap();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    Answer {
        status,
        headers,
        body: std::fs::read(&b).unwrap_or_default(),
    }
}

/// A containerd of the test's own (config, root, state and socket in
/// `dir`), stopped when dropped.
pub struct Containerd {
    child: Child,
    socket: PathBuf,
}

/// Starts containerd as root with its own config; waits for its socket.
pub fn containerd(dir: &Path) -> Containerd {
    need("containerd", "apt-get install -y containerd");
    need("ctr", "apt-get install -y containerd");
    assert!(
        is_root(),
        "containerd needs root: run this test as root (CI does)"
    );
    let base = dir.join("ctd");
    std::fs::create_dir_all(&base).unwrap();
    let socket = base.join("c.sock");
    let config = base.join("config.toml");
    std::fs::write(
        &config,
        format!(
            "version = 2\nroot = \"{r}\"\nstate = \"{s}\"\n\
             disabled_plugins = [\"io.containerd.grpc.v1.cri\"]\n\
             [grpc]\n  address = \"{sock}\"\n[ttrpc]\n  address = \"{sock}.ttrpc\"\n",
            r = base.join("root").display(),
            s = base.join("state").display(),
            sock = socket.display(),
        ),
    )
    .unwrap();
    let log = std::fs::File::create(base.join("containerd.log")).unwrap();
    let child = Command::new("containerd")
        .arg("--config")
        .arg(&config)
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap();
    let c = Containerd { child, socket };
    let start = Instant::now();
    while !c.ctr(&["version"]).status.success() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "containerd did not start: {}",
            std::fs::read_to_string(base.join("containerd.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    c
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

impl Containerd {
    /// `ctr --address SOCKET ARGS…`.
    pub fn ctr(&self, args: &[&str]) -> Output {
        Command::new("ctr")
            .arg("--address")
            .arg(&self.socket)
            .args(args)
            .output()
            .unwrap()
    }
}

impl Drop for Containerd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
