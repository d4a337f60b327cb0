//! The Hub as this run reaches it: the client, the endpoint (`--hf-endpoint`)
//! and whether `HF_TOKEN` is sent, handed together to every call that asks
//! the Hub, and its refusals turned into words an operator can act on.
//!
//! Invariant: the token itself is the client's (sent to the Hub's origin
//! only); here is only whether there is one, for the advice.

use super::what;
use crate::error::{CreateError, HubError};
use crate::http::{Http, HttpError};
use crate::spec::RepoSpec;

/// The Hub this run asks.
#[derive(Clone, Copy)]
pub struct HubClient<'a> {
    /// The run's client (which holds `HF_TOKEN`, for the Hub's origin only).
    pub http: &'a Http,
    /// The Hub's base URL (`--hf-endpoint`).
    pub endpoint: &'a str,
    /// Whether `HF_TOKEN` is set (a refusal's advice differs).
    pub have_token: bool,
}

impl HubClient<'_> {
    /// Turns the Hub's refusal into words an operator can act on.
    pub(super) fn refusal(&self, spec: &RepoSpec, e: HttpError) -> CreateError {
        let HttpError::Status {
            status,
            ref error_code,
            ref message,
            ..
        } = e
        else {
            return e.into();
        };
        let (what, message) = (what(spec), message.clone());
        let fault = match (error_code.as_deref(), status) {
            (Some("GatedRepo"), _) | (_, 401) | (_, 403) => HubError::Gated {
                what,
                status,
                message,
                have_token: self.have_token,
            },
            (Some("RevisionNotFound"), _) => HubError::NoRevision {
                what,
                endpoint: self.endpoint.to_string(),
                revision: spec.revision.clone(),
                message,
            },
            (Some("RepoNotFound"), _) | (_, 404) => HubError::NoRepository {
                what,
                endpoint: self.endpoint.to_string(),
                message,
                have_token: self.have_token,
            },
            _ => return e.into(),
        };
        fault.into()
    }
}
