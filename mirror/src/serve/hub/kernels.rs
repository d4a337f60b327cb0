//! What the Hub's kernel repositories need besides a model's routes: the
//! owner's overview the `kernels` client checks before it loads anything,
//! and the miss a node leaves when no build folder carried loads on it.
//!
//! Invariant: both answer from the index alone; the node is read from its
//! user agent only to say what it lacked, never to choose what it gets.

use axum::response::Response;
use http::Method;
use llmgw_shared::kernels::{Target, Variant};
use serde_json::json;

use super::HubError;
use crate::serve::http::paths;
use crate::serve::http::respond;
use crate::serve::index::Snapshot;
use crate::serve::request::Req;

/// A node listed a kernel's build folders and none loads on it: the miss
/// to record, the listing at the commit with the node's short form
/// (`/api/kernels/O/N/tree/COMMIT/build?for=torch2.11,cu130,x86_64`), so
/// nodes asking by branch, full ref or commit are one want.
#[derive(Debug, Clone)]
pub struct NodeMiss(pub String);

/// `/api/organizations/{org}/overview`, for an owner of a held kernel
/// repository only: what the Hub said of it when the bundle was made
/// (`trustedKernelPublisher`), so the `kernels` client decides as it would
/// online. Any other name is the Hub's 404, and the client refuses to load
/// from a publisher it cannot check, as it does online.
pub(super) fn overview(req: &Req<'_>, org: &str) -> Result<Response, HubError> {
    if req.method != Method::GET && req.method != Method::HEAD {
        return Err(HubError::Method { allow: "GET, HEAD" });
    }
    let org = paths::decode_join(&[org]).map_err(HubError::from)?;
    let trusted = req.index.kernel_publisher(&org).ok_or(HubError::NotFound)?;
    let v = json!({
        "avatarUrl": "",
        "name": org,
        "fullname": org,
        "trustedKernelPublisher": trusted,
    });
    Ok(respond::json(req.method, req.headers, &v))
}

/// A kernel's build folders listed for one node (`resp`): whether any
/// loads on it depends on who asks, so the answer is never cached; where
/// none does, the response says so for the miss log.
pub(super) fn for_node(req: &Req<'_>, id: &str, snap: &Snapshot, resp: &mut Response) {
    resp.extensions_mut().remove::<respond::CachedJson>();
    if let Some(miss) = node_miss(req, id, snap) {
        resp.extensions_mut().insert(miss);
    }
}

/// The miss of a node (its `kernels` user agent) for which no build folder
/// of `snap` loads; none when it is no such client or one loads.
fn node_miss(req: &Req<'_>, id: &str, snap: &Snapshot) -> Option<NodeMiss> {
    let ua = req.headers.get(http::header::USER_AGENT)?.to_str().ok()?;
    let node = Target::from_user_agent(ua)?;
    let loads = snap
        .files()
        .filter_map(|f| f.path.strip_prefix("build/")?.split_once('/'))
        .filter_map(|(folder, _)| Variant::parse(folder).ok())
        .any(|v| node.accepts(&v).is_ok());
    (!loads).then(|| {
        let commit = &snap.commit;
        NodeMiss(format!(
            "/api/kernels/{id}/tree/{commit}/build?for={}",
            node.short()
        ))
    })
}
