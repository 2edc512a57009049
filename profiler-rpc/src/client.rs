//! Typed JSON-RPC client of the `profiler_*` methods.

use std::time::Duration;

use jsonrpsee::core::client::{ClientT, Error as RpcClientError};
use jsonrpsee::core::traits::ToRpcParams;
use jsonrpsee::core::{to_json_raw_value, JsonRawValue};
use jsonrpsee::http_client::{HeaderMap, HeaderValue, HttpClient, HttpClientBuilder};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::api::{
    DisableOutcome, EnableParams, ErrorReport, FetchParams, FetchResponse, ProfileSummary,
    SessionStatus, Status,
};

/// Largest response accepted (matches the server's limit).
const MAX_RESPONSE_BYTES: u32 = 64 * 1024 * 1024;

/// Why a profiler call failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The URL or token cannot be used.
    #[error("cannot use profiler endpoint {url}: {reason}")]
    InvalidEndpoint {
        /// The URL given.
        url: String,
        /// Why not.
        reason: String,
    },
    /// HTTP 401/403: the server wants a (different) bearer token.
    #[error("{url} rejected the request (HTTP {status}): missing or wrong bearer token; pass --token or set FETH_PROFILER_TOKEN")]
    Unauthorized {
        /// The server URL.
        url: String,
        /// The HTTP status.
        status: u16,
    },
    /// The server answered with a JSON-RPC error (see [`crate::api::codes`]).
    #[error("{method} failed (code {code}): {message}")]
    Rpc {
        /// The method called.
        method: &'static str,
        /// JSON-RPC error code.
        code: i32,
        /// The server's message.
        message: String,
    },
    /// A wait on the profiler ([`ProfilerClient::wait_until`]) gave up.
    #[error("{url} still busy after {waited:?}: {state}")]
    Timeout {
        /// The server URL.
        url: String,
        /// How long it waited.
        waited: Duration,
        /// What was still going on.
        state: String,
    },
    /// The server could not be reached or answered something unusable.
    #[error("{method} to {url} failed: {reason}")]
    Transport {
        /// The method called.
        method: &'static str,
        /// The server URL.
        url: String,
        /// What went wrong.
        reason: String,
    },
}

impl ClientError {
    /// The JSON-RPC error code, when the server answered with one.
    pub fn rpc_code(&self) -> Option<i32> {
        match self {
            ClientError::Rpc { code, .. } => Some(*code),
            _ => None,
        }
    }
}

/// Client of one node's profiler endpoint (HTTP).
#[derive(Clone, Debug)]
pub struct ProfilerClient {
    inner: HttpClient,
    url: String,
}

impl ProfilerClient {
    /// A client of `url` (e.g. `http://127.0.0.1:6060`), sending `token` as a bearer token
    /// when given.
    pub fn new(url: &str, token: Option<&str>) -> Result<Self, ClientError> {
        let invalid = |reason: String| ClientError::InvalidEndpoint {
            url: url.to_string(),
            reason,
        };
        let mut headers = HeaderMap::new();
        if let Some(token) = token {
            let value = HeaderValue::from_str(&format!("Bearer {token}"))
                .map_err(|e| invalid(format!("token is not a valid header value: {e}")))?;
            headers.insert("authorization", value);
        }
        let inner = HttpClientBuilder::default()
            .max_response_size(MAX_RESPONSE_BYTES)
            .request_timeout(Duration::from_secs(120))
            .set_headers(headers)
            .build(url)
            .map_err(|e| invalid(e.to_string()))?;
        Ok(ProfilerClient {
            inner,
            url: url.to_string(),
        })
    }

    /// The endpoint URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// `profiler_enable`: arms a session from the next block on.
    pub async fn enable(&self, params: EnableParams) -> Result<SessionStatus, ClientError> {
        self.call("profiler_enable", Some(params)).await
    }

    /// `profiler_disable`: disarms.
    pub async fn disable(&self) -> Result<DisableOutcome, ClientError> {
        self.call("profiler_disable", None::<()>).await
    }

    /// `profiler_status`.
    pub async fn status(&self) -> Result<Status, ClientError> {
        self.call("profiler_status", None::<()>).await
    }

    /// `profiler_list`: stored profiles, lowest height first.
    pub async fn list(&self) -> Result<Vec<ProfileSummary>, ClientError> {
        self.call("profiler_list", None::<()>).await
    }

