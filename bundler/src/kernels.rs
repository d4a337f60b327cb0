//! `llmgw recipe kernels`: a kernel repository's build folders as the Hub
//! lists them, for checking by hand which a node loads — asked through the
//! same client and checks `bundle create --kernel` uses.

use crate::error::CreateError;
use crate::http::{Http, RetryPolicy, Token};
use crate::sources::hub::{self, HubClient};

pub use crate::sources::hub::KernelBuilds;

/// The build folders of kernel `id` at `revision` (empty: its newest
/// `vN` branch), asked of the Hub at `endpoint` (`token` sent to it only).
pub async fn kernel_builds(
    endpoint: &str,
    token: Option<Token>,
    retry: RetryPolicy,
    id: &str,
    revision: &str,
) -> Result<KernelBuilds, CreateError> {
    let have_token = token.is_some();
    let http = Http::new(endpoint, token, retry)?;
    let hub = HubClient {
        http: &http,
        endpoint,
        have_token,
    };
    hub::kernel_builds(&hub, id, revision).await
}
