//! The TLS tests' certificate, made with the openssl CLI as a site's CA
//! makes one: a CA of its own signs a server certificate for 127.0.0.1 and
//! localhost that is not a CA itself. A lone self-signed certificate (CA:TRUE,
//! as `openssl req -x509` makes) would not do: rustls-based clients such as
//! `hf_xet` refuse it as a server's ("CA used as end entity"), as they
//! would on a real site.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The server's certificate then the CA's in `cert.pem` (so the server
/// sends its chain and a client pointed at the same file trusts the CA in
/// it), and its key: (cert.pem, key.pem) in `dir`.
pub fn site_cert(dir: &Path) -> (PathBuf, PathBuf) {
    let at = |name: &str| dir.join(name);
    let (cert, key, ca, ca_key) = (at("cert.pem"), at("key.pem"), at("ca.pem"), at("ca.key"));
    let (csr, leaf, ext) = (at("server.csr"), at("server.pem"), at("server.ext"));
    std::fs::write(
        &ext,
        "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n\
         keyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    let new_key = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    openssl(
        &["req", "-x509", "-days", "1", "-subj", "/CN=llmgw test CA"],
        &new_key,
        &[("-keyout", &ca_key), ("-out", &ca)],
    );
    openssl(
        &["req", "-subj", "/CN=localhost"],
        &new_key,
        &[("-keyout", &key), ("-out", &csr)],
    );
    openssl(
        &["x509", "-req", "-days", "1", "-CAcreateserial"],
        &[],
        &[
            ("-in", &csr),
            ("-CA", &ca),
            ("-CAkey", &ca_key),
            ("-extfile", &ext),
            ("-out", &leaf),
        ],
    );
    let chain = [std::fs::read(&leaf).unwrap(), std::fs::read(&ca).unwrap()].concat();
    std::fs::write(&cert, chain).unwrap();
    (cert, key)
}

/// Runs `openssl` with `args`, then `more`, then each (flag, path).
fn openssl(args: &[&str], more: &[&str], paths: &[(&str, &PathBuf)]) {
    let mut c = Command::new("openssl");
    c.args(args).args(more);
    for (flag, path) in paths {
        c.arg(flag).arg(OsStr::new(path.as_os_str()));
    }
    let out = c.output().unwrap();
    assert!(
        out.status.success(),
        "{c:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}
