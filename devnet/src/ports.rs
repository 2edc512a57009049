//! A devnet's ports, and the one way feth picks free ones on 127.0.0.1.

use anyhow::{Context, Result};

/// The ports one devnet node listens on, all on 127.0.0.1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ports {
    /// CometBFT RPC.
    pub rpc: u16,
    /// CometBFT P2P.
    pub p2p: u16,
    /// ABCI between CometBFT and abcid (when over TCP).
    pub abci: u16,
    /// abcid's web3 JSON-RPC.
    pub web3: u16,
    /// abcid's profiler JSON-RPC.
    pub profiler: u16,
    /// abcid's Prometheus metrics.
    pub metrics: u16,
    /// CometBFT's Prometheus metrics.
    pub cometbft_metrics: u16,
    /// CometBFT's Go pprof (`rpc.pprof_laddr`).
    pub cometbft_pprof: u16,
}

impl Ports {
    /// How many ports a node listens on.
    pub const COUNT: usize = 8;

    /// The defaults: CometBFT's own (26657, 26656, 26658, and 26660 for its
    /// metrics), the usual web3 port 8545, 6060 for the profiler and 26661
    /// for abcid's metrics, 6061 for CometBFT's Go pprof.
    pub const DEFAULT: Ports = Ports {
        rpc: 26657,
        p2p: 26656,
        abci: 26658,
        web3: 8545,
        profiler: 6060,
        metrics: 26661,
        cometbft_metrics: 26660,
        cometbft_pprof: 6061,
    };

    /// [`Ports::COUNT`] distinct free ports ([`free_ports`]).
    pub fn free() -> Result<Self> {
        Self::take(&mut free_ports(Self::COUNT)?)
    }

    /// Takes [`Ports::COUNT`] ports from the end of `pool`.
    pub fn take(pool: &mut Vec<u16>) -> Result<Self> {
        let mut next = || pool.pop().context("ran out of free ports");
        Ok(Self {
            rpc: next()?,
            p2p: next()?,
            abci: next()?,
            web3: next()?,
            profiler: next()?,
            metrics: next()?,
            cometbft_metrics: next()?,
            cometbft_pprof: next()?,
        })
    }

    /// Every port, in field order.
    pub fn all(self) -> [u16; Self::COUNT] {
        [
            self.rpc,
            self.p2p,
            self.abci,
            self.web3,
            self.profiler,
            self.metrics,
            self.cometbft_metrics,
            self.cometbft_pprof,
        ]
    }

    /// Every port by the name recipes give it (`${rpc_port}` is `rpc`; see
    /// `recipes/abcid.toml`), in field order.
    pub fn named(self) -> [(&'static str, u16); Self::COUNT] {
        [
            ("rpc", self.rpc),
            ("p2p", self.p2p),
            ("abci", self.abci),
            ("web3", self.web3),
            ("profiler", self.profiler),
            ("metrics", self.metrics),
            ("comet_metrics", self.cometbft_metrics),
            ("pprof", self.cometbft_pprof),
        ]
    }

    /// Every port moved up by `by`; `None` past 65535.
    pub fn offset(self, by: u16) -> Option<Self> {
        let up = |p: u16| p.checked_add(by);
        Some(Self {
            rpc: up(self.rpc)?,
            p2p: up(self.p2p)?,
            abci: up(self.abci)?,
            web3: up(self.web3)?,
            profiler: up(self.profiler)?,
            metrics: up(self.metrics)?,
            cometbft_metrics: up(self.cometbft_metrics)?,
            cometbft_pprof: up(self.cometbft_pprof)?,
        })
    }
}

/// `n` distinct ports on 127.0.0.1 that were free when chosen: each is
/// bound (port 0, the kernel's choice) until all are chosen, so none
/// repeats. Another process may still bind one before its user does;
/// [`super::on_free_ports`] retries such starts.
pub fn free_ports(n: usize) -> Result<Vec<u16>> {
    let listeners = (0..n)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0"))
        .collect::<std::io::Result<Vec<_>>>()
        .context("cannot bind a free port on 127.0.0.1")?;
    listeners
        .iter()
        .map(|l| Ok(l.local_addr()?.port()))
        .collect()
}

/// One port on 127.0.0.1 that was free when chosen ([`free_ports`]).
pub fn free_port() -> Result<u16> {
    free_ports(1)?.pop().context("no free port on 127.0.0.1")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_ports_are_distinct_and_bindable() {
        let ports = Ports::free().unwrap();
        let all = ports.all();
        let distinct: std::collections::BTreeSet<_> = all.iter().collect();
        assert_eq!(distinct.len(), Ports::COUNT);
        assert!(all.iter().all(|&p| p != 0));
        std::net::TcpListener::bind(("127.0.0.1", ports.web3)).unwrap();
    }

    #[test]
    fn an_offset_past_the_last_port_is_refused() {
        let up = Ports::DEFAULT.offset(10).unwrap();
        assert_eq!((up.rpc, up.cometbft_metrics), (26667, 26670));
        assert_eq!(up.cometbft_pprof, 6071);
        let moved = Ports::DEFAULT.all().map(|p| p + 10);
        assert_eq!(up.all(), moved);
        assert_eq!(Ports::DEFAULT.offset(40_000), None);
    }

    #[test]
    fn taking_from_a_short_pool_is_an_error() {
        let mut pool = vec![1, 2, 3];
        let e = Ports::take(&mut pool).unwrap_err();
        assert!(e.to_string().contains("ran out of free ports"), "{e}");
    }
}
