//! The web3 parameter fuzz body (`abcid::rpc::fuzz::one_request`, the body
//! of `abci-patches/fuzz`'s `web3_params` target), driven by a seeded
//! generator so that it runs in a plain `cargo test`: valid parameters of
//! every method, mutated (bytes flipped, cut short, values swapped for huge
//! numbers, long lists, deep nesting and wrong types), must each get a
//! well-formed answer.

use std::time::Duration;

use abcid::rpc::fuzz::{one_request, METHODS};
use abcid::rpc::RpcConfig;
use serde_json::{json, Value};

use crate::common::*;

/// How many requests one run sends.
const CASES: usize = 3_000;

/// xorshift64*: a small seeded generator (no dependency, same cases on every run).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Valid-looking parameters to mutate.
fn seeds() -> Vec<Value> {
    let a = key(1).address;
    vec![
        json!([a, "latest"]),
        json!([a, "0x0", "pending"]),
        json!([{"from": a, "to": a, "value": "0x1", "data": "0x00"}, "latest"]),
        json!([{"to": a, "gas": "0xffffffffffffffff", "input": "0x5b600056"}]),
        json!(["0x400", "latest", [10, 50, 90]]),
        json!(["0x1", false]),
        json!(["latest", true]),
        json!([format!("{:#x}", alloy_primitives::B256::repeat_byte(7))]),
        json!([{"fromBlock": "0x0", "toBlock": "latest", "address": [a], "topics": [null, []]}]),
        json!(["0x1", "0x0"]),
        json!(["0xdeadbeef"]),
        json!([]),
    ]
}

/// One of the values a mutation puts in place of another.
fn odd_value(rng: &mut Rng) -> Value {
    match rng.below(10) {
        0 => json!(u64::MAX),
        1 => json!(-1),
        2 => json!(1e308),
        3 => json!("0x".to_string() + &"f".repeat(rng.below(200))),
        4 => Value::Array((0..rng.below(5_000)).map(|i| json!(i)).collect()),
        5 => json!(null),
        6 => json!({"blockHash": "0x00", "fromBlock": "0x1"}),
        7 => (0..rng.below(64)).fold(json!(0), |v, _| json!([v])),
        8 => json!("pending"),
        _ => json!(true),
    }
}

/// Replaces a random node of `value` by an odd one.
fn mutate_value(value: &mut Value, rng: &mut Rng) {
    match value {
        Value::Array(items) if !items.is_empty() && rng.below(3) > 0 => {
            let i = rng.below(items.len());
            mutate_value(&mut items[i], rng);
        }
        Value::Object(map) if !map.is_empty() && rng.below(3) > 0 => {
            let keys: Vec<String> = map.keys().cloned().collect();
            let key = &keys[rng.below(keys.len())];
            if let Some(v) = map.get_mut(key) {
                mutate_value(v, rng);
            }
        }
        other => *other = odd_value(rng),
    }
}

/// The bytes of one case: a method byte, then parameters mutated as JSON
/// or as bytes.
fn case(rng: &mut Rng, seeds: &[Value]) -> Vec<u8> {
    let mut params = seeds[rng.below(seeds.len())].clone();
    for _ in 0..=rng.below(3) {
        mutate_value(&mut params, rng);
    }
    let mut bytes = vec![rng.below(METHODS.len()) as u8];
    bytes.extend(params.to_string().into_bytes());
    match rng.below(4) {
        0 => {
            let cut = rng.below(bytes.len());
            bytes.truncate(cut.max(1));
        }
        1 => {
            for _ in 0..=rng.below(4) {
                let i = 1 + rng.below(bytes.len().max(2) - 1);
                if let Some(b) = bytes.get_mut(i) {
                    *b ^= 1 << rng.below(8);
                }
            }
        }
        _ => {}
    }
    bytes
}

/// Inputs the fuzz target once failed on, each with why.
const FOUND: &[(&str, &[u8])] = &[(
    // eth_newFilter with a string carrying "panicked": an invalid-params
    // answer quoting it was once taken for a panic (CI, stop 32).
    "an error quoting the request",
    b"d[\"eK\xad\xad\xad\xad\xad\xad\xad\xad\xab[[?@[[[[[[[[[[[[panicked[[1\"]",
)];

#[tokio::test]
async fn inputs_the_fuzzer_found_get_a_well_formed_answer() {
    let node = TestNode::new();
    let rpc = abcid::rpc::module(node.node.clone(), &closed_port_url(), RpcConfig::default())
        .expect("module");
    for (why, data) in FOUND {
        assert_eq!(one_request(&rpc, data).await, Ok(()), "{why}");
    }
}

#[tokio::test]
async fn any_parameters_get_a_well_formed_answer() {
    let node = TestNode::new();
    node.block(&[Tx::transfer(0, key(2).address, 1).sign(&key(1))]);
    let config = RpcConfig {
        gas_cap: 1_000_000,
        evm_timeout: Duration::from_secs(1),
        ..RpcConfig::default()
    };
    let rpc = abcid::rpc::module(node.node.clone(), &closed_port_url(), config).expect("module");
    let seeds = seeds();
    let mut rng = Rng(0x5eed_f00d_cafe_babe);
    let mut failures = Vec::new();
    for n in 0..CASES {
        let data = case(&mut rng, &seeds);
        if let Err(e) = one_request(&rpc, &data).await {
            failures.push(format!(
                "case {n} ({}): {e}",
                String::from_utf8_lossy(&data)
            ));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}
