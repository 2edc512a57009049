//! What goes over the wire to CometBFT's JSON-RPC: batches of
//! `broadcast_tx_sync` calls carrying kvstore transactions, and what their
//! answers say.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::ops::Range;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use serde::Deserialize;

/// Calls per JSON-RPC batch CometBFT accepts by default
/// (`rpc.max_request_batch_size`).
pub const MAX_BATCH: usize = 10;

/// The kvstore transaction number `seq` of run `run`: `k<run>-<seq>=v`,
/// unique across runs so the mempool cache never refuses one as a repeat.
pub fn tx(run: u64, seq: u64) -> String {
    format!("k{run}-{seq}=v")
}

/// A JSON-RPC batch of `broadcast_tx_sync` calls, one per transaction of
/// `seqs` (`tx` in base64, the call's id its number).
pub fn batch_body(run: u64, seqs: Range<u64>) -> String {
    let mut body = String::with_capacity(96 * (seqs.end - seqs.start) as usize + 2);
    body.push('[');
    for seq in seqs {
        if body.len() > 1 {
            body.push(',');
        }
        // Writing into a String cannot fail.
        let _ = write!(
            body,
            r#"{{"jsonrpc":"2.0","id":{seq},"method":"broadcast_tx_sync","params":{{"tx":"{}"}}}}"#,
            STANDARD.encode(tx(run, seq))
        );
    }
    body.push(']');
    body
}

/// What the node said about a batch's transactions.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Verdicts {
    /// Admitted to the mempool (CheckTx code 0).
    pub accepted: u64,
    /// Refused, by reason (`mempool is full`, `code 2`, …).
    pub rejected: BTreeMap<String, u64>,
}

impl Verdicts {
    fn reject(&mut self, reason: String, n: u64) {
        *self.rejected.entry(reason).or_default() += n;
    }

    /// All `n` transactions refused for `reason` (the request failed).
    pub fn all_rejected(reason: String, n: u64) -> Self {
        let mut v = Self::default();
        v.reject(reason, n);
        v
    }
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Answers {
    Many(Vec<Answer>),
    One(Answer),
}

#[derive(Deserialize)]
struct Answer {
    result: Option<Broadcast>,
    error: Option<ErrorObject>,
}

#[derive(Deserialize)]
struct Broadcast {
    code: u32,
}

#[derive(Deserialize)]
struct ErrorObject {
    message: String,
    data: Option<String>,
}

/// Reads the node's answer to a batch of `sent` calls. A batch of one is
/// answered with a bare object, a refused batch with one error for all;
/// calls without an answer count as refused.
pub fn read_answers(body: &[u8], sent: u64) -> Verdicts {
    let answers = match serde_json::from_slice::<Answers>(body) {
        Ok(Answers::Many(a)) => a,
        Ok(Answers::One(a)) if sent == 1 => vec![a],
        Ok(Answers::One(a)) => {
            return Verdicts::all_rejected(reason(&a), sent);
        }
        Err(_) => return Verdicts::all_rejected("unreadable answer".into(), sent),
    };
    let mut v = Verdicts::default();
    for a in &answers {
        match &a.result {
            Some(Broadcast { code: 0 }) => v.accepted += 1,
            _ => v.reject(reason(a), 1),
        }
    }
    let answered = answers.len() as u64;
    if answered < sent {
        v.reject("no answer".into(), sent - answered);
    }
    v
}

/// A short reason for a refusal: `code N`, or the error's text up to its
/// first `:` (`mempool is full: number of txs …` → `mempool is full`).
fn reason(a: &Answer) -> String {
    match (&a.result, &a.error) {
        (Some(r), _) => format!("code {}", r.code),
        (None, Some(e)) => {
            let text = e.data.as_deref().unwrap_or(&e.message);
            text.split(':').next().unwrap_or(text).trim().to_string()
        }
        (None, None) => "no result".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_bodies_carry_base64_kvstore_txs_with_their_numbers_as_ids() {
        let body: serde_json::Value = serde_json::from_str(&batch_body(7, 41..44)).unwrap();
        let calls = body.as_array().unwrap();
        assert_eq!(calls.len(), 3);
        for (call, seq) in calls.iter().zip(41..) {
            assert_eq!(call["jsonrpc"], "2.0");
            assert_eq!(call["method"], "broadcast_tx_sync");
            assert_eq!(call["id"], seq);
            let tx = STANDARD
                .decode(call["params"]["tx"].as_str().unwrap())
                .unwrap();
            assert_eq!(String::from_utf8(tx).unwrap(), format!("k7-{seq}=v"));
        }
        assert_eq!(batch_body(1, 5..5), "[]");
    }

    #[test]
    fn answers_count_accepted_and_refused_by_reason() {
        let ok = r#"{"jsonrpc":"2.0","id":1,"result":{"code":0,"data":"","log":"","codespace":"","hash":"AB"}}"#;
        let bad = r#"{"jsonrpc":"2.0","id":2,"result":{"code":2,"data":"","log":"","codespace":"","hash":"CD"}}"#;
        let full = r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32603,"message":"Internal error","data":"mempool is full: number of txs 10 (max: 10), total txs bytes 90 (max: 1000)"}}"#;
        let batch = format!("[{ok},{full},{bad},{full},{ok}]");
        assert_eq!(
            read_answers(batch.as_bytes(), 6),
            Verdicts {
                accepted: 2,
                rejected: BTreeMap::from([
                    ("mempool is full".into(), 2),
                    ("code 2".into(), 1),
                    ("no answer".into(), 1)
                ]),
            }
        );
        assert_eq!(read_answers(ok.as_bytes(), 1).accepted, 1, "a bare answer");
        let refused = r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request","data":"batch request exceeds maximum (10) allowed number of requests"}}"#;
        assert_eq!(
            read_answers(refused.as_bytes(), 11),
            Verdicts::all_rejected(
                "batch request exceeds maximum (10) allowed number of requests".into(),
                11
            )
        );
        assert_eq!(
            read_answers(b"<html>", 3),
            Verdicts::all_rejected("unreadable answer".into(), 3)
        );
    }
}
