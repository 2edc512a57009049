//! Read-only calls (`eth_call`, `eth_estimateGas`, access lists): one
//! transaction run over a committed state and thrown away, within a gas cap
//! and a deadline.
//!
//! The deadline is checked by an inspector every [`CHECK_EVERY`]
//! instructions; past it every frame halts at its next instruction, so a
//! loop that would burn a 50 M-gas budget for seconds stops within a few
//! thousand instructions of the deadline.

use std::time::Instant;

use alloy_eips::eip2930::AccessList;
use alloy_primitives::{Address, Bytes, B256, U256};
use revm::{
    context::{result::ExecutionResult, TxEnv},
    interpreter::{interpreter_types::InterpreterTypes, InstructionResult, Interpreter},
    Context, InspectEvm, Inspector, MainBuilder, MainContext,
};

use crate::exec;
use crate::genesis::Genesis;
use crate::records::BlockRecord;
use crate::state::{BlockOverlay, StateRead};

/// How many instructions run between two looks at the clock.
pub const CHECK_EVERY: u32 = 1024;

/// A read-only call (eth_call / eth_estimateGas).
#[derive(Debug, Clone, Default)]
pub struct CallRequest {
    /// Caller (zero address when absent).
    pub from: Option<Address>,
    /// Callee; `None` deploys.
    pub to: Option<Address>,
    /// Gas limit (the cap when absent).
    pub gas: Option<u64>,
    /// Gas price (zero when absent).
    pub gas_price: Option<u128>,
    /// Value.
    pub value: Option<U256>,
    /// Calldata.
    pub input: Bytes,
    /// Addresses and slots warmed before execution (EIP-2930).
    pub access_list: AccessList,
}

/// The bounds of one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallLimits {
    /// Most gas a call may use, whatever it asks for (geth's
    /// `--rpc.gascap`); the chain's per-transaction cap applies too.
    pub gas_cap: u64,
    /// When execution is aborted (`None`: never).
    pub deadline: Option<Instant>,
}

impl Default for CallLimits {
    /// geth's default gas cap, no deadline.
    fn default() -> Self {
        Self {
            gas_cap: 50_000_000,
            deadline: None,
        }
    }
}

/// The outcome of a read-only call.
#[derive(Debug, Clone)]
pub struct CallOutcome {
    /// Gas used.
    pub gas_used: u64,
    /// `Ok(output)` on success, `Err(revert data or halt reason)` otherwise.
    pub output: Result<Bytes, CallFailure>,
    /// Every account the call loaded, with the storage slots it read or
    /// wrote, in address and slot order.
    pub touched: Vec<(Address, Vec<B256>)>,
}

/// Why a call did not succeed.
#[derive(Debug, Clone)]
pub enum CallFailure {
    /// The callee reverted with this data.
    Revert(Bytes),
    /// Execution halted (out of gas, invalid opcode…).
    Halt(String),
    /// The deadline passed before execution ended.
    TimedOut,
}

/// The inspector that halts every frame once the deadline has passed.
struct Deadline {
    at: Option<Instant>,
    steps: u32,
    expired: bool,
}

impl<CTX, INTR: InterpreterTypes> Inspector<CTX, INTR> for Deadline {
    fn step(&mut self, interp: &mut Interpreter<INTR>, _context: &mut CTX) {
        if !self.expired {
            let Some(at) = self.at else { return };
            self.steps = self.steps.wrapping_add(1);
            if !self.steps.is_multiple_of(CHECK_EVERY) || Instant::now() < at {
                return;
            }
            self.expired = true;
        }
        interp.halt(InstructionResult::OutOfGas);
    }
}

/// Runs `request` over `state`, the state after `head`, within `limits`.
/// `Err` is revm's refusal of the transaction itself (a message).
pub fn execute(
    state: &impl StateRead,
    genesis: &Genesis,
    head: &BlockRecord,
    request: &CallRequest,
    limits: CallLimits,
) -> Result<CallOutcome, String> {
    let mut cfg = exec::cfg_env(genesis);
    cfg.disable_nonce_check = true;
    let mut block = exec::block_env(genesis, head.number + 1, head.timestamp, head.hash);
    // eth_call semantics: an unpriced call pays nothing.
    block.basefee = 0;
    let from = request.from.unwrap_or_default();
    let cap = genesis.max_tx_gas.min(limits.gas_cap);
    let tx = TxEnv {
        caller: from,
        gas_limit: request.gas.unwrap_or(cap).min(cap),
        gas_price: request.gas_price.unwrap_or(0),
        kind: request.to.map_or(
            alloy_primitives::TxKind::Create,
            alloy_primitives::TxKind::Call,
        ),
        value: request.value.unwrap_or_default(),
        data: request.input.clone(),
        nonce: state.account(&from).map_or(0, |a| a.nonce),
        chain_id: Some(genesis.chain_id),
        // An access list is an EIP-2930 transaction's.
        tx_type: if request.access_list.is_empty() { 0 } else { 1 },
        access_list: request.access_list.clone(),
        ..Default::default()
    };
    let deadline = Deadline {
        at: limits.deadline,
        steps: 0,
        expired: false,
    };
    let mut evm = Context::mainnet()
        .with_db(BlockOverlay::new(state))
        .with_cfg(cfg)
        .with_block(block)
        .build_mainnet_with_inspector(deadline);
    let done = evm.inspect_tx(tx).map_err(|e| e.to_string())?;
    let timed_out = evm.inspector.expired;
    let gas_used = done.result.tx_gas_used();
    let touched = touched(&done.state);
    let output = match done.result {
        _ if timed_out => Err(CallFailure::TimedOut),
        ExecutionResult::Success { output, .. } => Ok(output.into_data()),
        ExecutionResult::Revert { output, .. } => Err(CallFailure::Revert(output)),
        ExecutionResult::Halt { reason, .. } => Err(CallFailure::Halt(format!("{reason:?}"))),
    };
    Ok(CallOutcome {
        gas_used,
        output,
        touched,
    })
}

/// The accounts and slots a call loaded, in order.
fn touched(
    state: &revm::primitives::AddressMap<revm::state::Account>,
) -> Vec<(Address, Vec<B256>)> {
    let mut touched: Vec<(Address, Vec<B256>)> = state
        .iter()
        .map(|(address, account)| {
            let mut slots: Vec<B256> = account.storage.keys().map(|k| B256::from(*k)).collect();
            slots.sort_unstable();
            (*address, slots)
        })
        .collect();
    touched.sort_unstable_by_key(|(address, _)| *address);
    touched
}
