//! The front page (`GET /`) and its file lists, read as an operator reads
//! them: in a real browser (Debian's headless Chromium, `--dump-dom` of the
//! rendered page), and as raw HTTP for the headers. A hostile manifest's
//! free text renders as text, and no script of it runs.

use std::path::Path;
use std::process::Command;

use super::common::*;
use super::pypi_kit::{self, CU13, CU129};
use llmgw_mirror::human_bytes;
use llmgw_shared::manifest::{HfRepo, Manifest, Release, RepoKind};

/// The DOM of `url` after Chromium rendered it and ran its scripts.
fn rendered_dom(url: &str, profile: &Path) -> String {
    let chromium = ["chromium", "chromium-browser"]
        .into_iter()
        .find(|c| {
            Command::new(c)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
        .expect(
            "Debian's chromium is needed for the front page tests: scripts/setup.sh installs it",
        );
    let out = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--virtual-time-budget=2000",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg("--dump-dom")
        .arg(url)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "chromium: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// A store holding the main bundle (a model, a dataset, two releases) and
/// a bundle of two Python environments, one of whose note is hostile.
fn store_of_every_kind(dir: &Path) -> std::path::PathBuf {
    let store = dir.join("store");
    let (m, blobs) = main_bundle();
    let refs: Vec<&[u8]> = blobs.iter().map(|b| b.as_slice()).collect();
    import(&store, &m, &refs);
    let cu13 = pypi_kit::synthetic("x86_64", "2.11.0", 60);
    let cu129 = pypi_kit::synthetic("aarch64", "2.11.0+cu129", 70);
    pypi_kit::hold_with_note(
        &store,
        &[(CU13, "amd64", &cu13), (CU129, "arm64", &cu129)],
        HOSTILE,
    );
    store
}

/// Free text a bundle's maker controls: markup, an attribute break-out and
/// a right-to-left override. Each would mark the page if it ran.
const HOSTILE: &str = "<script>document.body.setAttribute('data-pwned','script')</script>\
\"><img src=x onerror=\"document.body.setAttribute('data-pwned','img')\">\u{202e}exe.txt";

#[test]
fn the_front_page_lists_everything_held_with_its_size_in_a_real_browser() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_of_every_kind(dir.path());
    let server = serve(&store);
    let dom = rendered_dom(&format!("{}/", server.url), &dir.path().join("profile"));
    let ix = server.running.as_ref().unwrap().state.index();
    assert!(dom.contains("ready: 2 bundles"), "{dom}");
    for b in &ix.bundles {
        assert!(dom.contains(&b.id[..12]), "bundle {} not listed", b.id);
        assert!(
            dom.contains(&human_bytes(b.bytes)),
            "size of bundle {} not shown",
            b.id
        );
    }
    for wanted in [
        "ggml-org/llama.cpp",
        "b6123",
        "llmgw/llmgw",
        "v0.1.0",
        "acme/tiny",
        "acme/data",
    ] {
        assert!(dom.contains(wanted), "{wanted} not listed:\n{dom}");
    }
    for r in ix.releases.values() {
        let bytes: u64 = r.assets.values().map(|a| a.blob.size).sum();
        assert!(
            dom.contains(&human_bytes(bytes)),
            "size of {} {} not shown",
            r.repo,
            r.tag
        );
    }
    for env in [CU13, CU129] {
        assert!(
            dom.contains(&format!("{}/pypi/{env}/simple", server.url)),
            "{env}: {dom}"
        );
    }
    assert!(
        dom.contains(&format!("export HF_ENDPOINT={}", server.url)),
        "{dom}"
    );
    assert!(!pwned(&dom), "a script of a manifest ran: {dom}");
}

#[test]
fn hostile_free_text_renders_as_text_and_runs_no_script() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_of_every_kind(dir.path());
    let server = serve(&store);
    let url = format!("{}/-/pypi/{CU13}", server.url);
    let dom = rendered_dom(&url, &dir.path().join("profile"));
    assert!(!pwned(&dom), "a script of a manifest ran:\n{dom}");
    assert!(
        !dom.contains("<img"),
        "an element of a manifest was made:\n{dom}"
    );
    assert!(
        dom.contains("&lt;script&gt;document.body"),
        "the note is not shown as text:\n{dom}"
    );
    assert!(
        dom.contains("[U+202E]exe.txt"),
        "the override acts instead of showing:\n{dom}"
    );
    // The policy forbids any script but the page's own, had escaping failed.
    let reply = get(server.addr, &format!("/-/pypi/{CU13}"));
    let csp = reply.header("content-security-policy").unwrap();
    assert!(
        csp.contains("default-src 'none'") && !csp.contains("unsafe-inline"),
        "{csp}"
    );
}

#[test]
fn pages_answer_head_as_get_and_misses_say_what_is_not_held() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_of_every_kind(dir.path());
    let server = serve(&store);
    for path in [
        "/",
        "/-/models/acme/tiny",
        "/-/datasets/acme/data",
        &format!("/-/pypi/{CU129}"),
        "/-/bundles",
        "/-/releases?page=1",
        "/-/repos",
        "/-/pypi",
    ] {
        let get = raw(server.addr, "GET", path.as_bytes(), &[]);
        let head = raw(server.addr, "HEAD", path.as_bytes(), &[]);
        assert_eq!(get.status, 200, "{path}");
        assert_eq!(head.status, 200, "{path}");
        for h in [
            "content-type",
            "content-length",
            "content-security-policy",
            "x-content-type-options",
        ] {
            assert_eq!(get.header(h), head.header(h), "{path}: {h}");
        }
        assert_eq!(
            get.header("content-length").unwrap(),
            get.body.len().to_string()
        );
        assert!(head.body.is_empty());
    }
    let tiny = get(server.addr, "/-/models/acme/tiny").text();
    for (path, (body, _)) in model_files() {
        assert!(tiny.contains(&path), "{path} not listed");
        assert!(
            tiny.contains(&sha256_of(&body)),
            "{path}'s sha256 not shown"
        );
    }
    let miss = get(server.addr, "/-/models/acme/nothing");
    assert_eq!(miss.status, 404);
    assert!(
        miss.text()
            .contains("no models repository acme/nothing is held")
    );
    let post = raw(server.addr, "POST", b"/", &[]);
    assert_eq!(post.status, 405);
}

