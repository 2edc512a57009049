//! The `profiler_*` JSON-RPC server (jsonrpsee, HTTP), on its own port.
//!
//! Bound to `127.0.0.1:6060` by default. Bound to any non-loopback address it refuses to
//! start without a bearer token; with a token configured, every request must carry
//! `Authorization: Bearer <token>` or gets HTTP 401. Bound to loopback, it also answers
//! only requests whose `Host` is a loopback name (403 otherwise), so that a web page cannot
//! reach it through DNS rebinding.

use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use jsonrpsee::core::BoxError;
use jsonrpsee::server::middleware::http::HostFilterLayer;
use jsonrpsee::server::{
    HttpBody, HttpRequest, HttpResponse, RegisterMethodError, RpcModule, Server,
    ServerConfig as JsonrpseeConfig, ServerHandle,
};
use jsonrpsee::types::{ErrorObjectOwned, Params};
use serde::de::DeserializeOwned;

use crate::api::{codes, EnableParams, FetchParams};
use crate::error::ProfilerError;
use crate::profiler::BlockProfiler;

/// Default listen address: loopback, port 6060 (the port Go's pprof endpoints use).
pub const DEFAULT_ADDR: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 6060);
/// Largest response: an SVG of a busy block can reach a few MiB, base64 adds a third.
const MAX_RESPONSE_BYTES: u32 = 64 * 1024 * 1024;
/// `Host` values accepted when bound to loopback.
const LOOPBACK_HOSTS: [&str; 3] = ["localhost:*", "127.0.0.1:*", "[::1]:*"];
/// Shortest accepted bearer token.
pub const MIN_TOKEN_LEN: usize = 16;

/// Where and how the JSON-RPC server listens.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// Listen address; port 0 picks a free port (see [`RpcServer::local_addr`]).
    pub addr: SocketAddr,
    /// Bearer token required from clients; mandatory off loopback.
    pub token: Option<String>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            addr: DEFAULT_ADDR,
            token: None,
        }
    }
}

