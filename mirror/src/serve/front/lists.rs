//! The file lists behind the front page: one page per Hub repository (at a
//! revision) and per Python environment, paginated so that a dataset of
//! 100 000 files is a thousand short pages, not one huge one.
//!
//! Invariant: a list shows the files the index holds for that name and
//! revision, with links to the routes that serve them, every string
//! escaped, and every path segment of every link percent-encoded
//! ([`llmgw_shared::url`]), so a file named `q?x=1#frag.txt` links to
//! itself and not to a query or a fragment.

use super::Outcome;
use super::html::{esc, table};
use super::view::View;
use crate::serve::index::HubRepo;
use crate::serve::index::pypi::PyEnv;
use crate::store::inspect::human_bytes;
use llmgw_shared::url::{encode_path, encode_segment};

/// A repository's files at `rev` (else its default revision).
pub(super) fn repo_files(repo: &HubRepo, plural: &str, rev: Option<&str>, view: View) -> Outcome {
    let snapshot = match rev {
        Some(rev) => repo.resolve(rev),
        None => repo.default_snapshot(),
    };
    let Some(snap) = snapshot else {
        return Outcome::NotFound(format!(
            "{} holds no revision {}",
            repo.id,
            rev.unwrap_or("(default)")
        ));
    };
    let prefix = repo.kind.url_prefix();
    let files: Vec<_> = snap.files().collect();
    let rows: Vec<Vec<String>> = view
        .window(files.iter())
        .map(|f| {
            let url = format!(
                "/{prefix}{}/resolve/{}/{}",
                encode_path(&repo.id),
                encode_segment(&snap.commit),
                encode_path(f.path)
            );
            vec![
                format!("<a href=\"{}\">{}</a>", esc(&url), esc(f.path)),
                esc(&human_bytes(f.blob.size)),
                format!("<code>{}</code>", esc(&f.blob.sha256)),
            ]
        })
        .collect();
    let names: Vec<String> = repo
        .refs
        .iter()
        .filter(|(_, c)| **c == snap.commit)
        .map(|(n, _)| esc(n))
        .collect();
    let path = match rev {
        Some(rev) => format!(
            "/-/{plural}/{}?rev={}",
            encode_path(&repo.id),
            encode_segment(rev)
        ),
        None => format!("/-/{plural}/{}", encode_path(&repo.id)),
    };
    let body = format!(
        "<p><a href=\"/\">mirror</a></p><h1>{}</h1><p>commit <code>{}</code> {}</p>\
         <h2>Files ({})</h2>{}{}",
        esc(&repo.id),
        esc(&snap.commit),
        names.join(", "),
        files.len(),
        table(&["path", "size", "sha256"], &[1], &rows),
        view.footer(&esc(&path), files.len(), "files"),
    );
    Outcome::Page {
        title: repo.id.clone(),
        body,
    }
}

/// An environment's wheels.
pub(super) fn env_files(env: &PyEnv, view: View) -> Outcome {
    let rows: Vec<Vec<String>> = view
        .window(env.files.values())
        .map(|f| {
            let url = format!(
                "/pypi/{}/files/{}",
                encode_segment(&env.name),
                encode_segment(&f.filename)
            );
            vec![
                format!("<a href=\"{}\">{}</a>", esc(&url), esc(&f.filename)),
                esc(&f.project),
                esc(&f.version),
                esc(&human_bytes(f.blob.size)),
            ]
        })
        .collect();
    let note = env
        .note
        .as_deref()
        .map(|n| format!("<p>{}</p>", esc(n)))
        .unwrap_or_default();
    let path = format!("/-/pypi/{}", encode_segment(&env.name));
    let body = format!(
        "<p><a href=\"/\">mirror</a></p><h1>{}</h1>{note}<p>{} · python {} · {}</p>\
         <h2>Files ({})</h2>{}{}",
        esc(&env.name),
        esc(&env.arch),
        esc(&env.python),
        esc(&human_bytes(env.bytes)),
        env.files.len(),
        table(&["file", "project", "version", "size"], &[3], &rows),
        view.footer(&esc(&path), env.files.len(), "files"),
    );
    Outcome::Page {
        title: env.name.clone(),
        body,
    }
}
