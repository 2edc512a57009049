//! The compact binary encoding of a [`TxRecord`], as the `ram-block-txs`
//! store layout keeps it (JSON is the layout without the patch).
//!
//! Layout, version 1: a version byte, then the fields of [`TxRecord`] in
//! declaration order. Integers are unsigned LEB128; addresses and hashes their
//! 20 or 32 raw bytes; byte strings a LEB128 length then the bytes; a boolean
//! one byte (0 or 1); an optional address a boolean then the address when
//! present; the logs a LEB128 count, then each log's address, a one-byte topic
//! count (at most 4), the topics and its data.
//!
//! Version 2 adds, after the contract address, the receipt's place in its
//! block ([`ReceiptPlace`]): a boolean, then when present the first log's
//! index and the block's time. Version 1 records read back without it.

use alloy_primitives::{Address, Bytes, Log, LogData, B256};

use crate::records::{ReceiptPlace, ReceiptRecord, TxRecord};

/// The layout version written first.
const VERSION: u8 = 2;

/// The version before [`ReceiptPlace`], still read.
const VERSION_1: u8 = 1;

/// Bytes that are not a [`TxRecord`] of this encoding.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CodecError {
    /// The bytes end before the record does.
    #[error("truncated record: {0} needs more bytes")]
    Truncated(&'static str),
    /// A layout version this code does not know.
    #[error("unknown record version {0}")]
    Version(u8),
    /// A field holds a value out of its range.
    #[error("invalid {0}")]
    Invalid(&'static str),
    /// Bytes left after the record.
    #[error("{0} trailing bytes after the record")]
    Trailing(usize),
}

/// Encodes `record`.
pub fn encode_tx(record: &TxRecord) -> Vec<u8> {
    let r = &record.receipt;
    let logs_len: usize = r.logs.iter().map(|l| 64 + l.data.data.len()).sum();
    let mut out = Vec::with_capacity(record.raw.len() + logs_len + 128);
    out.push(VERSION);
    put_bytes(&mut out, &record.raw);
    out.extend_from_slice(record.sender.as_slice());
    put_varint(&mut out, record.block_number.into());
    out.extend_from_slice(record.block_hash.as_slice());
    put_varint(&mut out, record.index.into());
    out.push(u8::from(r.status));
    put_varint(&mut out, r.gas_used.into());
    put_varint(&mut out, r.cumulative_gas_used.into());
    put_varint(&mut out, r.effective_gas_price);
    put_varint(&mut out, r.logs.len() as u128);
    for log in &r.logs {
        out.extend_from_slice(log.address.as_slice());
        let topics = log.data.topics();
        // At most 4 (LOG0 to LOG4), as the decoder requires.
        out.push(topics.len() as u8);
        for topic in topics {
            out.extend_from_slice(topic.as_slice());
        }
        put_bytes(&mut out, &log.data.data);
    }
    match r.contract_address {
        Some(address) => {
            out.push(1);
            out.extend_from_slice(address.as_slice());
        }
        None => out.push(0),
    }
    match record.place {
        Some(place) => {
            out.push(1);
            put_varint(&mut out, place.first_log_index.into());
            put_varint(&mut out, place.block_timestamp.into());
        }
        None => out.push(0),
    }
    out
}

/// Decodes what [`encode_tx`] wrote.
pub fn decode_tx(bytes: &[u8]) -> Result<TxRecord, CodecError> {
    let mut r = Reader(bytes);
    let version = r.byte("version")?;
    if version != VERSION && version != VERSION_1 {
        return Err(CodecError::Version(version));
    }
    let raw = r.bytes("raw")?;
    let sender = Address::from_slice(r.take(20, "sender")?);
    let block_number = r.u64("block number")?;
    let block_hash = B256::from_slice(r.take(32, "block hash")?);
    let index = r.u64("index")?;
    let status = r.bool("status")?;
    let gas_used = r.u64("gas used")?;
    let cumulative_gas_used = r.u64("cumulative gas used")?;
    let effective_gas_price = r.varint("effective gas price")?;
    let count = r.u64("log count")?;
    let mut logs = Vec::with_capacity(count.min(1024) as usize);
    for _ in 0..count {
        logs.push(r.log()?);
    }
    let contract_address = match r.bool("contract address flag")? {
        true => Some(Address::from_slice(r.take(20, "contract address")?)),
        false => None,
    };
    let place = match version != VERSION_1 && r.bool("place flag")? {
        true => Some(ReceiptPlace {
            first_log_index: r.u64("first log index")?,
            block_timestamp: r.u64("block time")?,
        }),
        false => None,
    };
    if !r.0.is_empty() {
        return Err(CodecError::Trailing(r.0.len()));
    }
    Ok(TxRecord {
        raw,
        sender,
        block_number,
        block_hash,
        index,
        receipt: ReceiptRecord {
            status,
            gas_used,
            cumulative_gas_used,
            effective_gas_price,
            logs,
            contract_address,
        },
        place,
    })
}

fn put_varint(out: &mut Vec<u8>, mut v: u128) {
    while v >= 0x80 {
        out.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    put_varint(out, bytes.len() as u128);
    out.extend_from_slice(bytes);
}

/// The unread rest of a record.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], CodecError> {
        if self.0.len() < n {
            return Err(CodecError::Truncated(what));
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    fn byte(&mut self, what: &'static str) -> Result<u8, CodecError> {
        Ok(self.take(1, what)?[0])
    }

    fn bool(&mut self, what: &'static str) -> Result<bool, CodecError> {
        match self.byte(what)? {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(CodecError::Invalid(what)),
        }
    }

    fn varint(&mut self, what: &'static str) -> Result<u128, CodecError> {
        let mut value = 0u128;
        let mut shift = 0;
        loop {
            let b = self.byte(what)?;
            let bits = u128::from(b & 0x7f);
            // The 19th byte holds the top 2 bits of a u128 and ends the number.
            if shift == 126 && (bits > 0b11 || b & 0x80 != 0) {
                return Err(CodecError::Invalid(what));
            }
            value |= bits << shift;
            if b & 0x80 == 0 {
                return Ok(value);
            }
            shift += 7;
        }
    }

    fn u64(&mut self, what: &'static str) -> Result<u64, CodecError> {
        u64::try_from(self.varint(what)?).map_err(|_| CodecError::Invalid(what))
    }

    fn bytes(&mut self, what: &'static str) -> Result<Bytes, CodecError> {
        let len = usize::try_from(self.varint(what)?).map_err(|_| CodecError::Invalid(what))?;
        Ok(Bytes::copy_from_slice(self.take(len, what)?))
    }

    fn log(&mut self) -> Result<Log, CodecError> {
        let address = Address::from_slice(self.take(20, "log address")?);
        let count = self.byte("log topic count")?;
        if count > 4 {
            return Err(CodecError::Invalid("log topic count"));
        }
        let topics = (0..count)
            .map(|_| self.take(32, "log topic").map(B256::from_slice))
            .collect::<Result<Vec<_>, _>>()?;
        let data = self.bytes("log data")?;
        Ok(Log {
            address,
            data: LogData::new_unchecked(topics, data),
        })
    }
}

#[cfg(test)]
mod tests {
    use alloy_consensus::{SignableTransaction, TxEip1559, TxEnvelope, TxLegacy};
    use alloy_eips::eip2718::Encodable2718;
    use alloy_primitives::{Signature, TxKind, U256};

    use super::*;

    fn signed_raw(legacy: bool) -> Bytes {
        let sig = Signature::new(U256::from(7), U256::from(9), true);
        let envelope: TxEnvelope = if legacy {
            TxLegacy {
                chain_id: Some(9000),
                gas_price: 1_000_000_000,
                gas_limit: 21_000,
                to: TxKind::Call(Address::repeat_byte(3)),
                value: U256::from(5),
                ..Default::default()
            }
            .into_signed(sig)
            .into()
        } else {
            TxEip1559 {
                chain_id: 9000,
                nonce: 300,
                gas_limit: 300_000,
                max_fee_per_gas: 3_000_000_000,
                max_priority_fee_per_gas: 1_000_000_000,
                to: TxKind::Create,
                input: vec![0x60; 200].into(),
                ..Default::default()
            }
            .into_signed(sig)
            .into()
        };
        envelope.encoded_2718().into()
    }

    fn record(legacy: bool) -> TxRecord {
        let log = |topics: usize, data: &[u8]| {
            Log::new(
                Address::repeat_byte(0x10 + topics as u8),
                (0..topics)
                    .map(|t| B256::repeat_byte(t as u8 + 1))
                    .collect(),
                Bytes::copy_from_slice(data),
            )
            .unwrap()
        };
        TxRecord {
            raw: signed_raw(legacy),
            sender: Address::repeat_byte(0x5e),
            block_number: u64::MAX - 1,
            block_hash: B256::repeat_byte(0xbb),
            index: 129,
            receipt: ReceiptRecord {
                status: legacy,
                gas_used: 21_000,
                cumulative_gas_used: 1 << 40,
                effective_gas_price: u128::MAX,
                logs: vec![log(0, b""), log(1, &[0; 300]), log(4, b"data")],
                contract_address: (!legacy).then(|| Address::repeat_byte(0xcc)),
            },
            place: (!legacy).then_some(ReceiptPlace {
                first_log_index: u64::MAX,
                block_timestamp: 1_764_000_000,
            }),
        }
    }

    #[test]
    fn round_trips_legacy_and_1559_with_logs_and_contract_address() {
        for legacy in [true, false] {
            let rec = record(legacy);
            let bytes = encode_tx(&rec);
            assert_eq!(decode_tx(&bytes).unwrap(), rec);
            let json = serde_json::to_vec(&rec).unwrap();
            assert!(
                bytes.len() * 2 < json.len(),
                "{} vs {}",
                bytes.len(),
                json.len()
            );
        }
        let mut bare = record(true);
        bare.receipt.logs.clear();
        bare.receipt.effective_gas_price = 0;
        bare.block_number = 0;
        assert_eq!(decode_tx(&encode_tx(&bare)).unwrap(), bare);
    }

    #[test]
    fn reads_a_version_1_record_without_its_place() {
        let rec = record(true);
        assert_eq!(rec.place, None);
        let mut bytes = encode_tx(&rec);
        // Version 1 ends at the contract address: no place flag.
        assert_eq!(bytes.pop(), Some(0));
        bytes[0] = VERSION_1;
        assert_eq!(decode_tx(&bytes).unwrap(), rec);
        bytes.push(0);
        assert_eq!(decode_tx(&bytes), Err(CodecError::Trailing(1)));
    }

    #[test]
    fn refuses_what_it_did_not_write() {
        let bytes = encode_tx(&record(false));
        for cut in [0, 1, 20, bytes.len() - 21, bytes.len() - 1] {
            assert!(
                matches!(decode_tx(&bytes[..cut]), Err(CodecError::Truncated(_))),
                "cut at {cut}"
            );
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert_eq!(decode_tx(&longer), Err(CodecError::Trailing(1)));
        let mut other = bytes.clone();
        other[0] = 3;
        assert_eq!(decode_tx(&other), Err(CodecError::Version(3)));
        let mut five = record(true);
        let topics = vec![B256::ZERO; 5];
        five.receipt.logs = vec![Log::new_unchecked(Address::ZERO, topics, Bytes::new())];
        assert_eq!(
            decode_tx(&encode_tx(&five)),
            Err(CodecError::Invalid("log topic count"))
        );
        // The contract address flag: before the address (20 bytes) and the
        // place's flag, the same offset with or without a place.
        let mut placeless = record(false);
        placeless.place = None;
        let at = encode_tx(&placeless).len() - 22;
        let mut flag = bytes;
        flag[at] = 2;
        assert_eq!(
            decode_tx(&flag),
            Err(CodecError::Invalid("contract address flag"))
        );
    }

    #[test]
    fn varints_cover_the_whole_range() {
        for v in [
            0,
            1,
            127,
            128,
            300,
            u64::MAX.into(),
            u128::MAX - 1,
            u128::MAX,
        ] {
            let mut out = Vec::new();
            put_varint(&mut out, v);
            let mut r = Reader(&out);
            assert_eq!(r.varint("v").unwrap(), v);
            assert!(r.0.is_empty());
        }
        // 19 bytes of continuation overflow u128.
        let too_long = [0xffu8; 19];
        assert!(Reader(&too_long).varint("v").is_err());
        let mut r = Reader(&[
            0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x02,
        ]);
        assert_eq!(r.u64("v"), Err(CodecError::Invalid("v")));
    }
}