/// Why the server did not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// Non-loopback address without a token.
    #[error(
        "refusing to serve the profiler on {addr}: a non-loopback address requires a bearer token"
    )]
    TokenRequired {
        /// The requested address.
        addr: SocketAddr,
    },
    /// The token is unusable.
    #[error("invalid profiler token: {0}")]
    InvalidToken(String),
    /// The loopback `Host` filter could not be built.
    #[error("building the Host filter: {0}")]
    HostFilter(String),
    /// Registering the methods failed (a name clash).
    #[error("registering profiler methods: {0}")]
    Register(#[from] RegisterMethodError),
    /// Binding the address failed.
    #[error("binding the profiler RPC server to {addr}: {source}")]
    Bind {
        /// The requested address.
        addr: SocketAddr,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
}

/// A running server. Dropping it does not stop the server; call [`RpcServer::stop`].
#[derive(Debug)]
pub struct RpcServer {
    handle: ServerHandle,
    local_addr: SocketAddr,
}

impl RpcServer {
    /// The address actually bound.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The jsonrpsee handle, e.g. to await [`ServerHandle::stopped`].
    pub fn handle(&self) -> &ServerHandle {
        &self.handle
    }

    /// `http://<local_addr>`, the URL clients use.
    pub fn url(&self) -> String {
        format!("http://{}", self.local_addr)
    }

    /// Stops the server and waits until it has stopped.
    pub async fn stop(self) {
        // Already stopped is fine.
        let _ = self.handle.stop();
        self.handle.stopped().await;
    }
}

/// Starts the JSON-RPC server for `profiler` (must run inside a tokio runtime).
pub async fn serve(
    profiler: Arc<BlockProfiler>,
    config: ServerConfig,
) -> Result<RpcServer, ServeError> {
    let token = check_token(&config)?;
    let host_filter = if config.addr.ip().is_loopback() {
        HostFilterLayer::new(LOOPBACK_HOSTS).map_err(|e| ServeError::HostFilter(e.to_string()))?
    } else {
        HostFilterLayer::disable()
    };
    let module = rpc_module(profiler)?;
    let server = Server::builder()
        .set_config(
            JsonrpseeConfig::builder()
                .max_response_body_size(MAX_RESPONSE_BYTES)
                .build(),
        )
        .set_http_middleware(
            tower::ServiceBuilder::new()
                .layer(host_filter)
                .layer(BearerAuthLayer { token }),
        )
        .build(config.addr)
        .await
        .map_err(|source| ServeError::Bind {
            addr: config.addr,
            source,
        })?;
    let local_addr = server.local_addr().map_err(|source| ServeError::Bind {
        addr: config.addr,
        source,
    })?;
    let handle = server.start(module);
    tracing::info!(%local_addr, authenticated = config.token.is_some(), "profiler RPC listening");
    Ok(RpcServer { handle, local_addr })
}

fn check_token(config: &ServerConfig) -> Result<Option<Arc<str>>, ServeError> {
    match &config.token {
        None if !config.addr.ip().is_loopback() => {
            Err(ServeError::TokenRequired { addr: config.addr })
        }
        None => Ok(None),
        Some(token) if token.len() < MIN_TOKEN_LEN => Err(ServeError::InvalidToken(format!(
            "at least {MIN_TOKEN_LEN} characters required"
        ))),
        Some(token) if !token.bytes().all(|b| b.is_ascii_graphic()) => Err(
            ServeError::InvalidToken("only visible ASCII characters are allowed".into()),
        ),
        Some(token) => Ok(Some(Arc::from(token.as_str()))),
    }
}

/// The `profiler_*` methods, for merging into an existing jsonrpsee server instead of
/// calling [`serve`] (the caller then owns binding and authentication).
pub fn rpc_module(
    profiler: Arc<BlockProfiler>,
) -> Result<RpcModule<Arc<BlockProfiler>>, RegisterMethodError> {
    let mut module = RpcModule::new(profiler);
    module.register_blocking_method("profiler_enable", |params, profiler, _| {
        let params: EnableParams = parse_or_default(&params)?;
        profiler.enable(params).map_err(to_rpc_error)
    })?;
    module.register_method("profiler_disable", |params, profiler, _| {
        expect_no_params(&params)?;
        Ok::<_, ErrorObjectOwned>(profiler.disable())
    })?;
    module.register_method("profiler_status", |params, profiler, _| {
        expect_no_params(&params)?;
        Ok::<_, ErrorObjectOwned>(profiler.status())
    })?;
    module.register_method("profiler_list", |params, profiler, _| {
        expect_no_params(&params)?;
        Ok::<_, ErrorObjectOwned>(profiler.list())
    })?;
    module.register_blocking_method("profiler_fetch", |params, profiler, _| {
        let params: FetchParams = parse_required(&params)?;
        profiler.fetch(&params).map_err(to_rpc_error)
    })?;
    Ok(module)
}

fn is_empty(params: &Params<'_>) -> bool {
    matches!(
        params.as_str().map(str::trim),
        None | Some("[]" | "{}" | "null")
    )
}

fn parse_or_default<T: DeserializeOwned + Default>(
    params: &Params<'_>,
) -> Result<T, ErrorObjectOwned> {
    if is_empty(params) {
        Ok(T::default())
    } else {
        parse_required(params)
    }
}

fn parse_required<T: DeserializeOwned>(params: &Params<'_>) -> Result<T, ErrorObjectOwned> {
    let raw = params.as_str().unwrap_or("null");
    serde_json::from_str(raw).map_err(|e| {
        ErrorObjectOwned::owned(
            codes::INVALID_PARAMS,
            format!("invalid params: {e}"),
            None::<()>,
        )
    })
}

fn expect_no_params(params: &Params<'_>) -> Result<(), ErrorObjectOwned> {
    if is_empty(params) {
        Ok(())
    } else {
        Err(ErrorObjectOwned::owned(
            codes::INVALID_PARAMS,
            "invalid params: this method takes none",
            None::<()>,
        ))
    }
}

fn to_rpc_error(error: ProfilerError) -> ErrorObjectOwned {
    let code = match &error {
        ProfilerError::InvalidParam { .. } => codes::INVALID_PARAMS,
        ProfilerError::SessionActive { .. } => codes::SESSION_ACTIVE,
        ProfilerError::UnknownHeight { .. }
        | ProfilerError::NoProfiles
        | ProfilerError::MissingFile { .. } => codes::NOT_FOUND,
        ProfilerError::Warmup(_)
        | ProfilerError::SamplerGone
        | ProfilerError::AlreadyInstantiated => codes::UNAVAILABLE,
        ProfilerError::InvalidConfig(_)
        | ProfilerError::Io { .. }
        | ProfilerError::OverQuota { .. }
        | ProfilerError::Render { .. } => codes::INTERNAL,
    };
    ErrorObjectOwned::owned(code, error.to_string(), None::<()>)
}

/// tower layer checking `Authorization: Bearer <token>` when a token is configured.
#[derive(Clone)]
struct BearerAuthLayer {
    token: Option<Arc<str>>,
}

impl<S> tower::Layer<S> for BearerAuthLayer {
    type Service = BearerAuth<S>;

    fn layer(&self, inner: S) -> Self::Service {
        BearerAuth {
            inner,
            token: self.token.clone(),
        }
    }
}

#[derive(Clone)]
struct BearerAuth<S> {
    inner: S,
    token: Option<Arc<str>>,
}

impl<S, B> tower::Service<HttpRequest<B>> for BearerAuth<S>
where
    S: tower::Service<HttpRequest<B>, Response = HttpResponse>,
    S::Error: Into<BoxError> + 'static,
    S::Future: Send + 'static,
{
    type Response = HttpResponse;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<HttpResponse, BoxError>> + Send + 'static>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: HttpRequest<B>) -> Self::Future {
        let authorized = match &self.token {
            None => true,
            Some(token) => request
                .headers()
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                .is_some_and(|header| bearer_matches(header, token)),
        };
        if authorized {
            let response = self.inner.call(request);
            Box::pin(async move { response.await.map_err(Into::into) })
        } else {
            Box::pin(async { Ok(unauthorized()) })
        }
    }
}

