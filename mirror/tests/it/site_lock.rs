//! A site's own `uv.lock` as the mirror serves it (issue #32 item 4): at
//! `/pypi/{env}/uv.lock`, every file and index pointing at the mirror, the
//! lock's hashes unchanged, and only the files the environment holds; the
//! project's `pyproject.toml` beside it; `pylock.toml` of that environment
//! a 404 naming the route that answers.

use crate::common::*;
use crate::pypi_kit::*;

#[test]
fn a_site_uv_lock_is_served_pointing_at_the_mirror_with_its_hashes() {
    let (_d, store, _) = store_with_main_bundle();
    let files = synthetic("x86_64", "2.11.0", 61);
    hold_site_uv_lock(&store, "site-amd64", &files);
    let s = serve(&store);
    let r = get(s.addr, "/pypi/site-amd64/uv.lock");
    assert_eq!(r.status, 200, "{}", r.text());
    let lock: toml::Table = toml::from_str(&r.text()).unwrap();
    assert_eq!(lock["version"].as_integer(), Some(1));
    let packages = lock["package"].as_array().unwrap();
    assert_eq!(packages.len(), files.len() + 1);
    assert_eq!(packages[0]["source"]["virtual"].as_str(), Some("."));
    for (p, f) in packages[1..].iter().zip(files.iter()) {
        assert_eq!(
            p["source"]["registry"].as_str().unwrap(),
            format!("{}/pypi/site-amd64/simple", s.url)
        );
        let w = &p["wheels"].as_array().unwrap()[0];
        assert_eq!(
            w["url"].as_str().unwrap(),
            format!(
                "{}/pypi/site-amd64/files/{}",
                s.url,
                f.file.filename.replace('+', "%2B")
            )
        );
        assert_eq!(
            w["hash"].as_str().unwrap(),
            format!("sha256:{}", f.file.sha256)
        );
    }
    assert!(!r.text().contains("pypi.example"), "{}", r.text());

    let r = get(s.addr, "/pypi/site-amd64/pyproject.toml");
    assert_eq!(r.status, 200);
    assert!(r.text().contains("name = \"site-app\""));
    let r = get(s.addr, "/pypi/site-amd64/pylock.toml");
    assert_eq!(r.status, 404);
    assert!(
        r.text().contains("/pypi/site-amd64/uv.lock"),
        "{}",
        r.text()
    );
}
