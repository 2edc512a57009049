//! Shopify's toxiproxy between devnet nodes: its server, started and stopped
//! by PID like the other devnet processes, and a client of its HTTP API
//! (proxies, enabling and disabling them, `latency` and `bandwidth` toxics).

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde_json::json;

use super::links::LinkShape;
use super::process;

/// The process name of the server binary (for [`process::is_running`]).
pub(crate) const SERVER_NAME: &str = "toxiproxy-server";

/// Starts `bin` with its API on `127.0.0.1:port`, logging to `log`, and waits
/// until the API answers; returns its PID.
pub(crate) async fn start_server(bin: &Path, port: u16, log: &Path) -> Result<u32> {
    let mut cmd = Command::new(bin);
    cmd.args(["-host", "127.0.0.1", "-port", &port.to_string()]);
    let pid = process::spawn_logged(cmd, log)?;
    let client = Toxiproxy::new(port)?;
    let deadline = Instant::now() + Duration::from_secs(20);
    while client.version().await.is_err() {
        if !process::is_running(pid, SERVER_NAME) || Instant::now() > deadline {
            process::stop(pid, SERVER_NAME, Duration::ZERO);
            bail!(
                "toxiproxy did not start on 127.0.0.1:{port} (see {}):\n{}",
                log.display(),
                process::tail(log, 20)
            );
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(pid)
}

/// A client of one toxiproxy server's HTTP API.
#[derive(Debug, Clone)]
pub struct Toxiproxy {
    base: String,
    http: reqwest::Client,
}

/// The streams a link's toxics apply to: both ways.
const STREAMS: [&str; 2] = ["upstream", "downstream"];

impl Toxiproxy {
    /// A client of the server whose API listens on `127.0.0.1:port`.
    pub fn new(port: u16) -> Result<Self> {
        Ok(Self {
            base: format!("http://127.0.0.1:{port}"),
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(5))
                .build()?,
        })
    }

    /// The server's version text.
    pub async fn version(&self) -> Result<String> {
        let r = self
            .http
            .get(format!("{}/version", self.base))
            .send()
            .await?;
        Ok(r.error_for_status()?.text().await?)
    }

    async fn send(&self, req: reqwest::RequestBuilder, what: &str) -> Result<()> {
        let r = req
            .send()
            .await
            .with_context(|| format!("toxiproxy at {}: {what}", self.base))?;
        let status = r.status();
        if !status.is_success() {
            let body = r.text().await.unwrap_or_default();
            bail!("toxiproxy at {}: {what}: {status} {body}", self.base);
        }
        Ok(())
    }

    /// Creates an enabled proxy `name` from `listen` to `upstream`.
    pub async fn create(&self, name: &str, listen: &str, upstream: &str) -> Result<()> {
        let body = json!({ "name": name, "listen": listen, "upstream": upstream, "enabled": true });
        let req = self.http.post(format!("{}/proxies", self.base)).json(&body);
        self.send(req, &format!("create proxy {name}")).await
    }

    /// Enables (listens, forwards) or disables (closes every connection,
    /// refuses new ones) proxy `name`.
    pub(crate) async fn set_enabled(&self, name: &str, enabled: bool) -> Result<()> {
        let req = self
            .http
            .post(format!("{}/proxies/{name}", self.base))
            .json(&json!({ "enabled": enabled }));
        self.send(req, &format!("enable={enabled} proxy {name}"))
            .await
    }

    /// Replaces proxy `name`'s toxics by those of `shape`, on both streams:
    /// `latency` (with jitter) and `bandwidth`, each only when set.
    pub async fn shape(&self, name: &str, shape: &LinkShape) -> Result<()> {
        let url = format!("{}/proxies/{name}/toxics", self.base);
        let r = self
            .http
            .get(&url)
            .send()
            .await
            .with_context(|| format!("toxiproxy: toxics of {name}"))?;
        let toxics: Vec<serde_json::Value> = r.error_for_status()?.json().await?;
        for toxic in toxics {
            if let Some(t) = toxic["name"].as_str() {
                let req = self.http.delete(format!("{url}/{t}"));
                self.send(req, &format!("remove toxic {t} of {name}"))
                    .await?;
            }
        }
        for stream in STREAMS {
            for body in toxics_of(shape, stream) {
                let req = self.http.post(&url).json(&body);
                self.send(req, &format!("add a toxic to {name}")).await?;
            }
        }
        Ok(())
    }
}

/// The toxic bodies that give one stream of a link `shape`.
fn toxics_of(shape: &LinkShape, stream: &str) -> Vec<serde_json::Value> {
    let mut out = Vec::new();
    if shape.latency_ms > 0 || shape.jitter_ms > 0 {
        out.push(json!({
            "name": format!("latency_{stream}"),
            "type": "latency",
            "stream": stream,
            "toxicity": 1.0,
            "attributes": { "latency": shape.latency_ms, "jitter": shape.jitter_ms },
        }));
    }
    if let Some(kbit) = shape.bandwidth_kbit {
        // toxiproxy's rate is in KB/s.
        out.push(json!({
            "name": format!("bandwidth_{stream}"),
            "type": "bandwidth",
            "stream": stream,
            "toxicity": 1.0,
            "attributes": { "rate": (kbit / 8).max(1) },
        }));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shape_becomes_toxics_of_each_stream() {
        assert!(toxics_of(&LinkShape::default(), "upstream").is_empty());
        let shape = LinkShape {
            latency_ms: 50,
            jitter_ms: 10,
            bandwidth_kbit: Some(10_000),
        };
        let t = toxics_of(&shape, "downstream");
        assert_eq!(t.len(), 2);
        assert_eq!(t[0]["type"], "latency");
        assert_eq!(t[0]["stream"], "downstream");
        assert_eq!(t[0]["attributes"]["latency"], 50);
        assert_eq!(t[0]["attributes"]["jitter"], 10);
        assert_eq!(t[1]["type"], "bandwidth");
        assert_eq!(t[1]["attributes"]["rate"], 1250, "10 mbit/s is 1250 KB/s");
    }
}