    /// `profiler_fetch`: one file of one profile; [`FetchResponse::decode`] gives the bytes.
    pub async fn fetch(&self, params: FetchParams) -> Result<FetchResponse, ClientError> {
        self.call("profiler_fetch", Some(params)).await
    }

    /// Polls `profiler_status` until no session is armed and no captured block is still
    /// being rendered, then returns that status: what a test or a tool waits for after
    /// arming N blocks and producing them.
    pub async fn wait_idle(&self, timeout: Duration) -> Result<Status, ClientError> {
        self.wait_until(timeout, Status::is_idle).await
    }

    /// Polls `profiler_status` every 200 ms, showing each status to `done` (which may
    /// also report progress), until `done` returns true; returns that status. The one
    /// polling loop of every wait on a session ([`ProfilerClient::wait_idle`],
    /// [`ProfilerClient::session`], `feth profiler`'s progress bars).
    pub async fn wait_until(
        &self,
        timeout: Duration,
        mut done: impl FnMut(&Status) -> bool,
    ) -> Result<Status, ClientError> {
        let started = std::time::Instant::now();
        loop {
            let status = self.status().await?;
            if done(&status) {
                return Ok(status);
            }
            if started.elapsed() >= timeout {
                return Err(ClientError::Timeout {
                    url: self.url.clone(),
                    waited: started.elapsed(),
                    state: format!(
                        "armed: {}, blocks still rendering: {}",
                        status.armed, status.pending_renders
                    ),
                });
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// One whole session: reads the counters, arms `params`, waits (up to `timeout`)
    /// until its blocks are captured and rendered, and says what the node wrote.
    pub async fn session(
        &self,
        params: EnableParams,
        timeout: Duration,
    ) -> Result<SessionOutcome, ClientError> {
        let before = self.status().await?;
        self.enable(params).await?;
        let after = self.wait_idle(timeout).await?;
        Ok(SessionOutcome { before, after })
    }

    async fn call<P: Serialize + Send, R: DeserializeOwned>(
        &self,
        method: &'static str,
        params: Option<P>,
    ) -> Result<R, ClientError> {
        self.inner
            .request(method, NamedParams(params))
            .await
            .map_err(|e| self.classify(method, e))
    }

    fn classify(&self, method: &'static str, error: RpcClientError) -> ClientError {
        match error {
            RpcClientError::Call(object) => ClientError::Rpc {
                method,
                code: object.code(),
                message: object.message().to_string(),
            },
            RpcClientError::Transport(source) => {
                match source.downcast_ref::<jsonrpsee::http_client::transport::Error>() {
                    Some(jsonrpsee::http_client::transport::Error::Rejected { status_code })
                        if matches!(status_code, 401 | 403) =>
                    {
                        ClientError::Unauthorized {
                            url: self.url.clone(),
                            status: *status_code,
                        }
                    }
                    _ => ClientError::Transport {
                        method,
                        url: self.url.clone(),
                        reason: source.to_string(),
                    },
                }
            }
            other => ClientError::Transport {
                method,
                url: self.url.clone(),
                reason: other.to_string(),
            },
        }
    }
}

/// What one [`ProfilerClient::session`] did: the node's status before arming and once idle.
#[derive(Debug, Clone)]
pub struct SessionOutcome {
    /// The status read before arming.
    pub before: Status,
    /// The status once the session ended and every captured block was rendered.
    pub after: Status,
}

impl SessionOutcome {
    /// Block profiles the node wrote during the session.
    pub fn profiles_written(&self) -> u64 {
        self.after
            .captured_total
            .saturating_sub(self.before.captured_total)
    }

    /// The node's last failure, when it failed during the session.
    pub fn failure(&self) -> Option<&ErrorReport> {
        if self.after.failures_total > self.before.failures_total {
            self.after.last_error.as_ref()
        } else {
            None
        }
    }
}

/// Params sent as one JSON object (by name), or none at all.
struct NamedParams<P>(Option<P>);

impl<P: Serialize> ToRpcParams for NamedParams<P> {
    fn to_rpc_params(self) -> Result<Option<Box<JsonRawValue>>, serde_json::Error> {
        self.0.map(|p| to_json_raw_value(&p)).transpose()
    }
}
