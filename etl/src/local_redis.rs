//! A private `redis-server` for tests and benchmarks: a free port on
//! 127.0.0.1, its own temporary folder, no persistence, stopped by PID when
//! dropped. Needs Debian's `redis-server` on `PATH` (`scripts/setup.sh`
//! installs it).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

/// How long `redis-server` may take to accept connections.
const START_TIMEOUT: Duration = Duration::from_secs(10);

/// A running private `redis-server`.
pub struct LocalRedis {
    child: Child,
    /// Its port on 127.0.0.1.
    pub port: u16,
    /// `redis://127.0.0.1:<port>/0`.
    pub url: String,
    _dir: tempfile::TempDir,
}

impl LocalRedis {
    /// Starts one and waits until it accepts connections. The port is free
    /// when chosen, but another process may take it before redis-server
    /// binds it: a server that exits at start, or a port that answers with
    /// another process's Redis, gets a new port and another try.
    pub fn start() -> Result<Self> {
        let mut last = None;
        for _ in 0..3 {
            match Self::start_once() {
                Ok(redis) => return Ok(redis),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| anyhow::anyhow!("redis-server did not start")))
    }

    fn start_once() -> Result<Self> {
        let dir = tempfile::tempdir().context("cannot create a folder for redis-server")?;
        let port = free_port()?;
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("cannot start redis-server: install it (apt-get install redis-server, or scripts/setup.sh)")?;
        let mut redis = LocalRedis {
            child,
            port,
            url: format!("redis://127.0.0.1:{port}/0"),
            _dir: dir,
        };
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if let Ok(Some(status)) = redis.child.try_wait() {
                bail!("redis-server exited at start ({status}); is port {port} taken?");
            }
            match server_pid(port) {
                Some(pid) if pid == redis.child.id() => return Ok(redis),
                Some(pid) => bail!("port {port} answers as redis-server {pid}, not ours"),
                None if Instant::now() > deadline => bail!(
                    "redis-server did not accept connections on port {port} within {} s",
                    START_TIMEOUT.as_secs()
                ),
                None => std::thread::sleep(Duration::from_millis(20)),
            }
        }
    }
}

/// Whether `text` holds a whole line starting with `key`.
fn has_line(text: &[u8], key: &[u8]) -> bool {
    let Some(at) = text.windows(key.len()).position(|w| w == key) else {
        return false;
    };
    text[at..].windows(2).any(|w| w == b"\r\n")
}

/// The `process_id` of the Redis server answering on `port`, if one does.
fn server_pid(port: u16) -> Option<u32> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    stream.write_all(b"INFO server\r\n").ok()?;
    let mut reply = Vec::new();
    let mut buf = [0u8; 4096];
    // Read until the `process_id:` line is complete.
    while !has_line(&reply, b"process_id:") {
        let n = stream.read(&mut buf).ok()?;
        if n == 0 {
            break;
        }
        reply.extend_from_slice(&buf[..n]);
    }
    let text = String::from_utf8_lossy(&reply);
    text.lines()
        .find_map(|l| l.strip_prefix("process_id:"))
        .and_then(|v| v.trim().parse().ok())
}

impl Drop for LocalRedis {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// A port on 127.0.0.1 that was free when chosen (the kernel's choice);
/// another process may still bind it first, so a start on it is retried.
pub fn free_port() -> Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .context("cannot find a free port on 127.0.0.1")?
        .port())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_server_answers_as_itself() {
        let a = LocalRedis::start().expect("first redis-server");
        let b = LocalRedis::start().expect("second redis-server");
        assert_ne!(a.port, b.port);
        assert_eq!(server_pid(a.port), Some(a.child.id()));
        assert_eq!(server_pid(b.port), Some(b.child.id()));
    }

    #[test]
    fn a_port_with_nothing_behind_it_has_no_server() {
        assert_eq!(server_pid(free_port().unwrap()), None);
    }
}
