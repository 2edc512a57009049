//! Makes a large log out of a real one: the block section of the real log
//! (its lines from the first to the last block message) repeated, each copy
//! with heights and timestamps moved on, so every copy is new blocks.
//! Shared by the benchmark and the Redis-failure test.

use std::io::Write;

/// Returns (bytes written, lines written, heights per copy).
pub fn tile(seed: &str, copies: u64, out: &mut impl Write) -> std::io::Result<(u64, u64, u64)> {
    let lines: Vec<&str> = seed.lines().collect();
    let is_block = |l: &str| l.contains("height=") || l.contains("\"height\":");
    let first = lines.iter().position(|l| is_block(l)).unwrap_or(0);
    let last = lines
        .iter()
        .rposition(|l| is_block(l))
        .unwrap_or(lines.len().saturating_sub(1));
    let section = &lines[first..=last];
    let heights: Vec<u64> = section.iter().filter_map(|l| height_of(l)).collect();
    let span = heights.iter().max().copied().unwrap_or(0);
    // Seconds the section covers, plus one block's worth, per copy.
    let t0 = section.iter().find_map(|l| stamp_ms(l)).unwrap_or(0);
    let t1 = section.iter().rev().find_map(|l| stamp_ms(l)).unwrap_or(0);
    let dt_ms = (t1 - t0).max(0) + 300;
    let (mut bytes, mut n) = (0u64, 0u64);
    let mut buf = String::new();
    for k in 0..copies {
        for l in section {
            buf.clear();
            shift(l, k * span, i64::try_from(k).unwrap_or(0) * dt_ms, &mut buf);
            buf.push('\n');
            out.write_all(buf.as_bytes())?;
            bytes += buf.len() as u64;
            n += 1;
        }
    }
    Ok((bytes, n, span))
}

fn height_of(l: &str) -> Option<u64> {
    let p = l
        .find("height=")
        .map(|p| p + 7)
        .or_else(|| l.find("\"height\":").map(|p| p + 9))?;
    let d: String = l[p..].chars().take_while(char::is_ascii_digit).collect();
    d.parse().ok()
}

/// Unix ms of a line's stamp (plain: read as UTC; JSON: its `ts`).
fn stamp_ms(l: &str) -> Option<i64> {
    if l.as_bytes().get(1) == Some(&b'[') {
        let dt: jiff::civil::DateTime = l.get(2..25)?.replace('|', "T").parse().ok()?;
        return Some(
            dt.to_zoned(jiff::tz::TimeZone::UTC)
                .ok()?
                .timestamp()
                .as_millisecond(),
        );
    }
    let p = l.find("\"ts\":\"")? + 6;
    let end = l[p..].find('"')? + p;
    let ts: jiff::Timestamp = l[p..end].parse().ok()?;
    Some(ts.as_millisecond())
}

/// Copies `l` into `out` with every `height=N`/`"height":N` (and
/// `syncing_to_height=N`) raised by `dh` and the stamp moved by `dms`.
fn shift(l: &str, dh: u64, dms: i64, out: &mut String) {
    let mut rest = l;
    let mut stamp_done = false;
    if !stamp_done && l.as_bytes().get(1) == Some(&b'[') && l.len() > 25 {
        if let Some(ms) = stamp_ms(l) {
            let t = jiff::Timestamp::from_millisecond(ms + dms)
                .map(|t| t.to_zoned(jiff::tz::TimeZone::UTC));
            if let Ok(z) = t {
                out.push_str(&l[..2]);
                out.push_str(&z.strftime("%Y-%m-%d|%H:%M:%S%.3f").to_string());
                rest = &l[25..];
                stamp_done = true;
            }
        }
    }
    while !rest.is_empty() {
        let next_h = rest
            .find("height=")
            .map(|p| (p, 7))
            .into_iter()
            .chain(rest.find("\"height\":").map(|p| (p, 9)))
            .min();
        let next_ts = if stamp_done {
            None
        } else {
            rest.find("\"ts\":\"").map(|p| (p, 6))
        };
        match (next_h, next_ts) {
            (Some((p, k)), ts) if ts.is_none_or(|(q, _)| p < q) => {
                out.push_str(&rest[..p + k]);
                let r = &rest[p + k..];
                let d = r.chars().take_while(char::is_ascii_digit).count();
                match r[..d].parse::<u64>() {
                    Ok(h) => out.push_str(&(h + dh).to_string()),
                    Err(_) => out.push_str(&r[..d]),
                }
                rest = &r[d..];
            }
            (_, Some((q, k))) => {
                out.push_str(&rest[..q + k]);
                let r = &rest[q + k..];
                let end = r.find('"').unwrap_or(r.len());
                match r[..end]
                    .parse::<jiff::Timestamp>()
                    .ok()
                    .and_then(|t| t.checked_add(jiff::SignedDuration::from_millis(dms)).ok())
                {
                    Some(t) => out.push_str(&format!("{t:.9}")),
                    None => out.push_str(&r[..end]),
                }
                rest = &r[end..];
                stamp_done = true;
            }
            _ => {
                out.push_str(rest);
                rest = "";
            }
        }
    }
}
