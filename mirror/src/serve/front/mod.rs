//! The mirror's front page (`GET /`) and its file lists (`GET /-/models/…`,
//! `/-/datasets/…`, `/-/pypi/…`): what the mirror holds, whether it is
//! healthy, and how to point a node at it, for the operator who opens the
//! mirror's URL in a browser. Server-rendered HTML, nothing from outside
//! (the site is air-gapped), one inline stylesheet and script allowed by a
//! strict Content-Security-Policy.
//!
//! Invariant: like every route, a page answers from the index loaded for
//! the request and touches no file; [`decide`] says what to answer and
//! [`respond`] alone turns that into a response, so every page carries the
//! same headers on GET and HEAD.

pub mod html;
mod lists;
mod sections;
mod view;

use axum::body::Body;
use axum::response::Response;
use http::{HeaderValue, Method, StatusCode, header};

use super::request::Req;
use super::route::{Route, Routed};
use llmgw_shared::manifest::RepoKind;
use view::View;

/// What a front-page request asks for.
enum Outcome {
    /// A page: its title and body.
    Page { title: String, body: String },
    /// Nothing of that name is held.
    NotFound(String),
    /// Only GET and HEAD read pages.
    MethodNotAllowed,
}

/// `GET /` and `GET /-/…`: the route for the metrics, and the answer.
pub fn answer(r: &Req<'_>, segs: &[&str]) -> Routed {
    let route = if segs.first() == Some(&"-") {
        Route::FrontList
    } else {
        Route::Front
    };
    (route, respond(r.method, decide(r, segs)))
}

/// The value of query parameter `key`, if the request has it.
fn param<'a>(r: &'a Req<'_>, key: &str) -> Option<&'a str> {
    r.query
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

/// The page of a list asked for (`?page=N`; see [`View::page`]).
fn page(r: &Req<'_>) -> View {
    View::page(param(r, "page"))
}

/// A list's own page: a link home, then the list.
fn list_page(title: &str, list: String) -> Outcome {
    Outcome::Page {
        title: format!("{title} · llmgw mirror"),
        body: format!("<p><a href=\"/\">mirror</a></p>{list}"),
    }
}

fn decide(r: &Req<'_>, segs: &[&str]) -> Outcome {
    if r.method != Method::GET && r.method != Method::HEAD {
        return Outcome::MethodNotAllowed;
    }
    let ix = &r.index;
    let base = r.base_url();
    match segs {
        [] | [""] => {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            let body = [
                "<h1>llmgw mirror</h1>".to_string(),
                sections::health(r.state, now),
                sections::use_block(ix, &base),
                sections::bundles(ix, View::Front),
                sections::releases(ix, &base, View::Front),
                sections::repos(ix, View::Front),
                sections::envs(ix, &base, View::Front),
                sections::images(ix, &base, View::Front),
                sections::charts(ix, &base, View::Front),
            ]
            .concat();
            Outcome::Page {
                title: "llmgw mirror".into(),
                body,
            }
        }
        ["-", "bundles"] => list_page("bundles", sections::bundles(ix, page(r))),
        ["-", "releases"] => list_page("releases", sections::releases(ix, &base, page(r))),
        ["-", "repos"] => list_page("models and datasets", sections::repos(ix, page(r))),
        ["-", "pypi"] => list_page("Python environments", sections::envs(ix, &base, page(r))),
        ["-", "images"] => list_page("images", sections::images(ix, &base, page(r))),
        ["-", "charts"] => list_page("Helm charts", sections::charts(ix, &base, page(r))),
        ["-", plural @ ("models" | "datasets" | "kernels"), org, name] => {
            let kind = match *plural {
                "models" => RepoKind::Model,
                "datasets" => RepoKind::Dataset,
                _ => RepoKind::Kernel,
            };
            let key = format!("{org}/{name}").to_ascii_lowercase();
            let rev = param(r, "rev");
            match ix.repos.get(&(kind, key)) {
                Some(repo) => lists::repo_files(repo, plural, rev, page(r)),
                None => Outcome::NotFound(format!("no {plural} repository {org}/{name} is held")),
            }
        }
        ["-", "pypi", name] => match ix.pypi.env(name) {
            Some(env) => lists::env_files(env, page(r)),
            None => Outcome::NotFound(format!("no Python environment {name} is held")),
        },
        _ => Outcome::NotFound("no such page".into()),
    }
}

/// The one place an outcome becomes a response: HTML with the page
/// headers, the same on GET and HEAD (HEAD without the body).
fn respond(method: &Method, outcome: Outcome) -> Response {
    let (status, html) = match outcome {
        Outcome::Page { title, body } => (StatusCode::OK, html::page(&title, &body)),
        Outcome::NotFound(what) => (
            StatusCode::NOT_FOUND,
            html::page(
                "not held",
                &format!(
                    "<h1>Not held</h1><p>{}</p><p><a href=\"/\">what this mirror holds</a></p>",
                    html::esc(&what)
                ),
            ),
        ),
        Outcome::MethodNotAllowed => {
            let mut r = Response::new(Body::empty());
            *r.status_mut() = StatusCode::METHOD_NOT_ALLOWED;
            r.headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
            return r;
        }
    };
    let len = html.len();
    let mut r = if method == Method::HEAD {
        Response::new(Body::empty())
    } else {
        Response::new(Body::from(html))
    };
    *r.status_mut() = status;
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    h.insert(header::CONTENT_LENGTH, HeaderValue::from(len));
    if let Ok(csp) = HeaderValue::from_str(&html::CSP) {
        h.insert(header::CONTENT_SECURITY_POLICY, csp);
    }
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    r
}
