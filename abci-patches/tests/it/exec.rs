//! Execution of valid transactions through FinalizeBlock and Commit: exact
//! balance, nonce and fee accounting, contract deployment, storage, logs and
//! reverts.

use alloy_primitives::{Address, Bytes, B256, U256};

use crate::common::*;

/// Sum of the balances of `addresses` (all accounts the test touches).
fn total(node: &TestNode, addresses: &[Address]) -> U256 {
    addresses.iter().map(|a| node.balance(*a)).sum()
}

#[test]
fn eip1559_transfer_pays_value_and_gas_tip_to_recipient_base_fee_burnt() {
    let node = TestNode::new();
    let (a, b) = (key(1), key(2));
    let everyone = [a.address, b.address, fee_recipient()];
    let before = total(&node, &everyone);
    let tx = Tx::transfer(0, b.address, 12_345);
    let raw = tx.sign(&a);

    let response = node.block(std::slice::from_ref(&raw));
    let result = &response.tx_results[0];
    assert_eq!(result.code, 0, "{}", result.log);
    assert_eq!(result.gas_used, TRANSFER_GAS as i64);
    assert_eq!(attribute(result, "status").as_deref(), Some("1"));
    assert_eq!(
        attribute(result, "from"),
        Some(a.address.to_string()),
        "the sender is recovered"
    );

    // Effective price: min(max_fee 3, base 1 + tip 1) = 2 gwei.
    let gas = U256::from(TRANSFER_GAS);
    let paid = gas * U256::from(2 * GWEI) + U256::from(12_345);
    assert_eq!(node.balance(a.address), U256::from(FUNDED) - paid);
    assert_eq!(node.nonce(a.address), 1);
    assert_eq!(node.balance(b.address), U256::from(FUNDED + 12_345));
    assert_eq!(node.nonce(b.address), 0);
    assert_eq!(node.balance(fee_recipient()), gas * U256::from(GWEI));
    // The base fee left the system.
    assert_eq!(
        before - total(&node, &everyone),
        gas * U256::from(GWEI),
        "exactly the base fee is burnt"
    );
}

#[test]
fn legacy_transfer_pays_its_gas_price() {
    let node = TestNode::new();
    let (a, b) = (key(1), key(2));
    let mut tx = Tx::transfer(0, b.address, 1);
    tx.fee = Fee::Legacy {
        gas_price: 5 * GWEI,
    };
    let response = node.block(&[tx.sign(&a)]);
    assert_eq!(
        response.tx_results[0].code, 0,
        "{}",
        response.tx_results[0].log
    );
    let gas = U256::from(TRANSFER_GAS);
    assert_eq!(
        node.balance(a.address),
        U256::from(FUNDED) - gas * U256::from(5 * GWEI) - U256::from(1)
    );
    // Everything above the base fee is the tip.
    assert_eq!(node.balance(fee_recipient()), gas * U256::from(4 * GWEI));
}

#[test]
fn deployment_and_call_store_and_log() {
    let node = TestNode::new();
    let a = key(1);
    let deploy = Tx::deploy(0, store_init()).sign(&a);
    let response = node.block(std::slice::from_ref(&deploy));
    assert_eq!(
        response.tx_results[0].code, 0,
        "{}",
        response.tx_results[0].log
    );
    let contract = a.address.create(0);
    assert_eq!(
        node.node.code(&contract).unwrap(),
        Bytes::from(hex::decode(STORE_RUNTIME).unwrap())
    );
    let record = node.node.tx(&tx_hash(&deploy)).unwrap().expect("stored");
    assert!(record.receipt.status);
    assert_eq!(record.receipt.contract_address, Some(contract));
    assert_eq!(record.block_number, 1);
    assert_eq!(record.index, 0);

    let call = Tx::call(1, contract, word(0x2a)).sign(&a);
    let response = node.block(std::slice::from_ref(&call));
    let result = &response.tx_results[0];
    assert_eq!(result.code, 0, "{}", result.log);
    assert_eq!(attribute(result, "status").as_deref(), Some("1"));
    assert_eq!(
        node.node.storage(&contract, &U256::ZERO).unwrap(),
        U256::from(0x2a)
    );
    let record = node.node.tx(&tx_hash(&call)).unwrap().expect("stored");
    assert!(record.receipt.status);
    assert_eq!(record.receipt.gas_used, result.gas_used as u64);
    assert_eq!(record.receipt.contract_address, None);
    let logs = &record.receipt.logs;
    assert_eq!(logs.len(), 1);
    assert_eq!(logs[0].address, contract);
    assert_eq!(logs[0].data.topics(), &[a.address.into_word()]);
    assert_eq!(logs[0].data.data, word(0x2a));
    assert_eq!(node.nonce(a.address), 2);
}

#[test]
fn reverting_call_is_executed_with_status_0_and_pays_only_gas() {
    let node = TestNode::new();
    let a = key(1);
    node.block(&[
        Tx::deploy(0, store_init()).sign(&a),
        Tx::call(1, a.address.create(0), word(7)).sign(&a),
    ]);
    let contract = a.address.create(0);
    let balance = node.balance(a.address);
    let recipient = node.balance(fee_recipient());

    // No calldata: the contract reverts; the 1000 wei sent come back.
    let mut tx = Tx::call(2, contract, Bytes::new());
    tx.value = U256::from(1000);
    let raw = tx.sign(&a);
    let response = node.block(std::slice::from_ref(&raw));
    let result = &response.tx_results[0];
    assert_eq!(result.code, 0, "a revert is executed: {}", result.log);
    assert_eq!(attribute(result, "status").as_deref(), Some("0"));
    let gas = result.gas_used as u64;
    assert!(
        gas > TRANSFER_GAS && gas < tx.gas_limit,
        "REVERT returns the unused gas: {gas}"
    );
    let record = node.node.tx(&tx_hash(&raw)).unwrap().expect("stored");
    assert!(!record.receipt.status);
    assert!(record.receipt.logs.is_empty());

    assert_eq!(
        node.balance(a.address),
        balance - U256::from(gas) * U256::from(2 * GWEI),
        "only the fee is taken"
    );
    assert_eq!(node.nonce(a.address), 3);
    assert_eq!(
        node.balance(fee_recipient()) - recipient,
        U256::from(gas) * U256::from(GWEI)
    );
    assert_eq!(node.balance(contract), U256::ZERO);
    assert_eq!(
        node.node.storage(&contract, &U256::ZERO).unwrap(),
        U256::from(7),
        "storage unchanged"
    );
    let head = node.node.head().unwrap();
    assert_eq!(head.tx_hashes, vec![tx_hash(&raw)]);
    assert_ne!(head.app_hash, B256::ZERO);
}