/// Whether a hostile script marked the rendered `<body>` (its text may
/// mention the mark: that is the escaped note, shown as it should be).
fn pwned(dom: &str) -> bool {
    let body = dom.find("<body").expect("a rendered page has a body");
    let tag_end = body + dom[body..].find('>').expect("the body tag ends");
    dom[body..tag_end].contains("data-pwned")
}

fn sha256_of(b: &[u8]) -> String {
    llmgw_shared::sha256_hex(b)
}

/// A store of 450 releases (one bundle) beside the main bundle: the front
/// page shows the first few and links to the list, whose pages hold the
/// rest, every release on exactly one page.
#[test]
fn long_lists_page_on_from_the_front_page() {
    let (_keep, store, _) = store_with_main_bundle();
    let mut m = Manifest::new(vec!["amd64".into()], 1_780_000_000);
    let body = b"one small asset".to_vec();
    for i in 0..450 {
        m.releases.push(Release {
            repo: "acme/many".parse().unwrap(),
            tag: format!("t{i:04}"),
            engine: "llamacpp".into(),
            version: format!("{i}"),
            builds: vec![],
            assets: vec![asset("a.zip", &body)],
            signature: None,
        });
    }
    import(&store, &m, &[&body]);
    let server = serve(&store);
    let front = get(server.addr, "/").text();
    assert!(front.contains("<h2>Releases (452)</h2>"), "{front}");
    assert!(front.contains("href=\"/-/releases\">all 452 releases</a>"));
    assert!(front.contains("t0000") && !front.contains("t0100"));
    let mut seen = Vec::new();
    for page in 1..=3 {
        let list = get(server.addr, &format!("/-/releases?page={page}"));
        assert_eq!(list.status, 200);
        let list = list.text();
        assert!(list.contains(&format!("page {page} of 3")), "{list}");
        seen.extend((0..450).filter(|i| list.contains(&format!(">t{i:04}<"))));
    }
    assert_eq!(
        seen,
        (0..450).collect::<Vec<_>>(),
        "every release on one page"
    );
    let past = get(server.addr, "/-/releases?page=9").text();
    assert!(!past.contains(">t0"), "a page past the end lists nothing");
}

/// Every `href` of a page, HTML-unescaped, as a browser reads them.
fn hrefs(html: &str) -> Vec<String> {
    html.split("href=\"")
        .skip(1)
        .filter_map(|rest| rest.split_once('"'))
        .map(|(h, _)| h.replace("&amp;", "&"))
        .collect()
}

/// A file whose name holds `?`, `#`, `%`, `+` and a space, in a held Hub
/// repository: the front page links to the repository's list, the list
/// links to the file, and following each link as a browser does (the
/// fragment stays in the browser) answers 200 with the file's bytes.
#[test]
fn links_to_files_with_url_characters_in_their_names_answer_the_file() {
    let (_keep, store, _) = store_with_main_bundle();
    let odd = ["q?x=1#frag.txt", "dir/a b+c%20.txt"];
    let mut m = Manifest::new(vec!["amd64".into()], 1_780_000_000);
    let bodies: Vec<Vec<u8>> = (0..odd.len()).map(|i| bytes(40 + i as u8, 64)).collect();
    m.repos.push(HfRepo {
        kind: RepoKind::Model,
        id: "acme/odd".parse().unwrap(),
        revision: "main".into(),
        ref_kind: None,
        commit: COMMIT2.into(),
        patterns: vec![],
        files: odd
            .iter()
            .zip(&bodies)
            .map(|(p, b)| hf_file(p, b, false))
            .collect(),
        kernel: None,
    });
    let refs: Vec<&[u8]> = bodies.iter().map(|b| b.as_slice()).collect();
    import(&store, &m, &refs);
    let server = serve(&store);
    let front = get(server.addr, "/").text();
    let list = hrefs(&front)
        .into_iter()
        .find(|h| h.starts_with("/-/models/acme/odd"))
        .unwrap_or_else(|| panic!("the front page links no acme/odd:\n{front}"));
    let page = get(server.addr, &list);
    assert_eq!(page.status, 200, "{list}");
    let page = page.text();
    let links = hrefs(&page);
    for (name, body) in odd.iter().zip(&bodies) {
        let shown = format!(">{}</a>", name.replace('&', "&amp;"));
        let at = page
            .find(&shown)
            .unwrap_or_else(|| panic!("{name} not listed:\n{page}"));
        let link = links
            .iter()
            .find(|h| page[..at].ends_with(&format!("{}\"", h.replace('&', "&amp;"))))
            .unwrap_or_else(|| panic!("no link to {name}:\n{page}"));
        let sent = link.split('#').next().unwrap_or_default();
        let reply = raw(server.addr, "GET", sent.as_bytes(), &[]);
        assert_eq!(reply.status, 200, "{name}: the link {link} answers");
        assert_eq!(
            &reply.body, body,
            "{name}: the link {link} answers other bytes"
        );
    }
}