fn bearer_matches(header: &str, token: &str) -> bool {
    let Some((scheme, presented)) = header.trim().split_once(' ') else {
        return false;
    };
    scheme.eq_ignore_ascii_case("bearer")
        && constant_time_eq(presented.trim().as_bytes(), token.as_bytes())
}

/// Compares without an early exit, so timing does not reveal the matching prefix.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn unauthorized() -> HttpResponse {
    HttpResponse::builder()
        .status(401)
        .header("www-authenticate", "Bearer")
        .header("content-type", "text/plain")
        .body(HttpBody::from("missing or invalid bearer token\n"))
        .unwrap_or_else(|_| jsonrpsee::server::http::response::denied())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_header_must_match_exactly() {
        let token = "0123456789abcdef";
        assert!(bearer_matches("Bearer 0123456789abcdef", token));
        assert!(bearer_matches("bearer 0123456789abcdef", token));
        assert!(!bearer_matches("Bearer 0123456789abcdeF", token));
        assert!(!bearer_matches("Bearer 0123456789abcde", token));
        assert!(!bearer_matches("Basic 0123456789abcdef", token));
        assert!(!bearer_matches("0123456789abcdef", token));
    }

    #[test]
    fn tokens_are_required_off_loopback_and_must_be_strong() {
        let off_loopback: SocketAddr = "0.0.0.0:0".parse().expect("addr");
        let config = |addr, token: Option<&str>| ServerConfig {
            addr,
            token: token.map(str::to_string),
        };
        assert!(matches!(
            check_token(&config(off_loopback, None)),
            Err(ServeError::TokenRequired { .. })
        ));
        assert!(matches!(
            check_token(&config(off_loopback, Some("short"))),
            Err(ServeError::InvalidToken(_))
        ));
        assert!(matches!(
            check_token(&config(off_loopback, Some("has a space in it!!"))),
            Err(ServeError::InvalidToken(_))
        ));
        assert!(check_token(&config(off_loopback, Some("0123456789abcdef"))).is_ok());
        assert!(matches!(check_token(&config(DEFAULT_ADDR, None)), Ok(None)));
    }
}
