//! A private `redis-server` for tests and benchmarks: a free port on
//! 127.0.0.1, its own temporary folder, no persistence, stopped by PID when
//! dropped. Needs Debian's `redis-server` on `PATH` (`scripts/setup.sh`
//! installs it).

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
    /// Starts one and waits until it accepts connections.
    pub fn start() -> Result<Self> {
        let dir = tempfile::tempdir().context("cannot create a folder for redis-server")?;
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .context("cannot find a free port on 127.0.0.1")?
            .port();
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
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Ok(Some(status)) = redis.child.try_wait() {
                bail!("redis-server exited at start ({status}); is port {port} taken?");
            }
            if Instant::now() > deadline {
                bail!(
                    "redis-server did not accept connections on port {port} within {} s",
                    START_TIMEOUT.as_secs()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(redis)
    }
}

impl Drop for LocalRedis {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
