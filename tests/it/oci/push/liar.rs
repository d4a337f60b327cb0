//! Registries that lie or refuse, played by a small HTTP server: a 202
//! with no `Location`, a digest other than the one pushed, an upload
//! `Location` on another host (which must get no credential); a 401, a 413,
//! a 403 to the upload or to the tag. Each push is refused by name, and no
//! tag is set after a lie.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use super::{Held, stderr};

/// What the liar answers.
#[derive(Clone, Copy)]
enum Lie {
    /// 202 to an upload's POST, with no Location.
    NoLocation,
    /// 201 to every PUT, with another digest.
    WrongDigest,
    /// Basic auth wanted; the upload goes to `localhost`, another host.
    OtherHost(u16),
    /// 403 DENIED to an upload's POST, as a project without push rights.
    Denied,
    /// 401 to everything, and no credential to answer with.
    Unauthorized,
    /// 413 to a blob's PUT, as a registry with a size limit.
    TooLarge,
    /// Every blob and digest taken, 403 DENIED to a tag's PUT, as a
    /// registry whose tags are immutable.
    TagDenied,
}

/// Each request seen: method, path, whether it carried Authorization.
type Seen = Arc<Mutex<Vec<(String, String, bool)>>>;

fn serve(lie: Option<Lie>) -> (u16, Seen) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let seen: Seen = Arc::default();
    let s = seen.clone();
    std::thread::spawn(move || {
        for c in l.incoming().flatten() {
            let s = s.clone();
            std::thread::spawn(move || answer(c, lie, &s));
        }
    });
    (port, seen)
}

fn answer(c: TcpStream, lie: Option<Lie>, seen: &Seen) {
    let mut r = BufReader::new(c.try_clone().unwrap());
    let mut line = String::new();
    if r.read_line(&mut line).is_err() {
        return;
    }
    let mut parts = line.split_whitespace();
    let (method, path) = (
        parts.next().unwrap_or("").to_string(),
        parts.next().unwrap_or("").to_string(),
    );
    let (mut length, mut auth) = (0usize, false);
    loop {
        let mut h = String::new();
        if r.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" {
            break;
        }
        let lower = h.to_ascii_lowercase();
        if let Some(v) = lower.strip_prefix("content-length:") {
            length = v.trim().parse().unwrap_or(0);
        }
        auth |= lower.starts_with("authorization:");
    }
    let mut body = vec![0u8; length];
    let _ = r.read_exact(&mut body);
    seen.lock()
        .unwrap()
        .push((method.clone(), path.clone(), auth));
    let zeros = format!("sha256:{}", "0".repeat(64));
    let head = match (lie, method.as_str()) {
        (Some(Lie::OtherHost(_)), _) if !auth => {
            "401 Unauthorized\r\nWWW-Authenticate: Basic realm=\"site\"".to_string()
        }
        (Some(Lie::Unauthorized), _) => {
            "401 Unauthorized\r\nWWW-Authenticate: Basic realm=\"site\"".to_string()
        }
        (Some(Lie::TooLarge), "PUT") if path.contains("/upload/") => "413 Payload Too Large".into(),
        (Some(Lie::TagDenied), "PUT")
            if path.contains("/manifests/") && !path.contains("sha256:") =>
        {
            "403 Forbidden".into()
        }
        (_, "HEAD") => "404 Not Found".into(),
        (Some(Lie::NoLocation), "POST") => "202 Accepted".into(),
        (Some(Lie::Denied), "POST") => "403 Forbidden".into(),
        (Some(Lie::OtherHost(other)), "POST") => {
            format!("202 Accepted\r\nLocation: http://localhost:{other}/upload/1")
        }
        (_, "POST") => "202 Accepted\r\nLocation: /v2/upload/1".into(),
        (Some(Lie::WrongDigest), "PUT") => format!("201 Created\r\nDocker-Content-Digest: {zeros}"),
        (_, "PUT") => "201 Created".into(),
        _ => "404 Not Found".into(),
    };
    let body = match (head.get(..3), lie) {
        (Some("403"), Some(Lie::TagDenied)) => {
            r#"{"errors":[{"code":"DENIED","message":"tag is immutable"}]}"#
        }
        (Some("403"), _) => r#"{"errors":[{"code":"DENIED","message":"no push to project site"}]}"#,
        (Some("401"), _) => {
            r#"{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}"#
        }
        (Some("413"), _) => {
            r#"{"errors":[{"code":"SIZE_INVALID","message":"blob over the limit"}]}"#
        }
        _ => "",
    };
    let mut c = c;
    let _ = c.write_all(
        format!(
            "HTTP/1.1 {head}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .as_bytes(),
    );
}

