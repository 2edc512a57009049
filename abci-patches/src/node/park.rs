//! Tests: a gate that holds a node call mid-execution, so a test can
//! check what other calls do meanwhile.

/// A gate that parks a read-only call mid-execution: once armed, the next
/// call announces it is parked and waits until released.
#[derive(Debug, Default)]
pub struct Park {
    armed: std::sync::Mutex<Option<(std::sync::mpsc::Sender<()>, std::sync::mpsc::Receiver<()>)>>,
}

impl Park {
    /// Arms the gate: returns the receiver of "parked" and the sender of
    /// "release".
    pub fn arm(&self) -> (std::sync::mpsc::Receiver<()>, std::sync::mpsc::Sender<()>) {
        let (parked_tx, parked_rx) = std::sync::mpsc::channel();
        let (release_tx, release_rx) = std::sync::mpsc::channel();
        *self.armed.lock().expect("park lock") = Some((parked_tx, release_rx));
        (parked_rx, release_tx)
    }

    /// Called by the call under test: parks when armed.
    pub fn wait_here(&self) {
        let armed = self.armed.lock().expect("park lock").take();
        if let Some((parked, release)) = armed {
            let _ = parked.send(());
            let _ = release.recv();
        }
    }
}
