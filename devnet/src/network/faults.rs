//! Faults at run time: a node killed (SIGKILL) and restarted, nodes cut off
//! from every other node and healed, links slowed. Each call records the
//! faults in force in `network.json`.

use anyhow::{bail, Result};

use super::{LinkShape, NetworkState};
use crate::{self as devnet, process};

impl NetworkState {
    /// SIGKILLs node `name`'s CometBFT and abcid (no SIGTERM first);
    /// returns how many processes were killed.
    pub fn kill(&mut self, name: &str) -> Result<usize> {
        let i = self.index(name)?;
        let s = &mut self.nodes[i].state;
        let mut killed = 0;
        if let Some(pid) = s.cometbft_pid.take() {
            let started = s.cometbft_started.take();
            let name = crate::binary_name(&s.cometbft);
            killed += usize::from(process::kill_spawned(pid, started, name));
        }
        if let Some(pid) = s.abcid_pid.take() {
            let started = s.abcid_started.take();
            let name = crate::binary_name(&s.abcid);
            killed += usize::from(process::kill_spawned(pid, started, name));
        }
        self.save()?;
        Ok(killed)
    }

    /// SIGKILLs node `name` if it runs, starts it again on its own chain
    /// and waits until it sees a new block (a node that fell behind
    /// block-syncs first).
    pub async fn restart(&mut self, name: &str) -> Result<()> {
        self.kill(name)?;
        let i = self.index(name)?;
        let s = &mut self.nodes[i].state;
        let started = devnet::start_abcid(s).and_then(|()| devnet::start_cometbft(s));
        self.save()?;
        started?;
        devnet::wait_ready(&self.nodes[i].state).await
    }

    /// Cuts each of `names` off from every other node: disables every proxy
    /// to and from it (toxiproxy closes their connections).
    pub async fn partition(&mut self, names: &[String]) -> Result<()> {
        if names.is_empty() {
            bail!("name the node(s) to cut off, e.g. `partition v3`");
        }
        for name in names {
            self.index(name)?;
            if !self.partitioned.contains(name) {
                self.partitioned.push(name.clone());
            }
        }
        self.sync_links().await
    }

    /// Undoes the partitions and slowdowns of `names` (all nodes when
    /// empty): their links go back to the network's shape.
    pub async fn heal(&mut self, names: &[String]) -> Result<()> {
        let names = self.names_or_all(names)?;
        self.partitioned.retain(|n| !names.contains(n));
        self.slowed.retain(|n, _| !names.contains(n));
        self.sync_links().await
    }

    /// Gives every link of `names` (all nodes when empty) the shape `shape`.
    pub async fn slow(&mut self, names: &[String], shape: LinkShape) -> Result<()> {
        for name in self.names_or_all(names)? {
            self.slowed.insert(name, shape);
        }
        self.sync_links().await
    }

    fn names_or_all(&self, names: &[String]) -> Result<Vec<String>> {
        if names.is_empty() {
            return Ok(self.nodes.iter().map(|n| n.name.clone()).collect());
        }
        for name in names {
            self.index(name)?;
        }
        Ok(names.to_vec())
    }

    /// The shape of the link between `a` and `b`: a slowed end's (the
    /// slower one's when both are), else the network's.
    pub(crate) fn link_shape(&self, a: &str, b: &str) -> LinkShape {
        let ends = [self.slowed.get(a), self.slowed.get(b)];
        ends.into_iter()
            .flatten()
            .max_by_key(|s| (s.latency_ms, s.jitter_ms))
            .copied()
            .unwrap_or(self.options.links)
    }

    /// Makes every proxy agree with the faults recorded: enabled unless an
    /// end is partitioned, toxics of its link's shape; then saves.
    pub(super) async fn sync_links(&mut self) -> Result<()> {
        let proxy = self.proxy_client()?;
        for link in &self.links {
            let name = link.proxy();
            proxy
                .shape(&name, &self.link_shape(&link.from, &link.to))
                .await?;
            let cut = self.partitioned.iter().any(|p| link.touches(p));
            proxy.set_enabled(&name, !cut).await?;
        }
        self.save()
    }
}