fn push_to(h: &Held, port: u16) -> (std::process::Output, String) {
    let to = format!("127.0.0.1:{port}");
    let o = h.push(&["--to", &to, "--insecure-registry", "--image", "acme/app"]);
    let e = stderr(&o);
    (o, e)
}

#[test]
fn a_lying_registry_is_refused_by_name_and_nothing_is_tagged() {
    let h = Held::new();
    let (port, seen) = serve(Some(Lie::NoLocation));
    let (o, e) = push_to(&h, port);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(
        e.contains("cannot be trusted") && e.contains("without a Location"),
        "{e}"
    );

    let (port, seen2) = serve(Some(Lie::WrongDigest));
    let (o, e) = push_to(&h, port);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(
        e.contains("cannot be trusted") && e.contains(&"0".repeat(64)),
        "{e}"
    );
    for s in [seen, seen2] {
        let tagged = s
            .lock()
            .unwrap()
            .iter()
            .any(|(m, p, _)| m == "PUT" && p.contains("/manifests/"));
        assert!(!tagged, "a manifest was put after a lie");
    }
}

#[test]
fn the_first_refusal_is_named_with_the_registry_s_words() {
    let h = Held::new();
    let (port, _) = serve(Some(Lie::Denied));
    let (o, e) = push_to(&h, port);
    assert_eq!(o.status.code(), Some(1), "{e}");
    for said in [
        "refused",
        "403",
        "DENIED: no push to project site",
        "grant push",
    ] {
        assert!(e.contains(said), "{said}: {e}");
    }
}

/// A 401 with nothing to answer it (named, with how to log in), a 413 and
/// a denied tag (named with the registry's status and words): exit 1.
#[test]
fn a_missing_login_a_size_limit_and_a_denied_tag_are_named() {
    let h = Held::new();
    for (lie, said) in [
        (
            Lie::Unauthorized,
            &["asks for a user and password", "docker login"][..],
        ),
        (
            Lie::TooLarge,
            &["413", "SIZE_INVALID: blob over the limit"][..],
        ),
        (Lie::TagDenied, &["403", "DENIED: tag is immutable"][..]),
    ] {
        let (port, _) = serve(Some(lie));
        let (o, e) = push_to(&h, port);
        assert_eq!(o.status.code(), Some(1), "{e}");
        for s in said {
            assert!(e.contains(s), "{s}: {e}");
        }
    }
}

#[test]
fn credentials_never_follow_an_upload_to_another_host() {
    let h = Held::new();
    let (other, other_seen) = serve(None);
    let (port, seen) = serve(Some(Lie::OtherHost(other)));
    let auth = h.path("no-auth.json");
    let basic = base64_user_pass("site", "s3cret");
    std::fs::write(
        &auth,
        format!(r#"{{"auths":{{"127.0.0.1:{port}":{{"auth":"{basic}"}}}}}}"#),
    )
    .unwrap();
    let (o, e) = push_to(&h, port);
    assert!(o.status.success(), "{e}");
    assert!(
        seen.lock().unwrap().iter().any(|(_, _, a)| *a),
        "the registry got its credential"
    );
    let other = other_seen.lock().unwrap();
    assert!(!other.is_empty(), "the uploads went to the other host");
    assert!(
        other.iter().all(|(_, _, a)| !a),
        "a credential went to another host: {other:?}"
    );
}

fn base64_user_pass(user: &str, pass: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pass}"))
}
