//! The server's merge operator, `sett-server.redis_string`: INCR and its
//! family and APPEND are one merge each, without a transaction, so that
//! concurrent writers to one key neither wait on nor retry against each
//! other.
//!
//! Values are plain Redis strings (what SET stores). An operand is tagged:
//! `i` + an i64 delta (8 bytes little-endian), `a` + the largest length the
//! result may have (u64 little-endian) + the bytes to append, or `l` + a
//! list of such operands, each behind its u32 little-endian length (what
//! [`MergeOperator::partial_merge`] makes of a run). The fold is total: an
//! operand that cannot apply (a delta onto a value that is not an integer,
//! or that would overflow; an append past its length) leaves the value as
//! it was, so that no stored key ever becomes unreadable. The command that
//! wrote the operand tells its client so, from the value just below its
//! version ([`sett::Db::merge_and_read`]).

use super::parse_i64;
use sett::MergeOperator;

/// The name the manifest records.
pub const NAME: &str = "sett-server.redis_string";

const INCR: u8 = b'i';
const APPEND: u8 = b'a';
const LIST: u8 = b'l';

/// The operand of INCRBY `by`.
pub fn incr(by: i64) -> Vec<u8> {
    let mut op = vec![INCR];
    op.extend_from_slice(&by.to_le_bytes());
    op
}

/// The operand of APPEND `add`, refused by the fold past `max` bytes.
pub fn append(add: &[u8], max: usize) -> Vec<u8> {
    let mut op = Vec::with_capacity(add.len() + 9);
    op.push(APPEND);
    op.extend_from_slice(&(max as u64).to_le_bytes());
    op.extend_from_slice(add);
    op
}

/// `by` added to `value` (absent: 0), as INCRBY answers it: `None` when
/// the value is not an integer or the sum overflows.
pub fn incremented(value: Option<&[u8]>, by: i64) -> Option<i64> {
    let n = match value {
        None => 0,
        Some(v) => parse_i64(v)?,
    };
    n.checked_add(by)
}

/// Applies one operand (`LIST` ones item by item) to `value`.
fn apply(value: &mut Option<Vec<u8>>, op: &[u8]) -> Result<(), String> {
    let Some((&tag, body)) = op.split_first() else {
        return Err("an empty operand".into());
    };
    match tag {
        INCR => {
            let by: [u8; 8] = body
                .try_into()
                .map_err(|_| format!("an increment operand of {} bytes", op.len()))?;
            if let Some(n) = incremented(value.as_deref(), i64::from_le_bytes(by)) {
                *value = Some(n.to_string().into_bytes());
            }
        }
        APPEND => {
            if body.len() < 8 {
                return Err(format!("an append operand of {} bytes", op.len()));
            }
            let (max, add) = body.split_at(8);
            let mut max_bytes = [0; 8];
            max_bytes.copy_from_slice(max);
            let max = u64::from_le_bytes(max_bytes);
            let len = value.as_ref().map_or(0, Vec::len);
            if (len + add.len()) as u64 <= max {
                value.get_or_insert_with(Vec::new).extend_from_slice(add);
            }
        }
        LIST => {
            let mut rest = body;
            while !rest.is_empty() {
                let (len, tail) = rest
                    .split_first_chunk::<4>()
                    .ok_or("a list operand cut short")?;
                let len = u32::from_le_bytes(*len) as usize;
                if tail.len() < len {
                    return Err("a list operand cut short".into());
                }
                apply(value, &tail[..len])?;
                rest = &tail[len..];
            }
        }
        t => return Err(format!("an operand of unknown kind {t}")),
    }
    Ok(())
}

/// INCR, DECR, INCRBY, DECRBY and APPEND as merges (see the module docs).
#[derive(Debug, Clone, Copy, Default)]
pub struct RedisString;

impl MergeOperator for RedisString {
    fn name(&self) -> &str {
        NAME
    }

    fn merge(
        &self,
        _key: &[u8],
        existing: Option<&[u8]>,
        operands: &[&[u8]],
    ) -> Result<Vec<u8>, String> {
        let mut value = existing.map(<[u8]>::to_vec);
        for op in operands {
            apply(&mut value, op)?;
        }
        // Over no base, an append the fold refused leaves "", as the key
        // must have a value; APPEND refuses an addition past the limit on
        // its own before writing, so only a base that vanished meanwhile
        // (deleted or expired) gets here.
        Ok(value.unwrap_or_default())
    }

    fn partial_merge(&self, _key: &[u8], operands: &[&[u8]]) -> Result<Vec<u8>, String> {
        let mut out = vec![LIST];
        for op in operands {
            // An operand is at most max_value_size (below 4 GiB) bytes, and a
            // list of them is one too.
            let len = u32::try_from(op.len()).map_err(|_| "an operand over 4 GiB".to_string())?;
            out.extend_from_slice(&len.to_le_bytes());
            out.extend_from_slice(op);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fold(base: Option<&str>, ops: &[Vec<u8>]) -> String {
        let ops: Vec<&[u8]> = ops.iter().map(Vec::as_slice).collect();
        let v = RedisString
            .merge(b"k", base.map(str::as_bytes), &ops)
            .expect("fold");
        String::from_utf8(v).expect("utf-8")
    }

    #[test]
    fn increments_add_and_one_that_cannot_apply_leaves_the_value() {
        assert_eq!(fold(None, &[incr(5), incr(-2)]), "3");
        assert_eq!(fold(Some("10"), &[incr(1)]), "11");
        assert_eq!(fold(Some("abc"), &[incr(1)]), "abc");
        assert_eq!(
            fold(Some(&i64::MAX.to_string()), &[incr(1)]),
            i64::MAX.to_string()
        );
        assert_eq!(
            fold(Some("abc"), &[incr(1), append(b"1", 100), incr(2)]),
            "abc1"
        );
    }

    #[test]
    fn appends_concatenate_up_to_their_limit() {
        assert_eq!(
            fold(Some("ab"), &[append(b"cd", 10), append(b"e", 10)]),
            "abcde"
        );
        assert_eq!(
            fold(Some("ab"), &[append(b"cd", 3), append(b"e", 3)]),
            "abe"
        );
        assert_eq!(fold(Some("7"), &[append(b"0", 10), incr(1)]), "71");
    }

    #[test]
    fn a_partial_merge_means_the_same_over_any_base() {
        let ops = [
            incr(1),
            append(b"x", 10),
            incr(2),
            append(b"yy", 4),
            incr(3),
        ];
        for base in [
            None,
            Some("5"),
            Some("abc"),
            Some(""),
            Some("9223372036854775806"),
        ] {
            let whole = fold(base, &ops);
            for split in 1..ops.len() {
                let (r1, r2) = ops.split_at(split);
                let r1: Vec<&[u8]> = r1.iter().map(Vec::as_slice).collect();
                let run = RedisString.partial_merge(b"k", &r1).expect("partial");
                let mut two = vec![run];
                two.extend(r2.iter().cloned());
                assert_eq!(fold(base, &two), whole, "base {base:?}, split {split}");
            }
        }
    }

    #[test]
    fn a_malformed_operand_is_an_error_not_a_value() {
        for bad in [&b""[..], b"i123", b"a12", b"l\x05\0\0\0i", b"z"] {
            assert!(
                RedisString.merge(b"k", Some(b"1"), &[bad]).is_err(),
                "{bad:?}"
            );
        }
    }
}
