//! Where an account is on its way to a worker, and whether a signer thread
//! works for it: one state, its transitions all here.
//!
//! An account is queued at most once (in a ready queue, backing off, or
//! waiting for its signer to queue it), so a worker never takes it twice;
//! at most one signer works for it at a time, so every transaction is
//! signed once. A transition from a state it does not expect is a bug of
//! the engine: it fails in debug builds and is made harmless in release
//! ones (the account keeps what it has).

/// An account's flow state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) enum Flow {
    /// Neither queued nor being signed for.
    #[default]
    Idle,
    /// On its way to a worker: in a ready queue, or backing off.
    Queued,
    /// Not queued (its requests are in flight); a signer signs its next
    /// transactions ahead.
    SigningAhead,
    /// On its way to a worker while a signer signs ahead for it.
    QueuedSigningAhead,
    /// Queued once the signer has signed its next transaction (it goes to
    /// no ready queue before).
    AwaitingSigner,
}

impl Flow {
    /// Whether it is on its way to a worker.
    pub(super) fn queued(self) -> bool {
        matches!(
            self,
            Flow::Queued | Flow::QueuedSigningAhead | Flow::AwaitingSigner
        )
    }

    /// Whether a signer works for it.
    pub(super) fn signing(self) -> bool {
        matches!(
            self,
            Flow::SigningAhead | Flow::QueuedSigningAhead | Flow::AwaitingSigner
        )
    }

    /// It is put on its way to a worker (it was not).
    pub(super) fn queue(&mut self) {
        *self = match *self {
            Flow::Idle => Flow::Queued,
            Flow::SigningAhead => Flow::QueuedSigningAhead,
            queued => {
                debug_assert!(false, "queued twice ({queued:?})");
                queued
            }
        };
    }

    /// A worker took it from its ready queue.
    pub(super) fn dequeue(&mut self) {
        *self = match *self {
            Flow::Queued => Flow::Idle,
            Flow::QueuedSigningAhead => Flow::SigningAhead,
            other => {
                debug_assert!(false, "taken while {other:?}");
                if other.signing() {
                    Flow::SigningAhead
                } else {
                    Flow::Idle
                }
            }
        };
    }

    /// Has a signer sign ahead for it, unless one does already; `true` when
    /// a signer must be asked.
    pub(super) fn sign_ahead(&mut self) -> bool {
        let next = match *self {
            Flow::Idle => Flow::SigningAhead,
            Flow::Queued => Flow::QueuedSigningAhead,
            signing => signing,
        };
        std::mem::replace(self, next) != next
    }

    /// A queued account waits for its signer before going to a ready
    /// queue; `true` when a signer must be asked (none works for it yet).
    pub(super) fn await_signer(&mut self) -> bool {
        debug_assert!(self.queued(), "awaits its signer while {self:?}");
        let asked = !self.signing();
        *self = Flow::AwaitingSigner;
        asked
    }

    /// Its signer is done (or there is none); `true` when the account was
    /// waiting for it and now moves on, queued.
    pub(super) fn signed(&mut self) -> bool {
        let (next, waited) = match *self {
            Flow::AwaitingSigner => (Flow::Queued, true),
            Flow::QueuedSigningAhead => (Flow::Queued, false),
            Flow::SigningAhead => (Flow::Idle, false),
            other => {
                debug_assert!(false, "signed while {other:?}");
                (other, false)
            }
        };
        *self = next;
        waited
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_queued_account_waits_for_its_signer_then_moves_on_queued() {
        let mut f = Flow::Idle;
        f.queue();
        assert!(f.await_signer(), "no signer yet: one is asked");
        assert_eq!(f, Flow::AwaitingSigner);
        assert!(f.queued() && f.signing());
        assert!(f.signed(), "it waited");
        assert_eq!(f, Flow::Queued);
        f.dequeue();
        assert_eq!(f, Flow::Idle);
    }

    #[test]
    fn signing_ahead_asks_one_signer_and_survives_queueing() {
        let mut f = Flow::Idle;
        assert!(f.sign_ahead());
        assert!(!f.sign_ahead(), "a signer works for it already");
        f.queue();
        assert_eq!(f, Flow::QueuedSigningAhead);
        assert!(!f.await_signer(), "the signer at work is waited for");
        assert!(f.signed());
        f.dequeue();
        assert!(f.sign_ahead());
        assert!(!f.signed(), "nobody waited");
        assert_eq!(f, Flow::Idle);
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "queued twice")]
    fn queueing_twice_is_a_bug() {
        let mut f = Flow::Queued;
        f.queue();
    }
}
